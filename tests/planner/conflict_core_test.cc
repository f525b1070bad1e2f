// The Z3 conflict core: smallest conflicting pin sets, re-checked in plain C++.
#include "src/planner/conflict_core.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vdev::planner_internal {
namespace {

using ::testing::ElementsAre;

VirtualDevice Vd(absl::string_view text) { return *ParseVirtualDevice(text); }

TEST(ConflictCoreTest, FindsTheTwoPinsThatClash) {
  // 0 - 1 - 2   3 - 4: pins on 0 (cpu:0), 2 (cuda), 3 (cuda:1), 4 (/global), 1 (*:0).
  ConflictProblem problem;
  problem.num_nodes = 5;
  problem.equalities = {{0, 1}, {1, 2}, {3, 4}};
  problem.pins = {{3, Vd("cuda:1")}, {1, Vd("*:0")}, {4, Vd("/global")}, {0, Vd("cpu:0")}, {2, Vd("cuda")}};
  absl::StatusOr<std::vector<size_t>> core = FindMinimalConflict(problem);
  ASSERT_TRUE(core.ok()) << core.status();
  // Pins 3 (cpu) and 4 (cuda) clash on the device type; pin 1 (id 0) agrees with both.
  EXPECT_THAT(*core, ElementsAre(3, 4));
}

TEST(ConflictCoreTest, ScopesAndIdsClashFieldByField) {
  ConflictProblem problem;
  problem.num_nodes = 3;
  problem.equalities = {{0, 1}, {1, 2}};
  problem.pins = {{0, Vd("cuda/global")}, {1, Vd("*:1")}, {2, Vd("/shared")}};
  absl::StatusOr<std::vector<size_t>> core = FindMinimalConflict(problem);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_THAT(*core, ElementsAre(0, 2));
}

TEST(ConflictCoreTest, ConsistentPinsAreNotFound) {
  ConflictProblem problem;
  problem.num_nodes = 2;
  problem.equalities = {{0, 1}};
  problem.pins = {{0, Vd("cuda")}, {1, Vd("*:0/global")}};
  EXPECT_TRUE(absl::IsNotFound(FindMinimalConflict(problem).status()));
  EXPECT_TRUE(PinsHoldTogether(problem, {0, 1}));
}

TEST(ConflictCoreTest, PlainCheckAgreesOnUnconnectedNodes) {
  ConflictProblem problem;
  problem.num_nodes = 2;
  problem.pins = {{0, Vd("cpu:0")}, {1, Vd("cuda:0")}};
  EXPECT_TRUE(PinsHoldTogether(problem, {0, 1}));
  problem.equalities = {{1, 0}};
  EXPECT_FALSE(PinsHoldTogether(problem, {0, 1}));
}

TEST(ConflictCoreTest, TargetsClashWithOtherTargets) {
  ConflictProblem problem;
  problem.num_nodes = 2;
  problem.equalities = {{0, 1}};
  problem.pins = {{0, Vd("cuda[cuda -arch=sm_90]")}, {1, Vd("cuda[cuda -arch=sm_80]")}};
  absl::StatusOr<std::vector<size_t>> core = FindMinimalConflict(problem);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_THAT(*core, ElementsAre(0, 1));
}

// The budget is Z3's resource count, not time: the same problem is refused under a small budget and
// explained under the default one, on any machine and under any load.
TEST(ConflictCoreTest, ResourceLimitIsDeterministic) {
  ConflictProblem problem;
  problem.num_nodes = 2000;
  for (uint32_t i = 0; i + 1 < problem.num_nodes; ++i) problem.equalities.emplace_back(i, i + 1);
  problem.pins = {{0, Vd("cpu:0")}, {1999, Vd("cuda:0")}};
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::vector<size_t>> starved = FindMinimalConflict(problem, nullptr, /*resource_limit=*/1000);
    EXPECT_EQ(starved.status().code(), absl::StatusCode::kResourceExhausted) << starved.status();
  }
  absl::StatusOr<std::vector<size_t>> core = FindMinimalConflict(problem);
  ASSERT_TRUE(core.ok()) << core.status();
  EXPECT_THAT(*core, ElementsAre(0, 1));
}

}  // namespace
}  // namespace vdev::planner_internal
