// SolvePlacement against an exhaustive search written here: random models of up to 12 variables and
// 2-4 devices (forbidden devices, pairs in cycles, parallel pairs, fixed variables), with and without
// capacity cuts.
#include "src/planner/placement_solver.h"

#include <vector>

#include "gtest/gtest.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"

namespace vdev::planner_internal {
namespace {

// Every assignment, odometer order; kForbidden when none is allowed (within the capacity cuts).
Cost ExhaustiveOptimum(const PlacementModel& model) {
  const size_t n = model.unary.size();
  std::vector<int> device(n, 0);
  Cost best = kForbidden;
  while (true) {
    if (CapacityHolds(model, device)) best = std::min(best, PlacementCost(model, device));
    size_t k = 0;
    while (k < n && ++device[k] == model.num_devices) device[k++] = 0;
    if (k == n) return best;
  }
}

// `dense`: at least 4 variables and 2-4 pairs per variable, so that most of them keep three or more
// neighbours and reach Z3.
PlacementModel RandomModel(bool dense) {
  PlacementModel m;
  m.num_devices = *rc::gen::inRange(2, 5);
  const int n = *rc::gen::inRange(dense ? 4 : 1, 13);
  for (int v = 0; v < n; ++v) {
    std::vector<Cost> unary(m.num_devices);
    for (Cost& c : unary) c = *rc::gen::weightedOneOf<Cost>({{1, rc::gen::just(kForbidden)}, {5, rc::gen::inRange<Cost>(0, 100)}});
    unary[*rc::gen::inRange(0, m.num_devices)] = *rc::gen::inRange<Cost>(0, 100);  // one allowed at least
    m.unary.push_back(std::move(unary));
  }
  const int pairs = dense ? *rc::gen::inRange(2 * n, 4 * n) : *rc::gen::inRange(n / 2, 3 * n);
  for (int k = 0; k < pairs; ++k) {
    PlacementModel::Pair p;
    p.a = *rc::gen::inRange<uint32_t>(0, n);
    p.b = *rc::gen::inRange<uint32_t>(0, n);
    for (int i = 0; i < m.num_devices; ++i) {
      for (int j = 0; j < m.num_devices; ++j) p.cost.push_back(i == j ? 0 : *rc::gen::inRange<Cost>(0, 60));
    }
    m.pairs.push_back(std::move(p));
  }
  return m;
}

void CheckAgainstExhaustive(bool dense) {
  PlacementModel model = RandomModel(dense);
  absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, {});
  RC_ASSERT(solution.ok());
  RC_ASSERT(solution->optimal);
  RC_ASSERT(solution->device.size() == model.unary.size());
  RC_ASSERT(solution->cost == PlacementCost(model, solution->device));
  RC_ASSERT(solution->cost == ExhaustiveOptimum(model));
  RC_CLASSIFY(solution->z3_variables > 0, "Z3 used");
}

RC_GTEST_PROP(PlacementSolverTest, CostEqualsAnExhaustiveSearch, ()) { CheckAgainstExhaustive(/*dense=*/false); }

// Cuts of 1-6 terms (some conditioned on another variable), limits from none of the terms' bytes to
// all of them: some models become infeasible, most change their optimum.
RC_GTEST_PROP(PlacementSolverTest, WithCapacityCutsCostEqualsAnExhaustiveSearch, ()) {
  PlacementModel model = RandomModel(/*dense=*/false);
  const uint32_t n = static_cast<uint32_t>(model.unary.size());
  const int cuts = *rc::gen::inRange(1, 4);
  for (int c = 0; c < cuts; ++c) {
    PlacementModel::CapacityCut cut;
    cut.device = *rc::gen::inRange(0, model.num_devices);
    int64_t total = 0;
    const int terms = *rc::gen::inRange(1, 7);
    for (int k = 0; k < terms; ++k) {
      PlacementModel::CapacityCut::Term t;
      t.var = *rc::gen::inRange<uint32_t>(0, n);
      if (*rc::gen::inRange(0, 3) == 0) t.other = *rc::gen::inRange<uint32_t>(0, n);
      t.bytes = *rc::gen::inRange<int64_t>(1, 1000);
      total += t.bytes;
      cut.terms.push_back(t);
    }
    cut.limit = *rc::gen::inRange<int64_t>(0, total + 1);
    model.capacity.push_back(std::move(cut));
  }
  const Cost expected = ExhaustiveOptimum(model);
  absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, {});
  RC_CLASSIFY(expected == kForbidden, "infeasible");
  if (expected == kForbidden) {
    RC_ASSERT(!solution.ok());
    RC_ASSERT(absl::IsFailedPrecondition(solution.status()) || absl::IsInvalidArgument(solution.status()));
    return;
  }
  RC_ASSERT(solution.ok());
  RC_ASSERT(solution->optimal);
  RC_ASSERT(CapacityHolds(model, solution->device));
  RC_ASSERT(solution->cost == PlacementCost(model, solution->device));
  RC_ASSERT(solution->cost == expected);
}

