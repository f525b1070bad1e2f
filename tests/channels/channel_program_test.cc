// The channel language's validator and the JSON execution plans: every shipped plan is valid and
// round-trips; each kind of bad program is rejected with a message naming what is wrong.
#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_plan.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Error(absl::StatusOr<ProgramSpec> p) {
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : std::string(p.status().message());
}

// The ordering skeleton most tests start from: rank 0 puts its input into rank 1's scratch; rank 1
// copies it into its output. Broadcast from 0 over 2 ranks, with rank 0's own output copied.
struct PutThenCopy {
  PutThenCopy(Sync put_sync, Sync signal_sync, bool relaxed, bool ack = true)
      : p("t", Collective::kBroadcast, 2, 1, 1) {
    MemoryChannel c01 = p.AddMemoryChannel(1, 0), c10 = p.AddMemoryChannel(0, 1);
    p.Copy(0, p.Output(0, 0), p.Input(0, 0));
    c01.Put(0, p.Scratch(1, 0), p.Input(0, 0), put_sync);
    c01.Signal(0, signal_sync, relaxed);
    c10.Wait(0, Sync::kAfter, relaxed);
    p.Copy(0, p.Output(1, 0), p.Scratch(1, 0));
    if (ack) {
      c10.Signal(0);
      c01.Wait(0);
    }
  }
  Program p;
};

TEST(ChannelProgramTest, EveryShippedPlanIsValidForWorldsOneToEight) {
  for (const std::string& name : ShippedPlanNames()) {
    for (int n = 1; n <= 8; ++n) {
      absl::StatusOr<ProgramSpec> plan = ShippedPlan(name, n);
      ASSERT_TRUE(plan.ok()) << name << " " << n << ": " << plan.status();
      EXPECT_EQ(plan->world_size, n);
      EXPECT_EQ(plan->name, name);
    }
  }
  EXPECT_EQ(ShippedPlan("nope", 2).status().code(), absl::StatusCode::kNotFound);
}

TEST(ChannelProgramTest, OrderedPutSignalWaitIsAccepted) {
  EXPECT_TRUE(std::move(PutThenCopy(Sync::kNone, Sync::kBefore, false).p).Build().ok());
}

TEST(ChannelProgramTest, RankOutOfRangeIsRejected) {
  Program p("t", Collective::kAllReduce, 2);
  p.AddMemoryChannel(2, 0);
  EXPECT_THAT(Error(std::move(p).Build()), AllOf(HasSubstr("memory channel 0 (0->2)"), HasSubstr("ranks are 0..1")));
  Program q("t", Collective::kAllReduce, 2);
  q.Copy(0, q.Output(3, 0), q.Input(3, 0));
  EXPECT_THAT(Error(std::move(q).Build()), HasSubstr("copy on rank 3: the program has ranks 0..1"));
}

TEST(ChannelProgramTest, ChunkOfTheWrongRankForItsChannelIsRejected) {
  Program p("t", Collective::kAllReduce, 3, 1, 1);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0);
  c01.Put(0, p.Scratch(2, 0), p.Input(0, 0));
  EXPECT_THAT(Error(std::move(p).Build()),
              HasSubstr("rank 0 tb 0 op 0 (put): the destination scratch chunk 0 of rank 2 must be on rank 1"));
}

TEST(ChannelProgramTest, ChunkOutOfRangeIsRejected) {
  Program p("t", Collective::kAllReduce, 2, 2);
  p.Copy(0, p.Output(0, 1), p.Input(0, 3));
  EXPECT_THAT(Error(std::move(p).Build()),
              HasSubstr("input chunk 3 of rank 0 is out of range: the input has chunks 0..1"));
}

TEST(ChannelProgramTest, ChunksOfDifferentSizesAreRejected) {
  Program p("t", Collective::kAllReduce, 1, 2);
  p.Copy(0, p.Output(0, 0), p.Input(0, 1));
  EXPECT_THAT(Error(std::move(p).Build()), HasSubstr("differ in size"));
}

TEST(ChannelProgramTest, WaitWithNoMatchingSignalIsADeadlock) {
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0);
  p.AddMemoryChannel(0, 1);
  c01.Wait(0);
  EXPECT_THAT(Error(std::move(p).Build()),
              AllOf(HasSubstr("rank 0 tb 0 op 0 (wait)"), HasSubstr("wait with no matching signal")));
}

TEST(ChannelProgramTest, WaitsBeforeSignalsOnBothSidesDeadlock) {
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0), c10 = p.AddMemoryChannel(0, 1);
  c01.Wait(0);
  c01.Signal(0);
  c10.Wait(0);
  c10.Signal(0);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  p.Copy(0, p.Output(1, 0), p.Input(1, 0));
  EXPECT_THAT(Error(std::move(p).Build()),
              AllOf(HasSubstr("deadlock"), HasSubstr("rank 0 tb 0 op 0 (wait) waits for signal #1 from rank 1"),
                    HasSubstr("rank 1 tb 0 op 0 (wait) waits for signal #1 from rank 0")));
}

