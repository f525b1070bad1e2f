// transpose, concatenate, split, cast and take on the CPU against index arithmetic written here.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/kernel_test_util.h"

namespace vdev::testing {
namespace {

// Element `o` of the transpose of `in` by `axes`, as an index into `in`.
int64_t TransposeSource(const Shape& in, const std::vector<int64_t>& axes, int64_t o) {
  const size_t rank = in.size();
  std::vector<int64_t> coord(rank);
  for (size_t k = rank; k-- > 0;) {
    coord[k] = o % in[axes[k]];
    o /= in[axes[k]];
  }
  std::vector<int64_t> src(rank);
  for (size_t k = 0; k < rank; ++k) src[axes[k]] = coord[k];
  int64_t index = 0;
  for (size_t d = 0; d < rank; ++d) index = index * in[d] + src[d];
  return index;
}

TEST(LayoutTest, TransposeByAxesAndByDefault) {
  struct Case {
    Shape in;
    std::vector<int64_t> axes;
    bool given;
  };
  const Case cases[] = {{{3, 7}, {1, 0}, false},      {{2, 3, 5}, {2, 1, 0}, false},
                        {{2, 3, 5}, {0, 2, 1}, true}, {{4, 1, 3, 2}, {3, 0, 2, 1}, true},
                        {{129}, {0}, true},           {{}, {}, false},
                        {{2, 3, 5}, {-1, 0, 1}, true}};
  for (DType d : {DType::kF32, DType::kF16, DType::kI64}) {
    for (const Case& c : cases) {
      std::vector<int64_t> axes = c.axes;
      for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(c.in.size()) : a;
      Shape out_shape;
      for (int64_t a : axes) out_shape.push_back(c.in[a]);
      HostTensor x = Random(d, c.in, 51, -100, 100), out = HostTensor::Zeros(d, out_shape);
      KernelAttrs attrs;
      if (c.given) attrs.Set("axes", c.axes);
      ASSERT_TRUE(RunKernel("transpose", {&x}, {&out}, attrs).ok());
      for (int64_t i = 0; i < out.NumElements(); ++i)
        ASSERT_EQ(Read(out, i), Read(x, TransposeSource(c.in, axes, i))) << DTypeLabel(d) << " element " << i;
    }
  }
}

TEST(LayoutTest, TransposeRejectsANonPermutation) {
  HostTensor x = HostTensor::Zeros(DType::kF32, {2, 3}), out = HostTensor::Zeros(DType::kF32, {3, 2});
  KernelAttrs attrs;
  attrs.Set("axes", std::vector<int64_t>{0, 0});
  EXPECT_EQ(RunKernel("transpose", {&x}, {&out}, attrs).code(), absl::StatusCode::kInvalidArgument);
  attrs.Set("axes", std::vector<int64_t>{1});
  EXPECT_EQ(RunKernel("transpose", {&x}, {&out}, attrs).code(), absl::StatusCode::kInvalidArgument);
  HostTensor wrong = HostTensor::Zeros(DType::kF32, {2, 3});
  EXPECT_EQ(RunKernel("transpose", {&x}, {&wrong}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LayoutTest, ConcatenateThenSplitRoundTrips) {
  for (int64_t axis : {0, 1, -1}) {
    const int64_t a = axis < 0 ? 2 : axis;
    Shape s1{2, 3, 5}, s2 = s1, s3 = s1, whole = s1;
    s2[a] = 1;
    s3[a] = 4;
    whole[a] = s1[a] + 1 + 4;
    HostTensor x1 = Random(DType::kBF16, s1, 61), x2 = Random(DType::kBF16, s2, 62), x3 = Random(DType::kBF16, s3, 63);
    HostTensor cat = HostTensor::Zeros(DType::kBF16, whole);
    KernelAttrs attrs;
    attrs.Set("axis", axis);
    ASSERT_TRUE(RunKernel(axis == 1 ? "concat" : "concatenate", {&x1, &x2, &x3}, {&cat}, attrs).ok());
    // Element by element: the part an index along `a` falls in.
    for (int64_t i = 0; i < cat.NumElements(); ++i) {
      int64_t rest = i, coord[3];
      for (int d = 2; d >= 0; --d) coord[d] = rest % whole[d], rest /= whole[d];
      const HostTensor* part = coord[a] < s1[a] ? &x1 : coord[a] < s1[a] + 1 ? &x2 : &x3;
      coord[a] -= part == &x1 ? 0 : part == &x2 ? s1[a] : s1[a] + 1;
      const int64_t src = (coord[0] * part->shape[1] + coord[1]) * part->shape[2] + coord[2];
      ASSERT_EQ(Read(cat, i), Read(*part, src)) << "axis " << axis << " element " << i;
    }
    HostTensor y1 = HostTensor::Zeros(DType::kBF16, s1), y2 = HostTensor::Zeros(DType::kBF16, s2),
               y3 = HostTensor::Zeros(DType::kBF16, s3);
    attrs.Set("indices_or_sections", std::vector<int64_t>{s1[a], s1[a] + 1});
    ASSERT_TRUE(RunKernel("split", {&cat}, {&y1, &y2, &y3}, attrs).ok());
    EXPECT_EQ(y1.bytes, x1.bytes);
    EXPECT_EQ(y2.bytes, x2.bytes);
    EXPECT_EQ(y3.bytes, x3.bytes);
  }
}

TEST(LayoutTest, SplitIntoEqualSections) {
  HostTensor x = Random(DType::kF32, {3, 6}, 64), a = HostTensor::Zeros(DType::kF32, {3, 2}), b = a, c = a;
  KernelAttrs attrs;
  attrs.Set("indices_or_sections", int64_t{3});
  attrs.Set("axis", int64_t{1});
  ASSERT_TRUE(RunKernel("split", {&x}, {&a, &b, &c}, attrs).ok());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 2; ++j) {
      EXPECT_EQ(Read(a, r * 2 + j), Read(x, r * 6 + j));
      EXPECT_EQ(Read(c, r * 2 + j), Read(x, r * 6 + 4 + j));
    }
  attrs.Set("indices_or_sections", int64_t{2});  // 3 outputs for 2 sections
  EXPECT_EQ(RunKernel("split", {&x}, {&a, &b, &c}, attrs).code(), absl::StatusCode::kInvalidArgument);
  HostTensor wide = HostTensor::Zeros(DType::kF32, {3, 3});
  attrs.Set("indices_or_sections", std::vector<int64_t>{2, 4});
  EXPECT_EQ(RunKernel("split", {&x}, {&a, &wide, &c}, attrs).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LayoutTest, ConcatenateRejectsMismatchedParts) {
  HostTensor a = HostTensor::Zeros(DType::kF32, {2, 3}), b = HostTensor::Zeros(DType::kF32, {2, 4});
  HostTensor out = HostTensor::Zeros(DType::kF32, {4, 3});
  absl::Status s = RunKernel("concatenate", {&a, &b}, {&out});  // axis 0: 3 vs 4 columns
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'concatenate'"), std::string::npos) << s;
  HostTensor f16 = HostTensor::Zeros(DType::kF16, {2, 3});
  EXPECT_EQ(RunKernel("concatenate", {&a, &f16}, {&out}).code(), absl::StatusCode::kInvalidArgument);
}

// Every pair of f32, f16, bf16, i32 and i64: values every dtype holds exactly come through unchanged.
TEST(LayoutTest, CastBetweenEveryPairKeepsExactValues) {
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64};
  const std::vector<double> values = {0, 1, -1, 2, -3, 7, 64, -128, 255, 0};
  for (DType from : dtypes) {
    for (DType to : dtypes) {
      HostTensor x = Make(from, {2, 5}, values), out = HostTensor::Zeros(to, {2, 5});
      KernelAttrs attrs;
      attrs.Set("dtype", std::string(ir::DTypeName(to)));
      ASSERT_TRUE(RunKernel("cast", {&x}, {&out}, attrs).ok()) << DTypeLabel(from) << "->" << DTypeLabel(to);
      EXPECT_EQ(Values(out), values) << DTypeLabel(from) << "->" << DTypeLabel(to);
    }
  }
}

// Every pair of all eight arithmetic dtypes, on values that each of them (u8 and i8 included) holds.
TEST(LayoutTest, CastBetweenEveryArithmeticPairKeepsSmallValues) {
  const DType dtypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16,
                          DType::kI64, DType::kI32, DType::kI8,  DType::kU8};
  const std::vector<double> values = {0, 1, 2, 7, 64, 100, 127, 0, 3, 5};
  for (DType from : dtypes) {
    for (DType to : dtypes) {
      HostTensor x = Make(from, {10}, values), out = HostTensor::Zeros(to, {10});
      ASSERT_TRUE(RunKernel("cast", {&x}, {&out}).ok()) << DTypeLabel(from) << "->" << DTypeLabel(to);
      EXPECT_EQ(Values(out), values) << DTypeLabel(from) << "->" << DTypeLabel(to);
    }
  }
}

// f64 narrows in one rounding. 1 + 2^-11 + 2^-40 lies just above the f16 tie between 1 and
// 1 + 2^-10, so it rounds up; through an f32 rounded to nearest it would become the tie itself and
// round down to 1 (even). f64 -> f32 is one IEEE rounding; i64 -> f64 rounds to nearest even.
TEST(LayoutTest, CastFromF64RoundsOnce) {
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  HostTensor x = Make(DType::kF64, {2}, {above_tie, -above_tie}), f16 = HostTensor::Zeros(DType::kF16, {2});
  ASSERT_TRUE(RunKernel("cast", {&x}, {&f16}).ok());
  EXPECT_EQ(Values(f16), (std::vector<double>{1.0 + std::ldexp(1.0, -10), -1.0 - std::ldexp(1.0, -10)}));
  HostTensor f32 = HostTensor::Zeros(DType::kF32, {2});
  ASSERT_TRUE(RunKernel("cast", {&x}, {&f32}).ok());
  EXPECT_EQ(Read(f32, 0), static_cast<double>(static_cast<float>(above_tie)));
  HostTensor big = Make(DType::kI64, {1}, {0}), wide = HostTensor::Zeros(DType::kF64, {1});
  const int64_t odd = (int64_t{1} << 53) + 1;  // not an f64: ties to 2^53 (even)
  std::memcpy(big.bytes.data(), &odd, sizeof odd);
  ASSERT_TRUE(RunKernel("cast", {&big}, {&wide}).ok());
  EXPECT_EQ(Read(wide, 0), std::ldexp(1.0, 53));
}

// f64 and f32 to i8 and u8 truncate toward zero and saturate (NaN -> 0); integers wrap.
TEST(LayoutTest, CastToSmallIntegersTruncatesAndSaturates) {
  const std::vector<double> in = {2.9, -2.9, 300, -300, std::nan(""), 127.5};
  for (DType from : {DType::kF64, DType::kF32}) {
    HostTensor x = Make(from, {6}, in), i8 = HostTensor::Zeros(DType::kI8, {6}),
               u8 = HostTensor::Zeros(DType::kU8, {6});
    ASSERT_TRUE(RunKernel("cast", {&x}, {&i8}).ok());
    ASSERT_TRUE(RunKernel("cast", {&x}, {&u8}).ok());
    EXPECT_EQ(Values(i8), (std::vector<double>{2, -2, 127, -128, 0, 127})) << DTypeLabel(from);
    EXPECT_EQ(Values(u8), (std::vector<double>{2, 0, 255, 0, 0, 127})) << DTypeLabel(from);
  }
  HostTensor minus_one = Make(DType::kI8, {1}, {-1}), u8 = HostTensor::Zeros(DType::kU8, {1});
  ASSERT_TRUE(RunKernel("cast", {&minus_one}, {&u8}).ok());
  EXPECT_EQ(Read(u8, 0), 255.0);
}

TEST(LayoutTest, CastRoundsOnceToNearestEven) {
  // 0.1 in f32 rounds to f16 0x2E66; f16 -> bf16 rounds the exact f16 value.
  HostTensor x = Make(DType::kF32, {2}, {0.1, 1.0 + 1.0 / 256 + 1.0 / 65536}),
             out = HostTensor::Zeros(DType::kF16, {2});
  ASSERT_TRUE(RunKernel("cast", {&x}, {&out}).ok());
  EXPECT_EQ(Read(out, 0), HalfToFloat(0x2E66));
  HostTensor bf = HostTensor::Zeros(DType::kBF16, {2});
  ASSERT_TRUE(RunKernel("cast", {&x}, {&bf}).ok());
  EXPECT_EQ(Read(bf, 1), 1.0 + 1.0 / 128);  // above the tie at 1 + 2^-8: up
  // 2^24 + 2^16 + 1 to bf16: just above a tie, so up to 2^24 + 2^17. Through f32 it would become
  // the tie 2^24 + 2^16 and round down to 2^24.
  const double v = 16777216.0 + 65536.0 + 1.0;
  for (DType from : {DType::kI32, DType::kI64}) {
    HostTensor i = Make(from, {1}, {v}), b16 = HostTensor::Zeros(DType::kBF16, {1});
    ASSERT_TRUE(RunKernel("cast", {&i}, {&b16}).ok());
    EXPECT_EQ(Read(b16, 0), 16777216.0 + 131072.0) << DTypeLabel(from);
  }
}

TEST(LayoutTest, CastToIntegerTruncatesAndSaturates) {
  const double inf = std::numeric_limits<double>::infinity();
  HostTensor x = Make(DType::kF32, {6}, {2.9, -2.9, 1e20, -1e20, std::nan(""), inf});
  HostTensor i32 = HostTensor::Zeros(DType::kI32, {6}), i64 = HostTensor::Zeros(DType::kI64, {6});
  ASSERT_TRUE(RunKernel("cast", {&x}, {&i32}).ok());
  ASSERT_TRUE(RunKernel("cast", {&x}, {&i64}).ok());
  EXPECT_EQ(Values(i32), (std::vector<double>{2, -2, 2147483647.0, -2147483648.0, 0, 2147483647.0}));
  const double max64 = static_cast<double>(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Values(i64), (std::vector<double>{2, -2, max64, -max64, 0, max64}));
  HostTensor big = Make(DType::kI64, {1}, {4294967297.0}), narrow = HostTensor::Zeros(DType::kI32, {1});
  ASSERT_TRUE(RunKernel("cast", {&big}, {&narrow}).ok());
  EXPECT_EQ(Read(narrow, 0), 1.0);  // i64 -> i32 wraps
}

TEST(LayoutTest, CastErrors) {
  HostTensor x = HostTensor::Zeros(DType::kF32, {2}), flags = HostTensor::Zeros(DType::kBool, {2});
  EXPECT_EQ(RunKernel("cast", {&x}, {&flags}).code(), absl::StatusCode::kInvalidArgument);
  HostTensor f16 = HostTensor::Zeros(DType::kF16, {2});
  KernelAttrs attrs;
  attrs.Set("dtype", std::string("bf16"));
  EXPECT_EQ(RunKernel("cast", {&x}, {&f16}, attrs).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LayoutTest, TakeRowsAndColumns) {
  HostTensor table = Random(DType::kF16, {5, 3}, 71);
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    HostTensor rows = Make(index_dtype, {2, 2}, {4, 0, 0, 2}), out = HostTensor::Zeros(DType::kF16, {2, 2, 3});
    ASSERT_TRUE(RunKernel("take", {&table, &rows}, {&out}).ok());
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(Read(out, i * 3 + j), Read(table, static_cast<int64_t>(Read(rows, i)) * 3 + j));
    HostTensor cols = Make(index_dtype, {4}, {2, 2, 1, 0}), out_cols = HostTensor::Zeros(DType::kF16, {5, 4});
    KernelAttrs attrs;
    attrs.Set("axis", int64_t{1});
    ASSERT_TRUE(RunKernel("take", {&table, &cols}, {&out_cols}, attrs).ok());
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t k = 0; k < 4; ++k)
        EXPECT_EQ(Read(out_cols, r * 4 + k), Read(table, r * 3 + static_cast<int64_t>(Read(cols, k))));
  }
  HostTensor scalar_index = Make(DType::kI64, {}, {3}), row = HostTensor::Zeros(DType::kF16, {3});
  ASSERT_TRUE(RunKernel("take", {&table, &scalar_index}, {&row}).ok());
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(Read(row, j), Read(table, 9 + j));
}

TEST(LayoutTest, TakeIndexOutOfRangeIsAnError) {
  HostTensor table = HostTensor::Zeros(DType::kF32, {5, 3}), out = HostTensor::Zeros(DType::kF32, {2, 3});
  for (double bad : {5.0, -1.0}) {
    HostTensor indices = Make(DType::kI32, {2}, {1, bad});
    absl::Status s = RunKernel("take", {&table, &indices}, {&out});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("'take'"), std::string::npos) << s;
    EXPECT_NE(s.message().find("out of range"), std::string::npos) << s;
  }
  HostTensor float_indices = HostTensor::Zeros(DType::kF32, {2});
  EXPECT_EQ(RunKernel("take", {&table, &float_indices}, {&out}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vdev::testing