TEST(PlacementSolverTest, ACapacityCutSplitsTwoVariablesThatPreferOneDevice) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{5, 1}, {5, 1}};  // both prefer device 1
  m.capacity.push_back({.device = 1, .limit = 100, .terms = {{0, UINT32_MAX, 60}, {1, UINT32_MAX, 60}}});
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cost, 6);
  EXPECT_NE(s->device[0], s->device[1]);
  EXPECT_EQ(s->z3_variables, 2u);  // named by a cut: not eliminated
  m.unary = {{kForbidden, 1}, {kForbidden, 1}};  // both fixed to device 1: nothing fits
  EXPECT_TRUE(absl::IsFailedPrecondition(SolvePlacement(m, {}).status()));
}

RC_GTEST_PROP(PlacementSolverTest, DenseModelsCostEqualsAnExhaustiveSearch, ()) {
  CheckAgainstExhaustive(/*dense=*/true);
}

TEST(PlacementSolverTest, HeaderExample) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{5, 1}, {1, 5}};
  m.pairs.push_back({0, 1, {0, 3, 3, 0}});
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->device, (std::vector<int>{1, 0}));
  EXPECT_EQ(s->cost, 5);
  EXPECT_TRUE(s->optimal);
}

TEST(PlacementSolverTest, ATriangleIsEliminatedWithoutZ3) {
  PlacementModel m;
  m.num_devices = 3;
  m.unary = {{0, 9, 9}, {9, 0, 9}, {9, 9, 0}};
  for (auto [a, b] : {std::pair{0u, 1u}, std::pair{1u, 2u}, std::pair{0u, 2u}}) {
    m.pairs.push_back({a, b, {0, 20, 20, 20, 0, 20, 20, 20, 0}});
  }
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->z3_variables, 0u);
  EXPECT_EQ(s->cost, ExhaustiveOptimum(m));
  EXPECT_EQ(s->cost, 18);  // all on one device: two of them pay 9, no copies
}

// Every variable keeps three neighbours: nothing is eliminated.
PlacementModel CompleteGraphOfFour() {
  PlacementModel m;
  m.num_devices = 3;
  m.unary = {{0, 9, 9}, {9, 0, 9}, {9, 9, 0}, {5, 5, 0}};
  for (uint32_t a = 0; a < 4; ++a) {
    for (uint32_t b = a + 1; b < 4; ++b) m.pairs.push_back({a, b, {0, 20, 20, 20, 0, 20, 20, 20, 0}});
  }
  return m;
}

TEST(PlacementSolverTest, ACompleteGraphOfFourGoesToZ3) {
  PlacementModel m = CompleteGraphOfFour();
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->z3_variables, 4u);
  EXPECT_TRUE(s->optimal);
  EXPECT_EQ(s->cost, ExhaustiveOptimum(m));
  EXPECT_EQ(s->cost, 18);  // all on device 2
}

TEST(PlacementSolverTest, ASlowSolveReportsProgressOnce) {
  PlacementModel m = CompleteGraphOfFour();
  std::vector<size_t> reported;
  PlacementSolveOptions options;
  options.on_slow_solve = [&](size_t variables) { reported.push_back(variables); };
  ASSERT_TRUE(SolvePlacement(m, options).ok());
  EXPECT_TRUE(reported.empty());  // well under the default second
  options.slow_after_seconds = 0;  // every solve is "slow"
  ASSERT_TRUE(SolvePlacement(m, options).ok());
  EXPECT_EQ(reported, (std::vector<size_t>{4}));
}

TEST(PlacementSolverTest, AVariableWithoutAnAllowedDeviceIsAnError) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{kForbidden, kForbidden}};
  EXPECT_FALSE(SolvePlacement(m, {}).ok());
}

}  // namespace
}  // namespace vdev::planner_internal
