// One transformer layer (hidden 4096, bf16, 256 and 2048 tokens) on one GPU, as CSV:
//   layer rows: the hand-written layer (CUDA kernels + cuBLASLt) eagerly and as one replayed graph;
//   attention rows: the layer's causal attention on tensor cores and through the FMA kernel;
//   matmul rows: each of the layer's matmul shapes through CudaKernelBackend::Matmul (cuBLASLt)
//   and through plain cuBLAS (cublasGemmEx, default algorithm), with TFLOP/s.
// Times are medians of cudaEvent intervals (bench/layer_bench.h). A further layer column (the
// executor with graph replay) goes into LayerVariants().
//
//   layer_bench [--tokens 256,2048] [--samples 30] [--csv FILE]
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "internal/cuda_ops.h"
#include "layer_bench.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/support/status_macros.h"

namespace vdev::bench {
namespace {

struct Options {
  std::vector<int64_t> tokens = {256, 2048};
  int samples = 30;
  std::string csv;
};

class Csv {
 public:
  explicit Csv(const std::string& path) : file_(path.empty() ? nullptr : std::fopen(path.c_str(), "w")) {
    Row("section,tokens,name,m,n,k,variant,median_us,tflops");
  }
  ~Csv() {
    if (file_ != nullptr) std::fclose(file_);
  }
  void Row(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (file_ != nullptr) std::fprintf(file_, "%s\n", line.c_str());
  }

 private:
  std::FILE* file_;
};

// A layer column: a name and how to time one layer of `tokens` tokens (median microseconds).
struct LayerVariant {
  std::string name;
  std::function<absl::StatusOr<double>(HandLayer& layer, cudaStream_t stream, int samples)> time;
};

std::vector<LayerVariant> LayerVariants() {
  return {
      {"hand_eager", [](HandLayer& layer, cudaStream_t stream,
                        int samples) { return MedianMicros(stream, samples, [&] { return layer.Enqueue(stream); }); }},
      {"hand_graph",
       [](HandLayer& layer, cudaStream_t stream, int samples) -> absl::StatusOr<double> {
         VDEV_RETURN_IF_ERROR(layer.Capture(stream));
         return MedianMicros(stream, samples, [&] { return layer.Replay(stream); });
       }},
  };
}

// The layer's program without its last binding's copy to the host (the hand-written layer leaves
// its result on the GPU too): `%out: T = device_copy(%x, src=…, dst=cpu:0)` becomes `%out: T = %x`.
std::string LayerOnGpu(int64_t tokens) {
  std::string text = LayerProgramText(tokens);
  const size_t copy = text.rfind("device_copy(");
  if (copy == std::string::npos) return text;
  const size_t value = copy + std::string("device_copy(").size();
  const size_t comma = text.find(',', value);
  const size_t end = text.find(')', comma);
  return text.substr(0, copy) + text.substr(value, comma - value) + text.substr(end + 1);
}

// The executor's column: the same layer loaded by the executor (CUDA backend, one worker), its
// inputs set once, then @main replayed as the CUDA graph the executor captured.
absl::StatusOr<double> ExecutorLayerMicros(int64_t tokens, int samples) {
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(LayerOnGpu(tokens), "layer"));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateCudaBackend(nullptr, 1));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> inputs, ProgramInputs(program, "random:1", 0));
  VDEV_RETURN_IF_ERROR(executor->SetInputs(inputs));
  VDEV_RETURN_IF_ERROR(executor->Enqueue());  // eager: plans are built
  VDEV_RETURN_IF_ERROR(executor->Enqueue());  // captured, then replayed
  VDEV_RETURN_IF_ERROR(backend->Synchronize());
  if (!executor->replaying()) return absl::InternalError("the executor did not capture the layer as a graph");
  VDEV_ASSIGN_OR_RETURN(KernelContext * context, backend->Context(VirtualDevice::ForDevice(DeviceType::kCUDA, 0)));
  cudaStream_t stream = static_cast<cudaStream_t>(context->stream);
  VDEV_ASSIGN_OR_RETURN(double us, MedianMicros(stream, samples, [&] { return executor->Enqueue(); }));
  VDEV_RETURN_IF_ERROR(backend->Synchronize());
  return us;
}

absl::Status Blas(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? absl::OkStatus() : absl::InternalError(absl::StrCat("cuBLAS status ", s));
}

// One matmul shape: [m,k] @ [k,n] bf16, timed as 10 back-to-back calls per sample.
absl::Status MatmulRows(Csv& csv, CudaKernelBackend& backend, cublasHandle_t blas, cudaStream_t stream,
                        const Options& o, const std::string& name, int64_t m, int64_t n, int64_t k) {
  constexpr int kCalls = 10;
  void *a = nullptr, *b = nullptr, *c = nullptr;
  if (cudaMalloc(&a, m * k * 2) != cudaSuccess || cudaMalloc(&b, k * n * 2) != cudaSuccess ||
      cudaMalloc(&c, m * n * 2) != cudaSuccess)
    return absl::ResourceExhaustedError("cudaMalloc");
  cudaMemset(a, 0x3c, m * k * 2);  // bf16 0x3c3c ~ 0.0115: finite, non-zero
  cudaMemset(b, 0x3c, k * n * 2);
  cudaDeviceSynchronize();  // the legacy stream's memsets before the non-blocking stream's matmuls
  const float alpha = 1.0f, beta = 0.0f;
  auto ours = [&]() -> absl::Status {
    for (int i = 0; i < kCalls; ++i)
      VDEV_RETURN_IF_ERROR(backend.Matmul(ir::DType::kBF16, a, b, c, 1, m, n, k, stream));
    return absl::OkStatus();
  };
  auto peer = [&]() -> absl::Status {
    for (int i = 0; i < kCalls; ++i) {
      VDEV_RETURN_IF_ERROR(Blas(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                             static_cast<int>(k), &alpha, b, CUDA_R_16BF, static_cast<int>(n), a,
                                             CUDA_R_16BF, static_cast<int>(k), &beta, c, CUDA_R_16BF,
                                             static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)));
    }
    return absl::OkStatus();
  };
  const double flops = 2.0 * m * n * k;
  for (auto [variant, run] :
       {std::pair<const char*, std::function<absl::Status()>>{"vdev_cublaslt", ours}, {"cublas_gemmex", peer}}) {
    VDEV_ASSIGN_OR_RETURN(double us, MedianMicros(stream, o.samples, run));
    us /= kCalls;
    csv.Row(absl::StrCat("matmul,", m, ",", name, ",", m, ",", n, ",", k, ",", variant, ",", us, ",",
                         flops / (us * 1e-6) / 1e12));
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return absl::OkStatus();
}

