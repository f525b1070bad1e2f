// The CUDA kernels against the CPU kernels of the same op (KernelRegistry::Global(), the reference):
// every op, f32/f16/bf16, awkward shapes (odd sizes, broadcasts, unaligned views, empty tensors),
// take's out-of-range report through CheckErrors, and a CUDA graph captured once and replayed.
// Skips itself where there is no GPU.
#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "kernels/kernel_test_util.h"
#include "vdev/kernels/cuda_kernels.h"
#include "vdev/support/status_macros.h"

namespace vdev::testing {
namespace {

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// A device copy of a host tensor (or an uninitialised one of a shape), freed on destruction;
// `offset` elements past a 256-byte aligned allocation, to reach the kernels' unaligned paths.
class DeviceTensor {
 public:
  DeviceTensor(DType dtype, Shape shape, size_t offset_elements = 0) {
    ref_.dtype = dtype;
    ref_.shape = std::move(shape);
    const size_t offset = offset_elements * DTypeBytes(dtype);
    EXPECT_EQ(cudaMalloc(&base_, static_cast<size_t>(ref_.NumBytes()) + offset + 16), cudaSuccess);
    ref_.data = static_cast<char*>(base_) + offset;
    cudaMemset(base_, 0xCD, static_cast<size_t>(ref_.NumBytes()) + offset + 16);  // stale bytes, not zeros
    cudaDeviceSynchronize();
  }
  explicit DeviceTensor(const HostTensor& host, size_t offset_elements = 0)
      : DeviceTensor(host.dtype, host.shape, offset_elements) {
    cudaMemcpy(ref_.data, host.bytes.data(), host.bytes.size(), cudaMemcpyHostToDevice);
    // A pageable copy may return before its DMA lands; kernels on a non-blocking stream would not wait.
    cudaDeviceSynchronize();
  }
  ~DeviceTensor() { cudaFree(base_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  const TensorRef& ref() const { return ref_; }
  HostTensor ToHost() const {
    HostTensor host = HostTensor::Zeros(ref_.dtype, ref_.shape);
    cudaDeviceSynchronize();
    cudaMemcpy(host.bytes.data(), ref_.data, host.bytes.size(), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  void* base_ = nullptr;
  TensorRef ref_;
};

class CudaKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveGpu()) return;
    absl::StatusOr<std::unique_ptr<CudaKernelBackend>> backend = CudaKernelBackend::Create(0);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = backend->release();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  static void TearDownTestSuite() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    delete backend_;
    backend_ = nullptr;
    stream_ = nullptr;
  }
  void SetUp() override {
    if (backend_ == nullptr) GTEST_SKIP() << "no GPU";
  }

  KernelContext Context() const {
    return KernelContext{.device_type = DeviceType::kCUDA, .device_index = 0, .stream = stream_, .backend = backend_};
  }

  // Runs `op` on the GPU with device inputs/outputs.
  absl::Status RunCuda(absl::string_view op, const std::vector<const DeviceTensor*>& inputs,
                       const std::vector<const DeviceTensor*>& outputs, const KernelAttrs& attrs) {
    KernelFn fn = KernelRegistry::Global().Find(op, DeviceType::kCUDA);
    if (fn == nullptr) return absl::NotFoundError(absl::StrCat("no CUDA kernel for ", op));
    std::vector<TensorRef> in, out;
    for (const DeviceTensor* t : inputs) in.push_back(t->ref());
    for (const DeviceTensor* t : outputs) out.push_back(t->ref());
    KernelContext context = Context();
    absl::Status s = fn(KernelCall{.inputs = in, .outputs = out, .attrs = &attrs, .context = &context});
    if (s.ok() && cudaStreamSynchronize(stream_) != cudaSuccess) return absl::InternalError("stream failed");
    return s;
  }

  // Runs `op` on the CPU and on the GPU (inputs `offset` elements past alignment) and expects
  // |gpu - cpu| <= rel |cpu| + abs_of_max * max|cpu| for every output element.
  void Compare(absl::string_view op, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
               const KernelAttrs& attrs, double rel, double abs_of_max, size_t offset = 0) {
    SCOPED_TRACE(absl::StrCat(op, " ", ir::DTypeName(inputs[0].dtype), " ", ShapeText(inputs[0].shape)));
    std::vector<HostTensor> want = outputs;
    std::vector<const HostTensor*> cpu_in;
    std::vector<HostTensor*> cpu_out;
    for (const HostTensor& t : inputs) cpu_in.push_back(&t);
    for (HostTensor& t : want) cpu_out.push_back(&t);
    absl::Status reference = RunKernel(op, cpu_in, cpu_out, attrs);
    ASSERT_TRUE(reference.ok()) << reference;
    std::vector<std::unique_ptr<DeviceTensor>> dev_in, dev_out;
    std::vector<const DeviceTensor*> in, out;
    for (const HostTensor& t : inputs) in.push_back(dev_in.emplace_back(new DeviceTensor(t, offset)).get());
    for (const HostTensor& t : outputs) out.push_back(dev_out.emplace_back(new DeviceTensor(t.dtype, t.shape)).get());
    absl::Status s = RunCuda(op, in, out, attrs);
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < want.size(); ++i) {
      const std::vector<double> w = Values(want[i]);
      double max = 0;
      for (double v : w)
        if (std::isfinite(v)) max = std::max(max, std::fabs(v));
      ExpectNear(dev_out[i]->ToHost(), w, rel, abs_of_max * max + Tiny(want[i].dtype), absl::StrCat("output ", i));
    }
  }

