// The hand-written transformer layer, the event timer and the layer's program text of
// bench/layer_bench.h.
#include <algorithm>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "internal/cuda_ops.h"
#include "layer_bench.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::bench {
namespace {

absl::Status Cuda(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

// A bf16 device buffer of `count` elements filled with values uniform in [-scale, scale]: a 4M
// element random block repeated (the benchmark measures speed, not numerics).
absl::StatusOr<void*> RandomBf16(int64_t count, float scale, uint32_t seed) {
  constexpr int64_t kBlock = int64_t{1} << 22;
  std::vector<uint16_t> block(kBlock);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (uint16_t& x : block) x = FloatToBF16(dist(gen));
  void* p = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(&p, count * 2), "cudaMalloc"));
  for (int64_t at = 0; at < count; at += kBlock) {
    const int64_t n = std::min(kBlock, count - at);
    VDEV_RETURN_IF_ERROR(
        Cuda(cudaMemcpy(static_cast<uint16_t*>(p) + at, block.data(), n * 2, cudaMemcpyHostToDevice), "fill"));
  }
  return p;
}

}  // namespace

TransformerShape LayerShape(int64_t tokens) {
  TransformerShape s;
  s.layers = 1;
  s.tokens = tokens;
  s.tensor_parallel = 1;
  s.dtype = "bf16";
  return s;
}

std::string LayerProgramText(int64_t tokens) { return TransformerProgram(LayerShape(tokens)); }

absl::StatusOr<double> MedianMicros(cudaStream_t stream, int samples, const std::function<absl::Status()>& enqueue) {
  cudaEvent_t start = nullptr, stop = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaEventCreate(&start), "cudaEventCreate"));
  VDEV_RETURN_IF_ERROR(Cuda(cudaEventCreate(&stop), "cudaEventCreate"));
  std::vector<double> micros;
  absl::Status status = enqueue();  // warm-up
  for (int i = 0; status.ok() && i < samples; ++i) {
    status = Cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    if (status.ok()) status = enqueue();
    if (status.ok()) status = Cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    if (status.ok()) status = Cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (status.ok()) status = Cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    micros.push_back(ms * 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  VDEV_RETURN_IF_ERROR(status);
  if (micros.empty()) return absl::InvalidArgumentError("MedianMicros needs samples >= 1");
  std::nth_element(micros.begin(), micros.begin() + micros.size() / 2, micros.end());
  return micros[micros.size() / 2];
}

struct HandLayer::Buffers {
  // Weights and input, then activations ([tokens, ...]).
  void *x = nullptr, *g1 = nullptr, *wqkv = nullptr, *wo = nullptr, *g2 = nullptr, *wgu = nullptr, *wd = nullptr;
  void *n1 = nullptr, *qkv = nullptr, *att = nullptr, *o = nullptr, *h1 = nullptr, *n2 = nullptr, *gu = nullptr;
  void *act = nullptr, *down = nullptr, *h2 = nullptr;

  ~Buffers() {
    for (void* p : {x, g1, wqkv, wo, g2, wgu, wd, n1, qkv, att, o, h1, n2, gu, act, down, h2}) cudaFree(p);
  }
};

HandLayer::HandLayer(CudaKernelBackend* backend, TransformerShape shape, std::unique_ptr<Buffers> buffers)
    : backend_(backend), shape_(std::move(shape)), buffers_(std::move(buffers)) {}

HandLayer::~HandLayer() {
  if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
}

absl::StatusOr<std::unique_ptr<HandLayer>> HandLayer::Create(CudaKernelBackend* backend, int64_t tokens) {
  const TransformerShape s = LayerShape(tokens);
  const int64_t t = s.tokens, h = s.hidden, f = s.ffn;
  auto b = std::make_unique<Buffers>();
  const float w_scale = 0.03f;  // keeps activations O(1) through the layer
  VDEV_ASSIGN_OR_RETURN(b->x, RandomBf16(t * h, 1.0f, 1));
  VDEV_ASSIGN_OR_RETURN(b->g1, RandomBf16(h, 1.0f, 2));
  VDEV_ASSIGN_OR_RETURN(b->wqkv, RandomBf16(h * 3 * h, w_scale, 3));
  VDEV_ASSIGN_OR_RETURN(b->wo, RandomBf16(h * h, w_scale, 4));
  VDEV_ASSIGN_OR_RETURN(b->g2, RandomBf16(h, 1.0f, 5));
  VDEV_ASSIGN_OR_RETURN(b->wgu, RandomBf16(h * 2 * f, w_scale, 6));
  VDEV_ASSIGN_OR_RETURN(b->wd, RandomBf16(f * h, w_scale, 7));
  for (auto [p, count] : {std::pair{&b->n1, t * h},
                          {&b->qkv, t * 3 * h},
                          {&b->att, t * h},
                          {&b->o, t * h},
                          {&b->h1, t * h},
                          {&b->n2, t * h},
                          {&b->gu, t * 2 * f},
                          {&b->act, t * f},
                          {&b->down, t * h},
                          {&b->h2, t * h}}) {
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(p, count * 2), "cudaMalloc"));
  }
  // Pageable copies may still be landing; kernels on a non-blocking stream would not wait for them.
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize(), "fill"));
  return std::unique_ptr<HandLayer>(new HandLayer(backend, s, std::move(b)));
}

