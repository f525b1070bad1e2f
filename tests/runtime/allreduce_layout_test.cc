// The LL flag and sweep arithmetic that the CUDA LL kernels rest on (internal/allreduce_layout.h).
#include "internal/allreduce_layout.h"

#include <algorithm>
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

// The fused all-reduce + add + rms_norm's grid: whole 16-byte packs per row, one block per row up to
// the cap, a warp-multiple block holding the row in 1, 2 or 4 packs a thread.
TEST(FusedNormGridTest, OneBlockPerRowUpToTheCapAndEveryPackHeld) {
  for (size_t elem : {size_t{2}, size_t{4}}) {
    for (size_t hidden = 16 / elem; hidden * elem <= size_t{8192} * FusedNormMaxPacks(elem); hidden += 16 / elem * 37) {
      for (size_t rows : {size_t{1}, size_t{127}, size_t{128}, size_t{129}, size_t{2048}}) {
        const FusedNormGrid g = PlanFusedNormGrid(rows, hidden, elem, 128);
        const size_t packs = hidden * elem / 16;
        ASSERT_GT(g.blocks, 0) << rows << "x" << hidden;
        EXPECT_EQ(static_cast<size_t>(g.blocks), std::min<size_t>(rows, 128));
        EXPECT_EQ(g.threads % 32, 0);
        EXPECT_LE(g.threads, kFusedNormMaxThreads);
        EXPECT_TRUE(g.packs == 1 || g.packs == 2 || g.packs == 4);
        EXPECT_LE(g.packs, FusedNormMaxPacks(elem));
        EXPECT_GE(static_cast<size_t>(g.threads) * g.packs, packs) << hidden;  // the whole row held
        if (g.packs == 1) {
          EXPECT_LT(static_cast<size_t>(g.threads), packs + 32) << hidden;  // no idle warp
        } else {
          EXPECT_LT(static_cast<size_t>(g.threads) * (g.packs / 2), packs) << hidden;  // half as many would not do
        }
      }
    }
  }
  EXPECT_EQ(PlanFusedNormGrid(256, 4096, 2, 128).threads, 512);
  EXPECT_EQ(PlanFusedNormGrid(256, 4096, 2, 128).packs, 1);
  EXPECT_EQ(PlanFusedNormGrid(1, 8192, 4, 128).packs, 4);
}

TEST(FusedNormGridTest, RefusesPartialPacksLongRowsAndEmptyCalls) {
  EXPECT_EQ(PlanFusedNormGrid(4, 7, 2, 128).blocks, 0);     // 14-byte rows
  EXPECT_EQ(PlanFusedNormGrid(4, 8196, 2, 128).blocks, 0);  // 16392 bytes: more than 1024 packs
  EXPECT_EQ(PlanFusedNormGrid(4, 8200, 2, 128).blocks, 0);  // 1025 packs of bf16
  EXPECT_GT(PlanFusedNormGrid(4, 8192, 2, 128).blocks, 0);  // 1024 packs
  EXPECT_EQ(PlanFusedNormGrid(4, 8196, 4, 128).blocks, 0);  // 2049 packs of f32
  EXPECT_GT(PlanFusedNormGrid(4, 8192, 4, 128).blocks, 0);  // 2048 packs
  EXPECT_EQ(PlanFusedNormGrid(0, 4096, 2, 128).blocks, 0);
  EXPECT_EQ(PlanFusedNormGrid(4, 0, 2, 128).blocks, 0);
}

TEST(FusedNormGridTest, BlockCapLeavesRoomForEverySharingWorkersGrids) {
  EXPECT_EQ(FusedNormBlockCap(132, 1, 256), 256);  // an H100 of its own: 264 resident, the epochs cap
  EXPECT_EQ(FusedNormBlockCap(100, 1, 256), 200);
  for (int sharing = 2; sharing <= 8; ++sharing) {
    const int cap = FusedNormBlockCap(132, sharing, 256);
    EXPECT_LE(2 * sharing * cap, 2 * 132) << sharing;  // every worker's current and next grid resident
    EXPECT_GE(cap, 1);
  }
  EXPECT_EQ(FusedNormBlockCap(4, 8, 256), 1);
}

}  // namespace
}  // namespace vdev::internal