  static std::string ShapeText(const Shape& s) { return absl::StrCat("[", absl::StrJoin(s, ","), "]"); }

  static inline CudaKernelBackend* backend_ = nullptr;
  static inline cudaStream_t stream_ = nullptr;
};

// Element-wise results round once from f32 values that may differ in the last f32 bits.
double Rel(DType t) { return t == DType::kF32 ? 1e-5 : 1.01 * Ulp(t); }

KernelAttrs Attrs(std::initializer_list<std::pair<std::string, KernelAttr>> values) {
  KernelAttrs attrs;
  for (const auto& [k, v] : values) attrs.Set(k, v);
  return attrs;
}

TEST_F(CudaKernelsTest, UnaryOpsMatchTheCpu) {
  const std::vector<std::pair<std::string, KernelAttrs>> ops = {
      {"relu", {}},    {"gelu", {}},     {"gelu", Attrs({{"approximate", std::string("tanh")}})},
      {"silu", {}},    {"exp", {}},      {"tanh", {}},
      {"sigmoid", {}}, {"negative", {}}, {"nn.relu", {}}};
  for (DType t : kFloatDTypes) {
    for (const auto& [op, attrs] : ops) {
      for (int64_t n : {1, 7, 4099}) {
        HostTensor x = Random(t, {n}, 11, -6, 6);
        Compare(op, {x}, {HostTensor::Zeros(t, {n})}, attrs, Rel(t), 0);
        Compare(op, {x}, {HostTensor::Zeros(t, {n})}, attrs, Rel(t), 0, /*offset=*/1);
      }
    }
    HostTensor positive = Random(t, {3, 333}, 12, 0.01, 50);
    Compare("sqrt", {positive}, {HostTensor::Zeros(t, {3, 333})}, {}, Rel(t), 0);
    Compare("rsqrt", {positive}, {HostTensor::Zeros(t, {3, 333})}, {}, Rel(t), 0);
  }
}

TEST_F(CudaKernelsTest, BinaryOpsBroadcastLikeTheCpu) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{37, 129}, {37, 129}}, {{37, 129}, {129}},
                                                       {{4, 1, 5}, {3, 1}},    {{6, 7}, {}},
                                                       {{}, {2, 3}},           {{2, 1, 3, 1}, {4, 1, 5}}};
  for (DType t : kFloatDTypes) {
    for (const char* op : {"add", "subtract", "multiply", "divide"}) {
      for (const auto& [sa, sb] : shapes) {
        HostTensor a = Random(t, sa, 21), b = Random(t, sb, 22, 0.5, 3);
        Shape out = sa.size() >= sb.size() ? sa : sb;
        for (size_t k = 0; k < std::min(sa.size(), sb.size()); ++k) {
          const int64_t ea = sa[sa.size() - 1 - k], eb = sb[sb.size() - 1 - k];
          out[out.size() - 1 - k] = std::max(ea, eb);
        }
        Compare(op, {a, b}, {HostTensor::Zeros(t, out)}, {}, Rel(t), 0);
      }
    }
  }
  for (DType t : {DType::kI32, DType::kI64}) {  // integers wrap
    HostTensor a = Random(t, {5, 9}, 23, -2e9, 2e9), b = Random(t, {9}, 24, -2e9, 2e9);
    for (const char* op : {"add", "subtract", "multiply"})
      Compare(op, {a, b}, {HostTensor::Zeros(t, {5, 9})}, {}, 0, 0);
  }
}

