// attention and silu_mul on the CPU against double-precision references, and the registry's view
// of the whole CPU op set.
#include <algorithm>
#include <cmath>

#include "kernels/kernel_test_util.h"

namespace vdev::testing {
namespace {

// softmax(q k^T / sqrt(D)) v per head of qkv[T,3,H,D], in double.
std::vector<double> Attention(const HostTensor& qkv, bool causal) {
  const int64_t t = qkv.shape[0], heads = qkv.shape[2], d = qkv.shape[3];
  auto at = [&](int64_t token, int64_t which, int64_t h, int64_t i) {
    return Read(qkv, ((token * 3 + which) * heads + h) * d + i);
  };
  std::vector<double> out(static_cast<size_t>(t * heads * d), 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t q = 0; q < t; ++q) {
      const int64_t keys = causal ? q + 1 : t;
      std::vector<double> s(static_cast<size_t>(keys));
      for (int64_t k = 0; k < keys; ++k) {
        for (int64_t i = 0; i < d; ++i) s[k] += at(q, 0, h, i) * at(k, 1, h, i);
        s[k] /= std::sqrt(static_cast<double>(d));
      }
      const double max = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& v : s) sum += (v = std::exp(v - max));
      for (int64_t k = 0; k < keys; ++k)
        for (int64_t i = 0; i < d; ++i) out[(q * heads + h) * d + i] += s[k] / sum * at(k, 2, h, i);
    }
  }
  return out;
}

TEST(AttentionTest, MatchesReferenceCausalOrNot) {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 2, 7}, {7, 3, 5}, {130, 2, 16}, {257, 1, 8}};  // T, H, D
  for (DType dtype : kFloatDTypes) {
    for (const auto& s : shapes) {
      for (bool causal : {false, true}) {
        HostTensor qkv = Random(dtype, {s[0], 3, s[1], s[2]}, 81, -2, 2);
        HostTensor out = HostTensor::Zeros(dtype, {s[0], s[1], s[2]});
        KernelAttrs attrs;
        attrs.Set("causal", causal);
        ASSERT_TRUE(RunKernel("attention", {&qkv}, {&out}, attrs).ok());
        // Outputs are averages of v (|v| <= 2): f32 error relative to that scale, then one rounding.
        ExpectNear(out, Attention(qkv, causal), Ulp(dtype), 2e-5,
                   absl::StrCat(DTypeLabel(dtype), " T=", s[0], " H=", s[1], " D=", s[2], causal ? " causal" : ""));
      }
    }
  }
}

TEST(AttentionTest, FirstCausalQuerySeesOnlyItself) {
  HostTensor qkv = Random(DType::kF32, {4, 3, 1, 2}, 82), out = HostTensor::Zeros(DType::kF32, {4, 1, 2});
  KernelAttrs attrs;
  attrs.Set("causal", true);
  ASSERT_TRUE(RunKernel("attention", {&qkv}, {&out}, attrs).ok());
  EXPECT_EQ(Read(out, 0), Read(qkv, 4));  // v of token 0
  EXPECT_EQ(Read(out, 1), Read(qkv, 5));
}

TEST(AttentionTest, ShapeErrors) {
  HostTensor qkv = HostTensor::Zeros(DType::kF32, {4, 2, 1, 2}), out = HostTensor::Zeros(DType::kF32, {4, 1, 2});
  absl::Status s = RunKernel("attention", {&qkv}, {&out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'attention'"), std::string::npos) << s;
  HostTensor good = HostTensor::Zeros(DType::kF32, {4, 3, 1, 2}), wrong_out = HostTensor::Zeros(DType::kF32, {4, 2});
  EXPECT_EQ(RunKernel("attention", {&good}, {&wrong_out}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SiluMulTest, MatchesReference) {
  for (DType dtype : kFloatDTypes) {
    for (Shape shape : {Shape{2}, Shape{3, 14}, Shape{2, 3, 258}}) {
      Shape half = shape;
      half.back() /= 2;
      HostTensor x = Random(dtype, shape, 91, -6, 6), out = HostTensor::Zeros(dtype, half);
      ASSERT_TRUE(RunKernel("silu_mul", {&x}, {&out}).ok());
      const int64_t f = half.back();
      std::vector<double> want;
      for (int64_t r = 0; r < out.NumElements() / f; ++r)
        for (int64_t i = 0; i < f; ++i) {
          const double g = Read(x, r * 2 * f + i), u = Read(x, r * 2 * f + f + i);
          want.push_back(g / (1 + std::exp(-g)) * u);
        }
      ExpectNear(out, want, Ulp(dtype) + 8 * Ulp(DType::kF32), Tiny(dtype), DTypeLabel(dtype));
    }
  }
}

TEST(SiluMulTest, OddLastAxisIsAnError) {
  HostTensor x = HostTensor::Zeros(DType::kF16, {3, 7}), out = HostTensor::Zeros(DType::kF16, {3, 3});
  absl::Status s = RunKernel("silu_mul", {&x}, {&out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'silu_mul'"), std::string::npos) << s;
}

TEST(CpuKernelsTest, EveryOpOfTheInterfaceHasAKernel) {
  std::vector<std::string> ops = KernelRegistry::Global().Ops(DeviceType::kCPU);
  for (const char* op :
       {"matmul",    "add",         "subtract", "multiply", "divide", "relu",    "gelu",       "silu",       "exp",
        "tanh",      "sigmoid",     "negative", "sqrt",     "rsqrt",  "softmax", "nn.softmax", "layer_norm", "rms_norm",
        "transpose", "concatenate", "concat",   "split",    "cast",   "take",    "attention",  "silu_mul"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_EQ(KernelRegistry::Global().Find("reshape", DeviceType::kCPU), nullptr);  // a view: the executor's
}

// BLAS may split and order each dot product differently with another thread count, so the two
// results agree only within the summation error bound, not bitwise.
TEST(CpuKernelsTest, SetCpuKernelThreadsKeepsResults) {
  constexpr int64_t kM = 64, kK = 96, kN = 80;
  HostTensor a = Random(DType::kF32, {kM, kK}, 1), b = Random(DType::kF32, {kK, kN}, 2);
  HostTensor one = HostTensor::Zeros(DType::kF32, {kM, kN}), two = one;
  SetCpuKernelThreads(1);
  ASSERT_TRUE(RunKernel("matmul", {&a, &b}, {&one}).ok());
  SetCpuKernelThreads(2);
  ASSERT_TRUE(RunKernel("matmul", {&a, &b}, {&two}).ok());
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double magnitude = 0;
      for (int64_t l = 0; l < kK; ++l) magnitude += std::fabs(Read(a, i * kK + l) * Read(b, l * kN + j));
      // Each result is within DotProductErrorBound of the exact sum, so they are within twice it of each other.
      const int64_t e = i * kN + j;
      ASSERT_NEAR(Read(two, e), Read(one, e), 2 * DotProductErrorBound(kK, magnitude)) << "element " << e;
    }
  }
}

}  // namespace
}  // namespace vdev::testing
