// softmax, layer_norm and rms_norm on the CPU against double-precision references.
#include <cmath>

#include "kernels/kernel_test_util.h"

namespace vdev::testing {
namespace {

// softmax along `axis` of a row-major tensor, in double.
std::vector<double> Softmax(const HostTensor& x, int64_t axis) {
  std::vector<double> v = Values(x), out(v.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  for (int64_t p = 0; p < outer; ++p) {
    for (int64_t q = 0; q < inner; ++q) {
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < len; ++i) max = std::max(max, v[(p * len + i) * inner + q]);
      for (int64_t i = 0; i < len; ++i) sum += std::exp(v[(p * len + i) * inner + q] - max);
      for (int64_t i = 0; i < len; ++i)
        out[(p * len + i) * inner + q] = std::exp(v[(p * len + i) * inner + q] - max) / sum;
    }
  }
  return out;
}

TEST(NormTest, SoftmaxOverTheLastAxis) {
  for (DType d : kFloatDTypes) {
    for (Shape shape : {Shape{1}, Shape{129}, Shape{3, 7}, Shape{2, 3, 130}}) {
      HostTensor x = Random(d, shape, 21, -8, 8), out = HostTensor::Zeros(d, shape);
      ASSERT_TRUE(RunKernel("softmax", {&x}, {&out}).ok());
      ExpectNear(out, Softmax(x, static_cast<int64_t>(shape.size()) - 1), Ulp(d) + 16 * Ulp(DType::kF32), Tiny(d),
                 DTypeLabel(d));
    }
  }
}

TEST(NormTest, SoftmaxOverAnotherAxis) {
  HostTensor x = Random(DType::kF32, {3, 5, 7}, 22, -8, 8), out = HostTensor::Zeros(DType::kF32, {3, 5, 7});
  KernelAttrs attrs;
  attrs.Set("axis", int64_t{1});
  ASSERT_TRUE(RunKernel("nn.softmax", {&x}, {&out}, attrs).ok());
  ExpectNear(out, Softmax(x, 1), 16 * Ulp(DType::kF32), 1e-37);
  attrs.Set("axis", int64_t{-3});
  ASSERT_TRUE(RunKernel("softmax", {&x}, {&out}, attrs).ok());
  ExpectNear(out, Softmax(x, 0), 16 * Ulp(DType::kF32), 1e-37);
  attrs.Set("axis", int64_t{3});
  EXPECT_EQ(RunKernel("softmax", {&x}, {&out}, attrs).code(), absl::StatusCode::kInvalidArgument);
}

TEST(NormTest, SoftmaxOfLargeValuesDoesNotOverflow) {
  HostTensor x = Make(DType::kF32, {3}, {1000, 1000, -1000}), out = HostTensor::Zeros(DType::kF32, {3});
  ASSERT_TRUE(RunKernel("softmax", {&x}, {&out}).ok());
  EXPECT_FLOAT_EQ(Read(out, 0), 0.5);
  EXPECT_FLOAT_EQ(Read(out, 1), 0.5);
  EXPECT_EQ(Read(out, 2), 0.0);
}

// layer_norm (with beta) or rms_norm (beta null) over the last axis, in double.
std::vector<double> Norm(const HostTensor& x, const HostTensor& gamma, const HostTensor* beta, double eps) {
  const int64_t len = x.shape.back(), rows = x.NumElements() / len;
  std::vector<double> v = Values(x), out(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < len; ++i) mean += v[r * len + i] / len;
    if (beta == nullptr) mean = 0;
    for (int64_t i = 0; i < len; ++i) var += (v[r * len + i] - mean) * (v[r * len + i] - mean) / len;
    for (int64_t i = 0; i < len; ++i)
      out[r * len + i] =
          (v[r * len + i] - mean) / std::sqrt(var + eps) * Read(gamma, i) + (beta ? Read(*beta, i) : 0.0);
  }
  return out;
}

TEST(NormTest, LayerNormOverTheLastAxis) {
  for (DType d : kFloatDTypes) {
    for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 129}, Shape{2, 3, 64}}) {
      HostTensor x = Random(d, shape, 31, -3, 5), gamma = Random(d, {shape.back()}, 32, 0.5, 2);
      HostTensor beta = Random(d, {shape.back()}, 33), out = HostTensor::Zeros(d, shape);
      ASSERT_TRUE(RunKernel("layer_norm", {&x, &gamma, &beta}, {&out}).ok());
      ExpectNear(out, Norm(x, gamma, &beta, 1e-5), Ulp(d) + 64 * Ulp(DType::kF32), 64 * Ulp(DType::kF32) * 4,
                 DTypeLabel(d));
    }
  }
}