// f64 computes in f64: + - * / and the selections round correctly on both sides (bit for bit);
// CUDA's pow is within 2 ulps of the exact power and glibc's within 1, so 3 f64 ulps apart at most.
TEST_F(CudaKernelsTest, F64BinaryOpsMatchTheCpu) {
  HostTensor a = Random(DType::kF64, {37, 129}, 25, 0.5, 4), b = Random(DType::kF64, {129}, 26, -3, 3);
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"})
    Compare(op, {a, b}, {HostTensor::Zeros(DType::kF64, {37, 129})}, {}, 0, 0);
  Compare("power", {a, b}, {HostTensor::Zeros(DType::kF64, {37, 129})}, {}, 3 * std::ldexp(1.0, -52), 0);
}

// Integers of every width: all seven ops are exact (wrapping; divide by 0 and negative exponents as
// src/kernels/internal/integer_math.h defines them, the same code on both sides).
TEST_F(CudaKernelsTest, IntegerBinaryOpsMatchTheCpuExactly) {
  const std::vector<std::tuple<DType, double, double>> ranges = {
      {DType::kI8, -128, 127}, {DType::kU8, 0, 255}, {DType::kI32, -2e9, 2e9}, {DType::kI64, -2e9, 2e9}};
  for (const auto& [t, lo, hi] : ranges) {
    HostTensor a = Random(t, {5, 9}, 27, lo, hi), b = Random(t, {9}, 28, lo, hi);
    HostTensor exponents = Random(t, {9}, 29, t == DType::kU8 ? 0 : -3, 9),
               small = Random(t, {9}, 30, t == DType::kU8 ? 0 : -3, 3);
    for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"})
      Compare(op, {a, b}, {HostTensor::Zeros(t, {5, 9})}, {}, 0, 0);
    Compare("divide", {a, small}, {HostTensor::Zeros(t, {5, 9})}, {}, 0, 0);  // small holds zeros
    Compare("power", {a, exponents}, {HostTensor::Zeros(t, {5, 9})}, {}, 0, 0);
  }
}

TEST_F(CudaKernelsTest, SiluMulMatchesTheCpu) {
  for (DType t : kFloatDTypes) {
    for (const Shape& s : std::vector<Shape>{{3, 26}, {64, 1024}, {2, 3, 18}}) {
      Shape out = s;
      out.back() /= 2;
      Compare("silu_mul", {Random(t, s, 31, -5, 5)}, {HostTensor::Zeros(t, out)}, {}, Rel(t), 0);
    }
  }
}

