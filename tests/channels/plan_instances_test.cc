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
  const int instances = InstancesBySize(plan, size_t{1} << 20, /*packets=*/false, /*ports=*/false);
  EXPECT_EQ(instances, 15);
  for (const auto& tbs : plan.ranks) EXPECT_LE(static_cast<int>(tbs.size()) * instances, kMaxPlanBlocks);
}

TEST(PlanInstancesTest, InstancesGrowWithTheSegmentUpToTheirCap) {
  const ProgramSpec plan = *ShippedPlan("one_shot", 2);
  EXPECT_EQ(InstancesBySize(plan, 4096, false, false), 1);
  EXPECT_EQ(InstancesBySize(plan, 4097, false, false), 2);
  EXPECT_EQ(InstancesBySize(plan, size_t{1} << 20, false, false), 32);
  EXPECT_EQ(InstancesBySize(plan, 1024 * 100, /*packets=*/true, false), 100);
  EXPECT_EQ(InstancesBySize(plan, size_t{1} << 20, /*packets=*/true, false), 128);
}

TEST(PlanInstancesTest, PlansWithPortChannelsRunOneInstance) {
  const ProgramSpec plan = *UnevenThreadBlocksBroadcast(/*copy_blocks=*/4, /*port=*/true);
  for (const size_t bytes : {size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    EXPECT_EQ(InstancesBySize(plan, bytes, /*packets=*/false, /*ports=*/true), 1) << bytes;
  }
}

}  // namespace
}  // namespace vdev::channels::internal