absl::Status HandLayer::Enqueue(cudaStream_t stream) {
  using cuda_ops::Elem;
  const TransformerShape& s = shape_;
  const int64_t t = s.tokens, h = s.hidden, f = s.ffn, head_dim = h / s.heads;
  const Buffers& b = *buffers_;
  constexpr ir::DType kBF16 = ir::DType::kBF16;
  auto launched = [](cudaError_t e) { return Cuda(e, "launch"); };
  VDEV_RETURN_IF_ERROR(launched(cuda_ops::LaunchNorm(Elem::kBF16, b.x, b.g1, nullptr, b.n1, t, h, 1e-6f, stream)));
  VDEV_RETURN_IF_ERROR(backend_->Matmul(kBF16, b.n1, b.wqkv, b.qkv, 1, t, 3 * h, h, stream));
  VDEV_RETURN_IF_ERROR(
      launched(cuda_ops::LaunchAttention(Elem::kBF16, b.qkv, b.att, t, s.heads, head_dim, /*causal=*/true, stream)));
  VDEV_RETURN_IF_ERROR(backend_->Matmul(kBF16, b.att, b.wo, b.o, 1, t, h, h, stream));
  VDEV_RETURN_IF_ERROR(
      launched(cuda_ops::LaunchBinary(cuda_ops::Binary::kAdd, Elem::kBF16, b.x, b.o, b.h1, t * h, nullptr, stream)));
  VDEV_RETURN_IF_ERROR(launched(cuda_ops::LaunchNorm(Elem::kBF16, b.h1, b.g2, nullptr, b.n2, t, h, 1e-6f, stream)));
  VDEV_RETURN_IF_ERROR(backend_->Matmul(kBF16, b.n2, b.wgu, b.gu, 1, t, 2 * f, h, stream));
  VDEV_RETURN_IF_ERROR(launched(cuda_ops::LaunchSiluMul(Elem::kBF16, b.gu, b.act, t, f, stream)));
  VDEV_RETURN_IF_ERROR(backend_->Matmul(kBF16, b.act, b.wd, b.down, 1, t, h, f, stream));
  return launched(
      cuda_ops::LaunchBinary(cuda_ops::Binary::kAdd, Elem::kBF16, b.h1, b.down, b.h2, t * h, nullptr, stream));
}

absl::Status HandLayer::Capture(cudaStream_t stream) {
  VDEV_RETURN_IF_ERROR(Enqueue(stream));  // builds the matmul plans outside the capture
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream), "eager run"));
  VDEV_RETURN_IF_ERROR(backend_->CheckErrors());
  cudaGraph_t graph = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture"));
  absl::Status enqueued = Enqueue(stream);
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamEndCapture(stream, &graph), "end capture"));
  VDEV_RETURN_IF_ERROR(enqueued);
  absl::Status instantiated = Cuda(cudaGraphInstantiate(&graph_, graph, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(graph);
  return instantiated;
}

absl::Status HandLayer::Replay(cudaStream_t stream) {
  if (graph_ == nullptr) return absl::FailedPreconditionError("HandLayer::Replay before Capture");
  return Cuda(cudaGraphLaunch(graph_, stream), "cudaGraphLaunch");
}

}  // namespace vdev::bench
