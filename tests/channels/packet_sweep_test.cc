// The stale-packet sweep's arithmetic (src/channels/internal/layout.h) and what it spares
// (internal/packet_sweep.h): every byte of both scratch halves is zeroed within the sweep's period,
// and no byte an execution's ops touch ever is; which ranks write the packets a reader awaits.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "internal/layout.h"
#include "internal/packet_sweep.h"
#include "vdev/channels/channel_algorithms.h"

namespace vdev::channels::internal {
namespace {

TEST(PacketSweepTest, EveryByteOfBothHalvesIsSweptOncePerPeriod) {
  const uint64_t period = 2 * kPacketSweepEvery * kPacketSweepSlices;
  for (const uint64_t half : {uint64_t{256}, uint64_t{4096}, uint64_t{1} << 20, uint64_t{16} * 1000}) {
    std::vector<int> swept[2] = {std::vector<int>(half / 16), std::vector<int>(half / 16)};
    int sweeping_calls = 0;
    for (uint64_t call = period; call < 2 * period; ++call) {  // one whole period, from a sweeping call
      const Range slice = PacketSweepSlice(call, half);
      if (slice.size() == 0) continue;
      ++sweeping_calls;
      ASSERT_EQ(slice.begin % 16, 0u);
      ASSERT_LE(slice.end, half);
      for (uint64_t line = slice.begin / 16; line < slice.end / 16; ++line) ++swept[call & 1][line];
    }
    EXPECT_LE(sweeping_calls, 2 * static_cast<int>(kPacketSweepSlices)) << half;
    for (int parity = 0; parity < 2; ++parity) {
      for (size_t line = 0; line < half / 16; ++line) {
        ASSERT_EQ(swept[parity][line], 1) << "half " << half << " parity " << parity << " line " << line;
      }
    }
  }
  EXPECT_EQ(PacketSweepSlice(kPacketSweepEvery * 2 + 2, 4096).size(), 0u);  // most calls sweep nothing
  EXPECT_LT(period, uint64_t{1} << 31);                                     // far within the flags' period
}

TEST(PacketSweepTest, ScratchSpanCoversWholePacketLinesOrTheData) {
  // count 5 f32, one chunk per segment: chunk 1 holds elements 5..9, 20 bytes.
  const Range data = ScratchSpan(5, 1, 1, 1, /*packets=*/false, 4);
  EXPECT_EQ(data.begin, 20u);
  EXPECT_EQ(data.end, 40u);
  const Range lines = ScratchSpan(5, 1, 1, 1, /*packets=*/true, 4);
  EXPECT_EQ(lines.begin, 16 * PacketLine(5, 1, 1, 4));
  EXPECT_EQ(lines.size(), 16u * 3);  // 20 bytes: 3 lines of 8
}

TEST(PacketSweepTest, ZeroUnsparedKeepsEverySpanAndClearsTheRestOfTheSlice) {
  std::vector<char> half(256, 1);
  // Unsorted, overlapping, reaching outside the slice [32, 200).
  ZeroUnspared(half.data(), {32, 200}, {{100, 120}, {10, 40}, {110, 130}, {190, 250}, {60, 61}});
  for (size_t b = 0; b < half.size(); ++b) {
    const bool outside = b < 32 || b >= 200;
    const bool spared = (b >= 10 && b < 40) || (b >= 100 && b < 130) || b >= 190 || b == 60;
    EXPECT_EQ(half[b], outside || spared ? 1 : 0) << "byte " << b;
  }
}

TEST(PacketSweepTest, SparesEveryScratchChunkOfTheRankOnlyInPlansWithPackets) {
  for (int world = 2; world <= 8; ++world) {
    for (const std::string& name : ShippedPlanNames()) {
      absl::StatusOr<ProgramSpec> plan = ShippedPlan(name, world);
      ASSERT_TRUE(plan.ok()) << plan.status();
      bool packets = false, scratch = false;
      for (const auto& tbs : plan->ranks) {
        for (const ThreadBlock& tb : tbs) {
          for (const Op& op : tb.ops) {
            packets = packets || op.dst.packets;
            scratch = scratch || (op.dst.rank == 1 && op.dst.buffer == BufferKind::kScratch);
          }
        }
      }
      const std::vector<ChunkRef> spares = SweptScratchSpares(*plan, 1);
      EXPECT_EQ(!spares.empty(), packets && scratch) << name << " world " << world;
      for (const ChunkRef& c : spares) {
        EXPECT_EQ(c.rank, 1) << name;
        EXPECT_EQ(c.buffer, BufferKind::kScratch) << name;
      }
    }
  }
}

// In one_shot_ll rank q writes rank r's scratch chunk q, whichever thread block or channel reads it;
// a chunk no op writes as packets has no writer; a reference over several chunks has all of theirs.
TEST(PacketSweepTest, PacketWritersAreTheRanksWhoseOpsWriteThosePackets) {
  for (int n : {2, 3, 4, 8}) {
    const ProgramSpec plan = *ShippedPlan("one_shot_ll", n);
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        const ChunkRef chunk{r, BufferKind::kScratch, q, 1, true};
        EXPECT_EQ(PacketWriters(plan, chunk), q == r ? std::vector<int>{} : std::vector<int>{q})
            << "world " << n << " rank " << r << " chunk " << q;
      }
      std::vector<int> others;
      for (int q = 0; q < n; ++q) {
        if (q != r) others.push_back(q);
      }
      EXPECT_EQ(PacketWriters(plan, {r, BufferKind::kScratch, 0, n, true}), others) << "world " << n;
    }
  }
  EXPECT_TRUE(PacketWriters(*ShippedPlan("one_shot_push", 4), {1, BufferKind::kScratch, 0, 1, true}).empty());
}

}  // namespace
}  // namespace vdev::channels::internal
