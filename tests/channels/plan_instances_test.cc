// The CUDA executor's choice of instances (internal/plan_instances.h; no GPU needed): the same on
// every rank, every rank's grid within the launch limit, one for plans with port channels.
#include "internal/plan_instances.h"

#include "channels/uneven_thread_blocks_program.h"
#include "gtest/gtest.h"
#include "vdev/channels/channel_algorithms.h"

namespace vdev::channels::internal {
namespace {

using ::vdev::channels::testing::UnevenThreadBlocksBroadcast;

TEST(PlanInstancesTest, TheBusiestRanksThreadBlocksCapEveryRanksInstances) {
  // Rank 0 has 17 thread blocks, rank 1 one: 256 / 17 = 15 instances for both, where rank 1 alone
  // would take 32 at 1 MB and wait for semaphores of instances rank 0 never launches.
  const ProgramSpec plan = *UnevenThreadBlocksBroadcast(/*copy_blocks=*/16, /*port=*/false);
  ASSERT_EQ(plan.ranks[0].size(), 17u);
  ASSERT_EQ(plan.ranks[1].size(), 1u);
  EXPECT_EQ(MostThreadBlocks(plan), 17);
  EXPECT_EQ(MostInstances(plan), 15);
  const int instances =
      InstancesBySize(plan, size_t{1} << 20, /*packets=*/false, /*ports=*/false, /*resident_blocks=*/0);
  EXPECT_EQ(instances, 15);
  for (const auto& tbs : plan.ranks) EXPECT_LE(static_cast<int>(tbs.size()) * instances, kMaxPlanBlocks);
}

TEST(PlanInstancesTest, InstancesGrowWithTheSegmentUpToTheirCap) {
  const ProgramSpec plan = *ShippedPlan("one_shot", 2);
  EXPECT_EQ(InstancesBySize(plan, 4096, false, false, 0), 1);
  EXPECT_EQ(InstancesBySize(plan, 4097, false, false, 0), 2);
  EXPECT_EQ(InstancesBySize(plan, size_t{1} << 20, false, false, 0), 32);
  EXPECT_EQ(InstancesBySize(plan, 1024 * 100, /*packets=*/true, false, 0), 100);
  EXPECT_EQ(InstancesBySize(plan, size_t{1} << 20, /*packets=*/true, false, 0), 128);
}

TEST(PlanInstancesTest, PlansWithPortChannelsRunOneInstance) {
  const ProgramSpec plan = *UnevenThreadBlocksBroadcast(/*copy_blocks=*/4, /*port=*/true);
  for (const size_t bytes : {size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    EXPECT_EQ(InstancesBySize(plan, bytes, /*packets=*/false, /*ports=*/true, 132), 1) << bytes;
  }
}

TEST(PlanInstancesTest, SegmentsAboveOneMegabyteRunAsManyInstancesAsEveryGpuHolds) {
  const ProgramSpec one_shot = *ShippedPlan("one_shot", 2);
  ASSERT_EQ(MostThreadBlocks(one_shot), 1);
  const size_t wide = kWideSegmentBytes + 4096;
  EXPECT_EQ(InstancesBySize(one_shot, kWideSegmentBytes, false, false, 132), 32);
  EXPECT_EQ(InstancesBySize(one_shot, wide, false, false, 132), 132);
  EXPECT_EQ(InstancesBySize(one_shot, size_t{64} << 20, false, false, 132), 132);
  EXPECT_EQ(InstancesBySize(one_shot, size_t{64} << 20, false, false, /*resident_blocks=*/0), 32);
  // The busiest rank's 17 blocks: 132 / 17 = 7 lifts nothing; the launch limit (256 / 17 = 15) stays.
  const ProgramSpec uneven = *UnevenThreadBlocksBroadcast(/*copy_blocks=*/16, /*port=*/false);
  EXPECT_EQ(InstancesBySize(uneven, size_t{64} << 20, false, false, 132), 15);
  // LL packets keep their own cap.
  EXPECT_EQ(InstancesBySize(one_shot, size_t{64} << 20, /*packets=*/true, false, 132), 128);
  for (int ranks = 2; ranks <= 8; ++ranks) {
    for (const char* name : {"one_shot", "one_shot_push", "two_shot"}) {
      const ProgramSpec plan = *ShippedPlan(name, ranks);
      const int instances = InstancesBySize(plan, size_t{64} << 20, false, false, 132);
      for (const auto& tbs : plan.ranks) {
        EXPECT_LE(static_cast<int>(tbs.size()) * instances, std::max(132, 32 * static_cast<int>(tbs.size())))
            << name << " on " << ranks;
      }
    }
  }
}

TEST(PlanInstancesTest, ResidentBlocksAreTheFewestSmsOfDistinctGpus) {
  EXPECT_EQ(CommonResidentBlocks({"132 00000000:18:00.0", "132 00000000:2A:00.0"}), 132);
  EXPECT_EQ(CommonResidentBlocks({"132 00000000:18:00.0", "114 00000000:2A:00.0"}), 114);
  // Two ranks on one GPU share its SMs: unknown, so the 32-instance cap holds.
  EXPECT_EQ(CommonResidentBlocks({"132 00000000:18:00.0", "132 00000000:18:00.0"}), 0);
  EXPECT_EQ(CommonResidentBlocks({"132", "132 00000000:2A:00.0"}), 0);
  EXPECT_EQ(CommonResidentBlocks({"x 00000000:18:00.0"}), 0);
}

}  // namespace
}  // namespace vdev::channels::internal
