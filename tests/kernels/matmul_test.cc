// matmul on the CPU against a naive double-precision product: awkward sizes, batch broadcasting,
// f16/bf16 panels wider than one panel, an empty inner dimension, and the errors.
#include <cmath>

#include "kernels/kernel_test_util.h"

namespace vdev::testing {
namespace {

// The product in double, and per element the sum of |a||b| that bounds f32 accumulation error.
void Reference(const HostTensor& a, const HostTensor& b, const Shape& out, std::vector<double>& want,
               std::vector<double>& magnitude) {
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  const Shape batch_out(out.begin(), out.end() - 2), batch_a(a.shape.begin(), a.shape.end() - 2),
      batch_b(b.shape.begin(), b.shape.end() - 2);
  const int64_t batches = TensorRef{nullptr, DType::kF32, batch_out}.NumElements();
  want.assign(static_cast<size_t>(batches * m * n), 0.0);
  magnitude.assign(want.size(), 0.0);
  for (int64_t p = 0; p < batches; ++p) {
    const int64_t pa = BroadcastSource(batch_out, batch_a, p), pb = BroadcastSource(batch_out, batch_b, p);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double x = Read(a, (pa * m + i) * k + l), y = Read(b, (pb * k + l) * n + j);
          sum += x * y;
          mag += std::fabs(x * y);
        }
        want[(p * m + i) * n + j] = sum;
        magnitude[(p * m + i) * n + j] = mag;
      }
    }
  }
}

void Check(DType dtype, const Shape& sa, const Shape& sb, const Shape& so) {
  HostTensor a = Random(dtype, sa, 11, -1, 1), b = Random(dtype, sb, 12, -1, 1);
  HostTensor out = HostTensor::Zeros(dtype, so);
  const std::string label = absl::StrCat(DTypeLabel(dtype), " ", absl::StrJoin(sa, "x"), " @ ", absl::StrJoin(sb, "x"));
  ASSERT_TRUE(RunKernel("matmul", {&a, &b}, {&out}).ok()) << label;
  std::vector<double> want, magnitude;
  Reference(a, b, so, want, magnitude);
  for (size_t i = 0; i < want.size(); ++i) {
    // f32 accumulation in whatever order the BLAS takes, then one rounding to the dtype.
    const int64_t k = sa.back();
    const double tol = Ulp(dtype) * std::fabs(want[i]) + DotProductErrorBound(k, magnitude[i]) + 1e-30;
    ASSERT_NEAR(Read(out, static_cast<int64_t>(i)), want[i], tol) << label << " element " << i;
  }
}

TEST(MatmulTest, AwkwardSizesInEveryFloatDType) {
  const int64_t sizes[][3] = {{1, 1, 1}, {3, 7, 5}, {129, 3, 7}, {7, 129, 1}, {1, 64, 130}, {33, 17, 65}};
  for (DType d : kFloatDTypes)
    for (const auto& s : sizes) Check(d, {s[0], s[1]}, {s[1], s[2]}, {s[0], s[2]});
}

TEST(MatmulTest, HalfOperandsWiderThanOnePanel) {
  for (DType d : {DType::kF16, DType::kBF16}) Check(d, {3, 5}, {5, 2050}, {3, 2050});
}

TEST(MatmulTest, BatchedLeftOperandAgainstOneWeightMatrix) {
  for (DType d : kFloatDTypes) Check(d, {2, 3, 7, 5}, {5, 4}, {2, 3, 7, 4});
}

TEST(MatmulTest, BatchDimsBroadcast) {
  for (DType d : kFloatDTypes) {
    Check(d, {2, 1, 3, 5}, {3, 5, 4}, {2, 3, 3, 4});
    Check(d, {3, 5}, {2, 5, 7}, {2, 3, 7});
    Check(d, {1, 3, 5}, {1, 5, 7}, {1, 3, 7});
  }
}

TEST(MatmulTest, EmptyInnerDimensionGivesZeros) {
  for (DType d : kFloatDTypes) {
    HostTensor a = HostTensor::Zeros(d, {3, 0}), b = HostTensor::Zeros(d, {0, 4});
    HostTensor out = Make(d, {3, 4}, std::vector<double>(12, 7.0));
    ASSERT_TRUE(RunKernel("matmul", {&a, &b}, {&out}).ok());
    for (double v : Values(out)) EXPECT_EQ(v, 0.0);
  }
}

TEST(MatmulTest, RankAndShapeErrorsNameTheOp) {
  HostTensor v = HostTensor::Zeros(DType::kF32, {5}), m = HostTensor::Zeros(DType::kF32, {5, 3});
  HostTensor out = HostTensor::Zeros(DType::kF32, {3});
  absl::Status s = RunKernel("matmul", {&v, &m}, {&out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'matmul'"), std::string::npos) << s;
  HostTensor a = HostTensor::Zeros(DType::kF32, {2, 4}), out2 = HostTensor::Zeros(DType::kF32, {2, 3});
  EXPECT_EQ(RunKernel("matmul", {&a, &m}, {&out2}).code(), absl::StatusCode::kInvalidArgument);  // 4 vs 5
  HostTensor i32 = HostTensor::Zeros(DType::kI32, {2, 2}), i32_out = i32;
  EXPECT_EQ(RunKernel("matmul", {&i32, &i32}, {&i32_out}).code(), absl::StatusCode::kInvalidArgument);
  HostTensor batch_a = HostTensor::Zeros(DType::kF32, {2, 3, 5}), batch_b = HostTensor::Zeros(DType::kF32, {3, 5, 4});
  HostTensor batch_out = HostTensor::Zeros(DType::kF32, {2, 3, 4});
  EXPECT_EQ(RunKernel("matmul", {&batch_a, &batch_b}, {&batch_out}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vdev::testing