// The layer's attention ([tokens, 3, 32, 128] bf16, causal) on tensor cores and, as its peer,
// through the FMA kernel that f32 and other head sizes take.
absl::Status AttentionRows(Csv& csv, cudaStream_t stream, const Options& o, int64_t tokens) {
  const TransformerShape s = LayerShape(tokens);
  const int64_t d = s.hidden / s.heads;
  void *qkv = nullptr, *out = nullptr;
  if (cudaMalloc(&qkv, tokens * 3 * s.hidden * 2) != cudaSuccess ||
      cudaMalloc(&out, tokens * s.hidden * 2) != cudaSuccess)
    return absl::ResourceExhaustedError("cudaMalloc");
  cudaMemset(qkv, 0x3c, tokens * 3 * s.hidden * 2);
  cudaDeviceSynchronize();
  const double flops = 2.0 * 2.0 * tokens * tokens * d * s.heads / 2;  // QK^T and PV, causal half
  for (bool tensor_cores : {true, false}) {
    VDEV_ASSIGN_OR_RETURN(double us, MedianMicros(stream, o.samples, [&]() -> absl::Status {
                            if (cuda_ops::LaunchAttention(cuda_ops::Elem::kBF16, qkv, out, tokens, s.heads, d,
                                                          /*causal=*/true, stream, tensor_cores) != cudaSuccess)
                              return absl::InternalError("attention launch");
                            return absl::OkStatus();
                          }));
    csv.Row(absl::StrCat("attention,", tokens, ",causal,", tokens, ",", s.heads, ",", d, ",",
                         tensor_cores ? "tensor_cores" : "fma", ",", us, ",", flops / (us * 1e-6) / 1e12));
  }
  cudaFree(qkv);
  cudaFree(out);
  return absl::OkStatus();
}

absl::Status Main(const Options& o) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernelBackend> backend, CudaKernelBackend::Create(0));
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    return absl::InternalError("cudaStreamCreate");
  cublasHandle_t blas = nullptr;
  VDEV_RETURN_IF_ERROR(Blas(cublasCreate(&blas)));
  VDEV_RETURN_IF_ERROR(Blas(cublasSetStream(blas, stream)));
  Csv csv(o.csv);
  for (int64_t tokens : o.tokens) {
    {
      VDEV_ASSIGN_OR_RETURN(std::unique_ptr<HandLayer> layer, HandLayer::Create(backend.get(), tokens));
      for (const LayerVariant& v : LayerVariants()) {
        VDEV_ASSIGN_OR_RETURN(double us, v.time(*layer, stream, o.samples));
        csv.Row(absl::StrCat("layer,", tokens, ",layer,,,,", v.name, ",", us, ","));
      }
    }
    VDEV_ASSIGN_OR_RETURN(double executor_us, ExecutorLayerMicros(tokens, o.samples));
    csv.Row(absl::StrCat("layer,", tokens, ",layer,,,,executor_graph,", executor_us, ","));
    VDEV_RETURN_IF_ERROR(AttentionRows(csv, stream, o, tokens));
    const TransformerShape s = LayerShape(tokens);
    const int64_t h = s.hidden, f = s.ffn;
    VDEV_RETURN_IF_ERROR(MatmulRows(csv, *backend, blas, stream, o, "qkv", tokens, 3 * h, h));
    VDEV_RETURN_IF_ERROR(MatmulRows(csv, *backend, blas, stream, o, "out_proj", tokens, h, h));
    VDEV_RETURN_IF_ERROR(MatmulRows(csv, *backend, blas, stream, o, "gate_up", tokens, 2 * f, h));
    VDEV_RETURN_IF_ERROR(MatmulRows(csv, *backend, blas, stream, o, "down", tokens, h, f));
  }
  cublasDestroy(blas);
  cudaStreamDestroy(stream);
  return backend->CheckErrors();
}

}  // namespace
}  // namespace vdev::bench

int main(int argc, char** argv) {
  vdev::bench::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--tokens") {
      o.tokens.clear();
      for (absl::string_view t : absl::StrSplit(value, ',')) {
        int64_t n = 0;
        ok = ok && absl::SimpleAtoi(t, &n) && n > 0;
        o.tokens.push_back(n);
      }
    } else if (flag == "--samples") {
      ok = absl::SimpleAtoi(value, &o.samples) && o.samples > 0;
    } else if (flag == "--csv") {
      o.csv = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "usage: layer_bench [--tokens 256,2048] [--samples N] [--csv FILE]\n");
      return 2;
    }
  }
  absl::Status s = vdev::bench::Main(o);
  if (!s.ok()) {
    std::fprintf(stderr, "layer_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
