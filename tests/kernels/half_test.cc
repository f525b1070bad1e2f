// half.h's conversions, exhaustively over every f16 and bf16 bit pattern, and the CPU kernels'
// bulk widening (F16C where the CPU has it) against them.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "internal/cpu_util.h"
#include "vdev/support/half.h"

namespace vdev {
namespace {

bool IsHalfNaN(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool IsBF16NaN(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; }

// Widening then narrowing gives every pattern back; a NaN stays a NaN of the same sign.
void ExpectEveryPatternRoundTrips(float (*widen)(uint16_t), uint16_t (*narrow)(float), bool (*is_nan)(uint16_t)) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = widen(static_cast<uint16_t>(h));
    const uint16_t back = narrow(f);
    if (is_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(is_nan(back)) << h;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << h;
    } else {
      ASSERT_EQ(back, h) << "0x" << std::hex << h;
    }
  }
}

TEST(HalfTest, EveryF16PatternRoundTrips) { ExpectEveryPatternRoundTrips(HalfToFloat, FloatToHalf, IsHalfNaN); }

TEST(HalfTest, EveryBF16PatternRoundTrips) { ExpectEveryPatternRoundTrips(BF16ToFloat, FloatToBF16, IsBF16NaN); }

TEST(HalfTest, F16WideningIsExact) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfToFloat(0xFC00), -INFINITY);
  EXPECT_EQ(FloatToHalf(0.1f), 0x2E66);
}

// Every midpoint between neighbouring f16 values ties to the even one; a hair off it goes to the
// nearer one. Covers subnormals, the normal range and the overflow to infinity at 65520.
TEST(HalfTest, F16RoundsTiesToEven) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double lo = HalfToFloat(static_cast<uint16_t>(h));
    const double hi = h == 0x7BFF ? 65536.0 : HalfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact in f32
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1u) == 0 ? static_cast<uint16_t>(h) : static_cast<uint16_t>(h + 1);
    ASSERT_EQ(FloatToHalf(mid), even) << h;
    ASSERT_EQ(FloatToHalf(-mid), even | 0x8000u) << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, 0.0f)), h) << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, INFINITY)), h + 1) << h;
  }
}

TEST(HalfTest, BF16RoundsTiesToEven) {
  for (uint32_t h = 0; h < 0x7F80; ++h) {
    const float mid = BitsToFloat((h << 16) | 0x8000u);  // halfway to the next bf16
    const uint16_t even = (h & 1u) == 0 ? static_cast<uint16_t>(h) : static_cast<uint16_t>(h + 1);
    ASSERT_EQ(FloatToBF16(mid), even) << h;
    ASSERT_EQ(FloatToBF16(-mid), even | 0x8000u) << h;
    ASSERT_EQ(FloatToBF16(std::nextafter(mid, 0.0f)), h) << h;
    ASSERT_EQ(FloatToBF16(std::nextafter(mid, INFINITY)), h + 1) << h;
  }
}

TEST(HalfTest, OverflowGivesInfinity) {
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToBF16(3.4e38f), 0x7F80);  // rounds past the largest bf16
  EXPECT_EQ(FloatToBF16(INFINITY), 0x7F80);
}

// The bulk widening the kernels use (F16C on x86) gives the same bits as half.h for all patterns.
TEST(HalfTest, BulkWideningMatchesScalarForEveryPattern) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> wide(all.size());
  for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16}) {
    kernels_internal::WidenToFloat(dtype, all.data(), wide.data(), static_cast<int64_t>(all.size()));
    for (uint32_t h = 0; h < 65536; ++h) {
      const float want = dtype == ir::DType::kF16 ? HalfToFloat(all[h]) : BF16ToFloat(all[h]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(wide[h])) << h;
      } else {
        ASSERT_EQ(FloatToBits(wide[h]), FloatToBits(want)) << ir::DTypeName(dtype) << " 0x" << std::hex << h;
      }
    }
  }
}

}  // namespace
}  // namespace vdev