TEST(ChannelProgramTest, APortSignalDoesNotMeetAMemoryChannelsWait) {
  // Between the same ranks with the same tag, port channels count in semaphores of their own.
  Program p("t", Collective::kAllReduce, 2);
  PortChannel port01 = p.AddPortChannel(1, 0);
  p.AddMemoryChannel(1, 0);
  MemoryChannel c10 = p.AddMemoryChannel(0, 1);
  port01.Signal(0);
  c10.Wait(0);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  p.Copy(0, p.Output(1, 0), p.Input(1, 0));
  EXPECT_THAT(Error(std::move(p).Build()),
              AllOf(HasSubstr("rank 1 tb 0 op 0 (wait) waits on the channel from rank 0 (tag 0)"),
                    HasSubstr("wait with no matching signal")));
}

TEST(ChannelProgramTest, APortWaitWithNoPortSignalIsADeadlock) {
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0), c10 = p.AddMemoryChannel(0, 1);
  p.AddPortChannel(1, 0);
  PortChannel port10 = p.AddPortChannel(0, 1);
  c01.Signal(0);
  c10.Wait(0);  // met by the memory signal; the port wait after it by nothing
  port10.Wait(0);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  p.Copy(0, p.Output(1, 0), p.Input(1, 0));
  EXPECT_THAT(Error(std::move(p).Build()),
              AllOf(HasSubstr("rank 1 tb 0 op 1 (port_wait) waits on the port channel from rank 0 (tag 0)"),
                    HasSubstr("wait with no matching signal")));
}

TEST(ChannelProgramTest, SignalNeverWaitedForIsRejected) {
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0);
  c01.Signal(0);
  EXPECT_THAT(Error(std::move(p).Build()),
              HasSubstr("rank 0 signals rank 1 (tag 0) 1 times per execution but rank 1 waits 0"));
}

TEST(ChannelProgramTest, SignalWithoutDataSyncAfterPutIsARace) {
  EXPECT_THAT(Error(std::move(PutThenCopy(Sync::kNone, Sync::kNone, false).p).Build()),
              AllOf(HasSubstr("race in execution 1: rank 1 tb 0 op 1 (copy) reads scratch (half 1) chunk 0 of rank 1"),
                    HasSubstr("rank 0 tb 0 op 1 (put)'s write")));
}

TEST(ChannelProgramTest, RelaxedSignalOrdersNoData) {
  EXPECT_THAT(Error(std::move(PutThenCopy(Sync::kNone, Sync::kBefore, true).p).Build()), HasSubstr("race"));
}

TEST(ChannelProgramTest, OverlappingWritesWithoutSyncAreRejected) {
  Program p("t", Collective::kAllReduce, 1);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  p.Reduce(1, p.Output(0, 0), {p.Input(0, 0)});
  EXPECT_THAT(Error(std::move(p).Build()), AllOf(HasSubstr("rank 0 tb 1 op 0 (reduce) writes output chunk 0 of rank 0"),
                                                 HasSubstr("rank 0 tb 0 op 0 (copy)'s write")));
  Program q("t", Collective::kAllReduce, 1);
  q.Copy(0, q.Output(0, 0), q.Input(0, 0));
  q.Reduce(0, q.Output(0, 0), {q.Input(0, 0)});  // same thread block, no sync between
  EXPECT_THAT(Error(std::move(q).Build()), HasSubstr("race"));
  Program ok("t", Collective::kAllReduce, 1);
  ok.Copy(0, ok.Output(0, 0), ok.Input(0, 0));
  ok.Reduce(0, ok.Output(0, 0), {ok.Input(0, 0)}, Sync::kBefore);
  EXPECT_TRUE(std::move(ok).Build().ok());
}

TEST(ChannelProgramTest, RewritingAnInputAPeerMayStillReadIsARace) {
  // One-shot without its exit barrier: rank 0's next input may land while rank 1 still sums.
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0), c10 = p.AddMemoryChannel(0, 1);
  for (auto [r, ch] : {std::pair{0, c01}, std::pair{1, c10}}) {
    ch.Signal(0);
    ch.Wait(0);
    ch.Reduce(0, p.Output(r, 0), {p.Input(0, 0), p.Input(1, 0)});
  }
  EXPECT_THAT(Error(std::move(p).Build()),
              AllOf(HasSubstr("race in execution 1: rank 0 tb 0 op 2 (reduce) reads input chunk 0 of rank 1"),
                    HasSubstr("rank 1's caller's write of it (execution 2)")));
}

TEST(ChannelProgramTest, WrongResultIsRejected) {
  Program p("t", Collective::kAllReduce, 2);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  p.Copy(0, p.Output(1, 0), p.Input(1, 0));
  EXPECT_THAT(Error(std::move(p).Build()),
              HasSubstr("output chunk 0 of rank 0 holds {r0.0} but the allreduce needs {r0.0 + r1.0}"));
}