TEST_F(CudaKernelsTest, CastMatchesTheCpuBetweenEveryPair) {
  const DType all[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16,
                       DType::kI64, DType::kI32, DType::kI8,  DType::kU8};
  for (DType from : all) {
    const double lo = from == DType::kI8 ? -128 : from == DType::kU8 ? 0 : -70000;
    const double hi = from == DType::kI8 ? 127 : from == DType::kU8 ? 255 : 70000;
    HostTensor x = Random(from, {1001}, 41, lo, hi);
    if (from == DType::kF64 || from == DType::kF32 || from == DType::kBF16) {  // NaN, infinities, out of range
      const double specials[] = {std::nan(""), INFINITY, -INFINITY, 3e9, -3e9, 1e19, -1e19, 0.5, -0.5, 65519.99};
      for (int i = 0; i < 10; ++i) Write(x, i, specials[i]);
    }
    if (from == DType::kI64) {
      const double big[] = {9.007199254740993e15, -1.2345678901234567e18, 2147483648.0, -2147483649.0, 65520};
      for (int i = 0; i < 5; ++i) Write(x, i, big[i]);
    }
    for (DType to : all) {
      Compare("cast", {x}, {HostTensor::Zeros(to, {1001})}, Attrs({{"dtype", std::string(ir::DTypeName(to))}}), 0, 0);
    }
  }
}

TEST_F(CudaKernelsTest, SoftmaxMatchesTheCpuOnAnyAxis) {
  for (DType t : kFloatDTypes) {
    Compare("softmax", {Random(t, {5, 1000}, 51, -8, 8)}, {HostTensor::Zeros(t, {5, 1000})}, {}, Rel(t) * 2, 0);
    Compare("nn.softmax", {Random(t, {7, 3}, 52)}, {HostTensor::Zeros(t, {7, 3})}, {}, Rel(t) * 2, 0);
    Compare("softmax", {Random(t, {6, 4, 5}, 53)}, {HostTensor::Zeros(t, {6, 4, 5})}, Attrs({{"axis", int64_t{0}}}),
            Rel(t) * 2, 0);
    Compare("softmax", {Random(t, {2, 4096}, 54)}, {HostTensor::Zeros(t, {2, 4096})}, {}, Rel(t) * 2, 0, 1);
  }
}

TEST_F(CudaKernelsTest, NormsMatchTheCpu) {
  for (DType t : kFloatDTypes) {
    for (const Shape& s : std::vector<Shape>{{33, 4096}, {3, 7}, {2, 3, 200}}) {
      const Shape g{s.back()};
      HostTensor x = Random(t, s, 61, -3, 5), gamma = Random(t, g, 62), beta = Random(t, g, 63);
      // Outputs are (x - mean) * rstd * gamma: f32 statistics summed in different orders.
      Compare("rms_norm", {x, gamma}, {HostTensor::Zeros(t, s)}, {}, Rel(t) * 2, 1e-5);
      Compare("layer_norm", {x, gamma, beta}, {HostTensor::Zeros(t, s)}, Attrs({{"epsilon", 1e-3}}), Rel(t) * 2, 1e-5);
      // The fused all-reduce's epilogue: the residual sum (one rounding, equal) and its norm.
      Compare("vdev.add_rms_norm", {x, Random(t, s, 64, -3, 5), gamma},
              {HostTensor::Zeros(t, s), HostTensor::Zeros(t, s)}, Attrs({{"epsilon", 1e-3}}), Rel(t) * 2, 1e-5);
    }
  }
}

TEST_F(CudaKernelsTest, LayoutOpsMatchTheCpu) {
  for (DType t : {DType::kF16, DType::kF32, DType::kI64, DType::kBF16}) {
    HostTensor x = Random(t, {3, 4, 5}, 71);
    Compare("transpose", {x}, {HostTensor::Zeros(t, {5, 3, 4})}, Attrs({{"axes", std::vector<int64_t>{2, 0, 1}}}), 0,
            0);
    Compare("transpose", {x}, {HostTensor::Zeros(t, {5, 4, 3})}, {}, 0, 0);
    HostTensor a = Random(t, {2, 3, 4}, 72), b = Random(t, {2, 5, 4}, 73);
    Compare("concatenate", {a, b}, {HostTensor::Zeros(t, {2, 8, 4})}, Attrs({{"axis", int64_t{1}}}), 0, 0);
    Compare("concat", {a, a}, {HostTensor::Zeros(t, {2, 3, 8})}, Attrs({{"axis", int64_t{-1}}}), 0, 0, 1);
    HostTensor w = Random(t, {2, 8, 3}, 74);
    Compare("split", {w}, {HostTensor::Zeros(t, {2, 4, 3}), HostTensor::Zeros(t, {2, 4, 3})},
            Attrs({{"indices_or_sections", int64_t{2}}, {"axis", int64_t{1}}}), 0, 0);
    Compare("split", {w},
            {HostTensor::Zeros(t, {2, 1, 3}), HostTensor::Zeros(t, {2, 4, 3}), HostTensor::Zeros(t, {2, 3, 3})},
            Attrs({{"indices_or_sections", std::vector<int64_t>{1, 5}}, {"axis", int64_t{1}}}), 0, 0);
  }
}

