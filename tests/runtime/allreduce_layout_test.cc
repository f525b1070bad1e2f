// The LL flag and sweep arithmetic that the CUDA LL kernels rest on (internal/allreduce_layout.h).
#include "internal/allreduce_layout.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace vdev::internal {
namespace {

constexpr uint64_t kWrap = uint64_t{1} << 32;

TEST(LLFlagTest, NeverZero) {
  for (uint64_t base : {uint64_t{0}, kWrap / 2, kWrap, 3 * kWrap, uint64_t{1} << 63}) {
    for (uint64_t call = base == 0 ? 1 : base - 3; call <= base + 3; ++call) EXPECT_NE(LLFlag(call), 0u) << call;
  }
}

TEST(LLFlagTest, DistinctForCallsLessThanAPeriodApart) {
  const uint64_t period = kWrap / 2;
  for (uint64_t a : {uint64_t{1}, period - 5, kWrap - 1, kWrap, 5 * kWrap + 7}) {
    for (uint64_t d : {uint64_t{1}, uint64_t{2}, uint64_t{3}, 2 * kLLSweepEvery * kLLSweepSlices + 2, period - 1}) {
      EXPECT_NE(LLFlag(a), LLFlag(a + d)) << a << " + " << d;
    }
    EXPECT_EQ(LLFlag(a), LLFlag(a + period)) << "the period is 2^31";
  }
}

// Over any 2 * kLLSweepEvery * kLLSweepSlices consecutive calls, the calls of each parity sweep every
// line of their half, whatever the half's size; no slice leaves the half.
TEST(LLSweepTest, ConsecutiveCallsSweepEveryLineOfBothHalves) {
  for (size_t lines : {size_t{1}, size_t{15}, size_t{65535}, size_t{65536}, size_t{65537}, size_t{1000003}}) {
    for (uint64_t start : {uint64_t{1}, uint64_t{12345}, kWrap - 7}) {
      std::vector<int> starts[2] = {std::vector<int>(lines + 1), std::vector<int>(lines + 1)};  // difference arrays
      for (uint64_t call = start; call < start + 2 * kLLSweepEvery * kLLSweepSlices; ++call) {
        const LineSpan s = LLSweepSlice(call, lines);
        ASSERT_LE(s.lo, s.hi);
        ASSERT_LE(s.hi, lines);
        ++starts[call & 1][s.lo];
        --starts[call & 1][s.hi];
      }
      for (int parity : {0, 1}) {
        int covering = 0;
        for (size_t line = 0; line < lines; ++line) {
          covering += starts[parity][line];
          ASSERT_GT(covering, 0) << "line " << line << " of " << lines << ", half " << parity << ", from call "
                                 << start;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vdev::internal