TEST(ChannelProgramTest, PacketsOverwrittenBeforeReadAreRejected) {
  // Rank 0 streams packets to rank 1 with nothing from rank 1 ever holding it back.
  Program p("t", Collective::kBroadcast, 2, 1, 1);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  c01.PutPackets(0, p.Scratch(1, 0), p.Input(0, 0));
  p.Copy(0, p.Output(1, 0), p.Scratch(1, 0).AsPackets());
  EXPECT_THAT(Error(std::move(p).Build()), HasSubstr("rank 0 tb 0 op 1 (put_packets) writes scratch"));
}

TEST(ChannelProgramTest, SharedChannelAcrossThreadBlocksIsRejected) {
  Program p("t", Collective::kAllReduce, 2);
  MemoryChannel c01 = p.AddMemoryChannel(1, 0);
  c01.Signal(0);
  c01.Signal(1);
  EXPECT_THAT(Error(std::move(p).Build()), HasSubstr("already signals or waits in tb 0"));
}

TEST(ChannelProgramTest, ThreadBlockGroupSplitsAnOpWithoutRacing) {
  Program p("t", Collective::kAllReduce, 1);
  p.Copy(Tb(0, 4), p.Output(0, 0), p.Input(0, 0));
  absl::StatusOr<ProgramSpec> plan = std::move(p).Build();
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->ranks[0].size(), 4u);
  EXPECT_EQ(plan->ranks[0][3].ops[0].part, 3);
  EXPECT_EQ(plan->ranks[0][3].ops[0].parts, 4);
}

TEST(ChannelPlanTest, EveryShippedPlanRoundTripsThroughJson) {
  for (const std::string& name : ShippedPlanNames()) {
    for (int n : {2, 5, 8}) {
      ProgramSpec plan = *ShippedPlan(name, n);
      absl::StatusOr<ProgramSpec> back = PlanFromJson(PlanToJson(plan));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_TRUE(*back == plan) << name << " " << n;
      EXPECT_EQ(PlanToJson(*back), PlanToJson(plan));
    }
  }
}

TEST(ChannelPlanTest, LoadsFromAFile) {
  const std::string path = ::testing::TempDir() + "/two_shot.json";
  std::ofstream(path) << PlanToJson(*ShippedPlan("two_shot", 3));
  absl::StatusOr<ProgramSpec> plan = LoadPlanFile(path);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->chunks_per_segment, 3);
  std::remove(path.c_str());
  EXPECT_EQ(LoadPlanFile(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(ChannelPlanTest, SyntaxErrorNamesLineAndColumn) {
  EXPECT_THAT(std::string(PlanFromJson("{\n  \"format\": ,\n}", "p.json").status().message()),
              HasSubstr("p.json:2:13: error:"));
}

// Found by channel_plan_fuzzer: nlohmann throws out_of_range, not parse_error, for a number too large
// for a double, and it escaped PlanFromJson (an abort).
TEST(ChannelPlanTest, NumberOutOfRangeIsAnErrorWithItsPlace) {
  absl::StatusOr<ProgramSpec> plan = PlanFromJson("{\n  \"world_size\": 2,\n  \"format\": 3e333\n}", "p.json");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(plan.status().message()), "p.json:3:13: error: number overflow parsing '3e333'");
}

TEST(ChannelPlanTest, BadFieldIsNamedByItsPath) {
  std::string text = PlanToJson(*ShippedPlan("one_shot", 2));
  const size_t at = text.find("\"op\": \"signal\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 14, "\"op\": \"sginal\"");
  EXPECT_THAT(std::string(PlanFromJson(text, "p.json").status().message()),
              AllOf(HasSubstr("p.json: ranks[0].thread_blocks[0].ops[0].op: expected one of put, get"),
                    HasSubstr("found \"sginal\"")));
}

TEST(ChannelPlanTest, InvalidProgramInAFileIsRejectedByTheValidator) {
  std::string text = PlanToJson(*ShippedPlan("one_shot", 2));
  const size_t at = text.find("\"op\": \"signal\"");
  text.replace(at, 14, "\"op\": \"wait\"  ");
  EXPECT_THAT(std::string(PlanFromJson(text, "p.json").status().message()), HasSubstr("p.json: program one_shot:"));
}

TEST(ChannelPlanTest, StrategyNames) {
  EXPECT_EQ(*PlanNameFromStrategy("plan:two_shot"), "two_shot");
  EXPECT_FALSE(PlanNameFromStrategy("plan:").ok());
  EXPECT_FALSE(PlanNameFromStrategy("two_shot").ok());
  EXPECT_FALSE(PlanNameFromStrategy("plan:Two Shot").ok());
}

}  // namespace
}  // namespace vdev::channels