TEST_F(CudaKernelsTest, TakeMatchesTheCpu) {
  for (DType index_type : {DType::kI32, DType::kI64}) {
    HostTensor table = Random(DType::kBF16, {10, 6}, 81);
    HostTensor rows = Make(index_type, {2, 3}, {9, 0, 3, 3, 7, 1}),
               columns = Make(index_type, {2, 3}, {5, 0, 3, 3, 2, 1});
    Compare("take", {table, rows}, {HostTensor::Zeros(DType::kBF16, {2, 3, 6})}, {}, 0, 0);
    Compare("take", {table, columns}, {HostTensor::Zeros(DType::kBF16, {10, 2, 3})}, Attrs({{"axis", int64_t{1}}}), 0,
            0);
  }
  HostTensor embeddings = Random(DType::kF32, {50, 4096}, 82);
  Compare("take", {embeddings, Make(DType::kI64, {4}, {49, 2, 2, 17})}, {HostTensor::Zeros(DType::kF32, {4, 4096})}, {},
          0, 0);
}

TEST_F(CudaKernelsTest, TakeReportsAnIndexOutOfRangeThroughCheckErrors) {
  DeviceTensor table(Random(DType::kF32, {10, 6}, 83));
  DeviceTensor indices(Make(DType::kI32, {4}, {1, 2, 10, 3}));
  DeviceTensor out(DType::kF32, {4, 6});
  ASSERT_TRUE(RunCuda("take", {&table, &indices}, {&out}, {}).ok());
  absl::Status s = backend_->CheckErrors();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("index 10 (element 2"), std::string::npos) << s;
  EXPECT_TRUE(backend_->CheckErrors().ok()) << "CheckErrors clears the word";
  DeviceTensor good(Make(DType::kI32, {2}, {0, 9}));
  DeviceTensor out2(DType::kF32, {2, 6});
  ASSERT_TRUE(RunCuda("take", {&table, &good}, {&out2}, {}).ok());
  EXPECT_TRUE(backend_->CheckErrors().ok());
}

TEST_F(CudaKernelsTest, AttentionMatchesTheCpu) {
  struct Case {
    int64_t t, h, d;
  };
  for (DType t : kFloatDTypes) {
    // f16/bf16 with D of 64 or 128 take the tensor-core kernel (P rounded to the input type before
    // P V, as FlashAttention does); the others, and unaligned tensors, the FMA kernel.
    for (Case c : {Case{1, 1, 64}, Case{37, 2, 128}, Case{130, 2, 64}, Case{100, 3, 80}, Case{70, 1, 256},
                   Case{256, 2, 128}, Case{1024, 1, 128}}) {
      for (bool causal : {false, true}) {
        HostTensor qkv = Random(t, {c.t, 3, c.h, c.d}, 91, -1.5, 1.5);
        Compare("attention", {qkv}, {HostTensor::Zeros(t, {c.t, c.h, c.d})}, Attrs({{"causal", causal}}), Rel(t) * 2,
                t == DType::kF32 ? 1e-5 : Ulp(t));
      }
    }
    HostTensor unaligned = Random(t, {50, 3, 2, 128}, 92, -1.5, 1.5);
    Compare("attention", {unaligned}, {HostTensor::Zeros(t, {50, 2, 128})}, Attrs({{"causal", true}}), Rel(t) * 2,
            t == DType::kF32 ? 1e-5 : Ulp(t), /*offset=*/1);
  }
}