TEST(NormTest, RmsNormWithEpsilonAttribute) {
  for (DType d : kFloatDTypes) {
    for (Shape shape : {Shape{1}, Shape{129}, Shape{3, 7}, Shape{5, 4096}}) {
      HostTensor x = Random(d, shape, 41, -3, 3), gamma = Random(d, {shape.back()}, 42, 0.5, 2);
      HostTensor out = HostTensor::Zeros(d, shape);
      KernelAttrs attrs;
      attrs.Set("epsilon", 0.25);
      ASSERT_TRUE(RunKernel("rms_norm", {&x, &gamma}, {&out}, attrs).ok());
      ExpectNear(out, Norm(x, gamma, nullptr, 0.25), Ulp(d) + 16 * Ulp(DType::kF32), Tiny(d), DTypeLabel(d));
      ASSERT_TRUE(RunKernel("rms_norm", {&x, &gamma}, {&out}).ok());
      ExpectNear(out, Norm(x, gamma, nullptr, 1e-6), Ulp(d) + 16 * Ulp(DType::kF32), Tiny(d), DTypeLabel(d));
    }
  }
}

TEST(NormTest, GammaOfTheWrongShapeOrDTypeIsAnError) {
  HostTensor x = HostTensor::Zeros(DType::kF16, {3, 8}), out = x;
  HostTensor short_gamma = HostTensor::Zeros(DType::kF16, {7}), f32_gamma = HostTensor::Zeros(DType::kF32, {8});
  absl::Status s = RunKernel("rms_norm", {&x, &short_gamma}, {&out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'rms_norm'"), std::string::npos) << s;
  EXPECT_EQ(RunKernel("rms_norm", {&x, &f32_gamma}, {&out}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunKernel("layer_norm", {&x, &short_gamma}, {&out}).code(), absl::StatusCode::kInvalidArgument);  // no beta
  HostTensor scalar = HostTensor::Zeros(DType::kF16, {});
  EXPECT_EQ(RunKernel("rms_norm", {&scalar, &short_gamma}, {&scalar}).code(), absl::StatusCode::kInvalidArgument);
}

// vdev.add_rms_norm, the fused all-reduce's CPU reference: h = residual + sum rounded to the dtype,
// n = rms_norm(h). h is checked exactly against the rounded sum (one rounding), n against the double
// norm of that h (the rms_norm tolerance); h written over the sum's own memory gives the same.
TEST(NormTest, AddRmsNormWritesTheResidualSumAndItsNorm) {
  for (DType d : kFloatDTypes) {
    for (Shape shape : {Shape{1}, Shape{129}, Shape{3, 7}, Shape{4, 4096}}) {
      HostTensor residual = Random(d, shape, 51, -3, 3), sum = Random(d, shape, 52, -3, 3);
      HostTensor gamma = Random(d, {shape.back()}, 53, 0.5, 2);
      HostTensor h = HostTensor::Zeros(d, shape), n = HostTensor::Zeros(d, shape);
      ASSERT_TRUE(RunKernel("vdev.add_rms_norm", {&residual, &sum, &gamma}, {&h, &n}).ok());
      HostTensor want_h = HostTensor::Zeros(d, shape);
      ASSERT_TRUE(RunKernel("add", {&residual, &sum}, {&want_h}).ok());
      EXPECT_EQ(h.bytes, want_h.bytes) << DTypeLabel(d);
      ExpectNear(n, Norm(want_h, gamma, nullptr, 1e-6), Ulp(d) + 16 * Ulp(DType::kF32), Tiny(d), DTypeLabel(d));
      HostTensor in_place = sum, n2 = HostTensor::Zeros(d, shape);
      ASSERT_TRUE(RunKernel("vdev.add_rms_norm", {&residual, &in_place, &gamma}, {&in_place, &n2}).ok());
      EXPECT_EQ(in_place.bytes, want_h.bytes) << DTypeLabel(d);
      EXPECT_EQ(n2.bytes, n.bytes) << DTypeLabel(d);
    }
  }
}

TEST(NormTest, AddRmsNormRejectsMismatchedOperands) {
  HostTensor residual = HostTensor::Zeros(DType::kF16, {3, 8}), sum = residual, n = residual, h = residual;
  HostTensor flat = HostTensor::Zeros(DType::kF16, {24}), gamma = HostTensor::Zeros(DType::kF16, {8});
  EXPECT_TRUE(RunKernel("vdev.add_rms_norm", {&residual, &flat, &gamma}, {&h, &n}).ok());  // a flat view of the sum
  HostTensor short_sum = HostTensor::Zeros(DType::kF16, {23}), f32_gamma = HostTensor::Zeros(DType::kF32, {8});
  absl::Status s = RunKernel("vdev.add_rms_norm", {&residual, &short_sum, &gamma}, {&h, &n});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vdev.add_rms_norm"), std::string::npos) << s;
  EXPECT_EQ(RunKernel("vdev.add_rms_norm", {&residual, &sum, &f32_gamma}, {&h, &n}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunKernel("vdev.add_rms_norm", {&residual, &sum, &gamma}, {&h}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vdev::testing