TEST_F(CudaKernelsTest, MatmulMatchesTheCpuWithBatchBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{33, 65}, {65, 17}},          // one matrix
                                                       {{3, 33, 65}, {65, 17}},       // weights: folded into M
                                                       {{3, 33, 64}, {3, 64, 16}},    // strided batch
                                                       {{33, 65}, {3, 65, 17}},       // a broadcast: one call per b
                                                       {{2, 1, 5, 7}, {1, 3, 7, 4}},  // both broadcast: outer loop
                                                       {{4, 0}, {0, 3}}};             // empty sum: zeros
  for (DType t : kFloatDTypes) {
    for (const auto& [sa, sb] : shapes) {
      Shape out;
      const size_t rank = std::max(sa.size(), sb.size());
      for (size_t i = 0; i + 2 < rank; ++i) {
        const size_t da = sa.size() - rank + i, db = sb.size() - rank + i;
        const int64_t ea = i + sa.size() >= rank ? sa[da] : 1, eb = i + sb.size() >= rank ? sb[db] : 1;
        out.push_back(std::max(ea, eb));
      }
      out.push_back(sa[sa.size() - 2]);
      out.push_back(sb.back());
      // f32 runs without TF32; f16/bf16 accumulate in f32 on both sides.
      Compare("matmul", {Random(t, sa, 101), Random(t, sb, 102)}, {HostTensor::Zeros(t, out)}, {}, Rel(t) * 2,
              t == DType::kF32 ? 1e-5 : Ulp(t));
    }
  }
}

// rms_norm -> matmul -> add -> take captured as one graph on the stream, replayed twice: the
// outputs equal the eager run's, and the replay builds no matmul plan.
TEST_F(CudaKernelsTest, CapturedGraphReplaysTheEagerResult) {
  const DType t = DType::kBF16;
  DeviceTensor x(Random(t, {64, 256}, 111)), gamma(Random(t, {256}, 112)), w(Random(t, {256, 512}, 113));
  DeviceTensor bias(Random(t, {512}, 114)), indices(Make(DType::kI32, {3}, {63, 0, 5}));
  DeviceTensor n(t, {64, 256}), y(t, {64, 512}), z(t, {64, 512}), rows(t, {3, 512});
  KernelContext context = Context();
  auto enqueue = [&]() -> absl::Status {
    const KernelAttrs none;
    auto call = [&](absl::string_view op, std::vector<TensorRef> in, std::vector<TensorRef> out) {
      return KernelRegistry::Global().Find(
          op, DeviceType::kCUDA)(KernelCall{.inputs = in, .outputs = out, .attrs = &none, .context = &context});
    };
    VDEV_RETURN_IF_ERROR(call("rms_norm", {x.ref(), gamma.ref()}, {n.ref()}));
    VDEV_RETURN_IF_ERROR(call("matmul", {n.ref(), w.ref()}, {y.ref()}));
    VDEV_RETURN_IF_ERROR(call("add", {y.ref(), bias.ref()}, {z.ref()}));
    return call("take", {z.ref(), indices.ref()}, {rows.ref()});
  };
  ASSERT_TRUE(enqueue().ok());
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const HostTensor eager = rows.ToHost();
  const int64_t plans = backend_->matmul_plans();

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  absl::Status captured = enqueue();
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  ASSERT_TRUE(captured.ok()) << captured;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    cudaMemset(rows.ref().data, 0, static_cast<size_t>(rows.ref().NumBytes()));
    cudaDeviceSynchronize();
    ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    const HostTensor replayed = rows.ToHost();
    EXPECT_EQ(replayed.bytes, eager.bytes) << "replay " << replay;
  }
  EXPECT_EQ(backend_->matmul_plans(), plans);
  EXPECT_TRUE(backend_->CheckErrors().ok());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace vdev::testing
