// SolvePlacement against an exhaustive search written here: random models of up to 12 variables and
// 2-4 devices (forbidden devices, pairs in cycles, parallel pairs, fixed variables), with and without
// capacity cuts (solved by the capacity search first and by Z3 alone; pipeline-shaped ones by the
// search itself).
#include "src/planner/placement_solver.h"

#include <vector>

#include "src/planner/internal/capacity_search.h"
#include "src/planner/placement_bound.h"

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
PlacementModel RandomModel(bool dense, int max_vars = 12) {
  PlacementModel m;
  m.num_devices = *rc::gen::inRange(2, 5);
  // The exhaustive searches the properties compare with visit num_devices^n assignments: at most
  // 2^20 of them (12 variables of 3 devices, 10 of 4), so a thousand cases stay cheap, under the sanitizers too.
  int most = 0;
  for (int64_t assignments = m.num_devices; most < max_vars && assignments <= (int64_t{1} << 20); ++most)
    assignments *= m.num_devices;
  const int n = *rc::gen::inRange(dense ? 4 : 1, most + 1);
  for (int v = 0; v < n; ++v) {
    std::vector<Cost> unary(m.num_devices);
    for (Cost& c : unary)
      c = *rc::gen::weightedOneOf<Cost>({{1, rc::gen::just(kForbidden)}, {5, rc::gen::inRange<Cost>(0, 100)}});
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

// Both ways: the bound first (the default), and Z3 alone.
void CheckAgainstExhaustive(bool dense) {
  PlacementModel model = RandomModel(dense);
  const Cost expected = ExhaustiveOptimum(model);
  for (bool bound_first : {true, false}) {
    PlacementSolveOptions options;
    options.bound_first = bound_first;
    absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, options);
    RC_ASSERT(solution.ok());
    RC_ASSERT(solution->optimal);
    RC_ASSERT(solution->device.size() == model.unary.size());
    RC_ASSERT(solution->cost == PlacementCost(model, solution->device));
    RC_ASSERT(solution->cost == expected);
    RC_ASSERT(solution->lower_bound == solution->cost);
    RC_ASSERT(solution->relaxation_bound <= solution->lower_bound);
    RC_CLASSIFY(bound_first && solution->z3_variables > 0, "Z3 used after the bound");
  }
}

RC_GTEST_PROP(PlacementSolverTest, CostEqualsAnExhaustiveSearch, ()) { CheckAgainstExhaustive(/*dense=*/false); }

// Cuts of 1-6 terms (some conditioned on another variable), limits from none of the terms' bytes to
// all of them: some models become infeasible, most change their optimum.
void AddRandomCuts(PlacementModel& model) {
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
}

// SolvePlacement with the capacity search first (the default) and with Z3 alone, against the
// exhaustive search (`expected`: the model's optimum); `z3_alone` false: the default only.
void CheckCutsAgainstExhaustive(const PlacementModel& model, Cost expected, bool z3_alone = true) {
  PlacementModel relaxed = model;
  relaxed.capacity.clear();
  const Cost relaxed_optimum = ExhaustiveOptimum(relaxed);
  RC_CLASSIFY(expected == kForbidden, "infeasible");
  for (uint64_t search_nodes : {PlacementSolveOptions().capacity_search_nodes, uint64_t{0}}) {
    if (search_nodes == 0 && !z3_alone) break;
    PlacementSolveOptions options;
    options.capacity_search_nodes = search_nodes;
    absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, options);
    if (expected == kForbidden) {
      RC_ASSERT(!solution.ok());
      RC_ASSERT(absl::IsFailedPrecondition(solution.status()) || absl::IsInvalidArgument(solution.status()));
      continue;
    }
    RC_ASSERT(solution.ok());
    RC_ASSERT(solution->optimal);
    RC_ASSERT(CapacityHolds(model, solution->device));
    RC_ASSERT(solution->cost == PlacementCost(model, solution->device));
    RC_ASSERT(solution->cost == expected);
    RC_ASSERT(solution->lower_bound == expected);
    RC_CLASSIFY(search_nodes > 0 && solution->z3_variables == 0, "decided by the capacity search");
    // The relaxation ignores the cuts: at most the optimum without them.
    RC_ASSERT(solution->relaxation_bound <= relaxed_optimum);
  }
}

RC_GTEST_PROP(PlacementSolverTest, WithCapacityCutsCostEqualsAnExhaustiveSearch, ()) {
  PlacementModel model = RandomModel(/*dense=*/false);
  AddRandomCuts(model);
  CheckCutsAgainstExhaustive(model, ExhaustiveOptimum(model));
}

// A random tree (each variable after the first joined to an earlier one) with a few extra pairs
// between neighbours in order, as layer pipelines with residual branches shrink: the capacity
// search decides these itself. Up to 9 variables: the exhaustive search stays cheap.
RC_GTEST_PROP(PlacementSolverTest, PipelinesWithCapacityCutsAreDecidedByTheSearch, ()) {
  PlacementModel model = RandomModel(/*dense=*/false, /*max_vars=*/9);
  model.pairs.clear();
  const uint32_t n = static_cast<uint32_t>(model.unary.size());
  for (uint32_t v = 1; v < n; ++v) {
    const uint32_t a = *rc::gen::inRange<uint32_t>(0, v);
    for (uint32_t b : {a, v - 1}) {  // the tree's pair, and sometimes its predecessor's
      if (b != a && *rc::gen::inRange(0, 3) != 0) continue;
      PlacementModel::Pair p{b, v, {}};
      for (int i = 0; i < model.num_devices; ++i) {
        for (int j = 0; j < model.num_devices; ++j) p.cost.push_back(i == j ? 0 : *rc::gen::inRange<Cost>(0, 60));
      }
      model.pairs.push_back(std::move(p));
    }
  }
  AddRandomCuts(model);
  const Cost expected = ExhaustiveOptimum(model);
  const CapacitySearchResult found = SearchWithinCapacity(model, {.max_nodes = 1'000'000, .seconds = 60});
  RC_ASSERT(found.outcome != CapacitySearchResult::Outcome::kGaveUp);
  RC_ASSERT((found.outcome == CapacitySearchResult::Outcome::kInfeasible) == (expected == kForbidden));
  if (expected != kForbidden) {
    RC_ASSERT(found.cost == expected);
    RC_ASSERT(PlacementCost(model, found.device) == expected);
    RC_ASSERT(CapacityHolds(model, found.device));
  }
  CheckCutsAgainstExhaustive(model, expected, /*z3_alone=*/false);  // the general property runs Z3 alone
}

// A search out of nodes gives up; the solver then hands the model to Z3 and still finds the optimum.
TEST(PlacementSolverTest, ACapacitySearchOutOfNodesGivesUpAndZ3Decides) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{5, 1}, {5, 1}, {5, 1}};  // all prefer device 1, which holds two of them
  m.pairs.push_back({0, 1, {0, 1, 1, 0}});
  m.pairs.push_back({1, 2, {0, 1, 1, 0}});
  m.capacity.push_back(
      {.device = 1, .limit = 100, .terms = {{0, UINT32_MAX, 50}, {1, UINT32_MAX, 50}, {2, UINT32_MAX, 50}}});
  EXPECT_EQ(SearchWithinCapacity(m, {.max_nodes = 1, .seconds = 60}).outcome, CapacitySearchResult::Outcome::kGaveUp);
  PlacementSolveOptions options;
  options.capacity_search_nodes = 1;
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cost, 1 + 1 + 5 + 1);  // an end variable on device 0: one copy
  EXPECT_TRUE(s->optimal);
  EXPECT_GT(s->z3_variables, 0u);
  const CapacitySearchResult found = SearchWithinCapacity(m, {.max_nodes = 1000, .seconds = 60});
  ASSERT_EQ(found.outcome, CapacitySearchResult::Outcome::kOptimal);
  EXPECT_EQ(found.cost, s->cost);
  EXPECT_EQ(found.unconstrained, 3);
}

// The LP dual's bound is at most the optimum; the reparameterised costs give every assignment its
// own cost; no assignment that puts v on i costs less than v's price for i.
RC_GTEST_PROP(PlacementBoundTest, TheBoundAndThePricesHoldForEveryAssignment, ()) {
  PlacementModel model = RandomModel(*rc::gen::arbitrary<bool>());
  DualBound dual = LowerBound(model, {});
  std::vector<std::vector<Cost>> price = DevicePrices(model, dual);
  const size_t n = model.unary.size();
  std::vector<int> device(n, 0);
  Cost optimum = kForbidden;
  while (true) {
    Cost cost = PlacementCost(model, device);
    if (cost != kForbidden) {
      optimum = std::min(optimum, cost);
      Cost reparameterised = 0;
      for (size_t v = 0; v < n; ++v) reparameterised += dual.unary[v][device[v]];
      for (size_t e = 0; e < model.pairs.size(); ++e) {
        reparameterised += dual.pair[e][device[model.pairs[e].a] * model.num_devices + device[model.pairs[e].b]];
      }
      RC_ASSERT(reparameterised == cost);
      for (size_t v = 0; v < n; ++v) RC_ASSERT(price[v][device[v]] <= cost);
    }
    size_t k = 0;
    while (k < n && ++device[k] == model.num_devices) device[k++] = 0;
    if (k == n) break;
  }
  RC_ASSERT(dual.bound <= optimum);
  RC_CLASSIFY(dual.bound == optimum, "tight");
  std::vector<int> heuristic = HeuristicAssignment(model, dual);
  RC_ASSERT(PlacementCost(model, heuristic) != kForbidden);
}

// Under a time limit too short for Z3 the plan may be unproven: the bound stays at most the optimum,
// and the gap is 0 exactly when the plan is reported optimal.
RC_GTEST_PROP(PlacementSolverTest, TheGapIsZeroExactlyWhenOptimal, ()) {
  PlacementModel model = RandomModel(/*dense=*/true);
  PlacementSolveOptions options;
  options.time_limit_seconds = *rc::gen::element(1e-9, 1e-3, 60.0);
  options.bound_first = *rc::gen::arbitrary<bool>();
  absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, options);
  if (!solution.ok()) {
    RC_LOG() << solution.status().ToString() << "\n";
    RC_ASSERT(absl::IsDeadlineExceeded(solution.status()) && !options.bound_first);  // Z3 alone found no model
    return;
  }
  const Cost optimum = ExhaustiveOptimum(model);
  RC_ASSERT(solution->cost == PlacementCost(model, solution->device));
  RC_ASSERT(solution->lower_bound <= optimum);
  RC_ASSERT(optimum <= solution->cost);
  RC_ASSERT(solution->optimal == (solution->lower_bound == solution->cost));
  RC_CLASSIFY(!solution->optimal, "not proven");
}

// Five variables of two devices, each pair 10 when equal (a frustrated graph): the LP's bound is
// 0 (every variable half on each device), the optimum 40 (a 2-3 split leaves 4 equal pairs).
TEST(PlacementSolverTest, AFrustratedCompleteGraphNeedsZ3AfterTheBound) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary.assign(5, {0, 0});
  for (uint32_t a = 0; a < 5; ++a) {
    for (uint32_t b = a + 1; b < 5; ++b) m.pairs.push_back({a, b, {10, 0, 0, 10}});
  }
  EXPECT_LE(LowerBound(m, {}).bound, 0);
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cost, 40);
  EXPECT_EQ(s->cost, ExhaustiveOptimum(m));
  EXPECT_TRUE(s->optimal);
  EXPECT_GT(s->z3_variables, 0u);
}

TEST(PlacementSolverTest, ACapacityCutSplitsTwoVariablesThatPreferOneDevice) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{5, 1}, {5, 1}};  // both prefer device 1
  m.capacity.push_back({.device = 1, .limit = 100, .terms = {{0, UINT32_MAX, 60}, {1, UINT32_MAX, 60}}});
  for (uint64_t search_nodes : {PlacementSolveOptions().capacity_search_nodes, uint64_t{0}}) {
    PlacementSolveOptions options;
    options.capacity_search_nodes = search_nodes;
    absl::StatusOr<PlacementSolution> s = SolvePlacement(m, options);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->cost, 6);
    EXPECT_NE(s->device[0], s->device[1]);
    // Z3 alone: named by a cut, not eliminated; else the search decides.
    EXPECT_EQ(s->z3_variables, search_nodes == 0 ? 2u : 0u);
    PlacementModel fixed = m;
    fixed.unary = {{kForbidden, 1}, {kForbidden, 1}};  // both fixed to device 1: nothing fits
    EXPECT_TRUE(absl::IsFailedPrecondition(SolvePlacement(fixed, options).status()));
  }
}

RC_GTEST_PROP(PlacementSolverTest, DenseModelsCostEqualsAnExhaustiveSearch, ()) {
  CheckAgainstExhaustive(/*dense=*/true);
}

// A frustrated model Z3 must search: every variable prefers device 0, every pair wants its two ends
// apart (no bound meets its optimum), and a cut on device 1 that the optimum respects.
PlacementModel FrustratedModel(int n) {
  PlacementModel m;
  m.num_devices = 3;
  PlacementModel::CapacityCut cut{.device = 1, .limit = 40 * n};
  for (int v = 0; v < n; ++v) {
    m.unary.push_back({0, 3 + v % 5, 4 + v % 7});
    cut.terms.push_back({static_cast<uint32_t>(v), UINT32_MAX, 100});
    for (int u : {v - 1, v - 3, v - 7}) {
      if (u >= 0) m.pairs.push_back({static_cast<uint32_t>(u), static_cast<uint32_t>(v), {9, 0, 0, 0, 9, 0, 0, 0, 9}});
    }
  }
  m.capacity.push_back(std::move(cut));
  return m;
}

// A solve that runs out of its budget says so: DeadlineExceeded, or an assignment marked not
// optimal. Z3's resource limit makes it run out deterministically; a 1 ms time limit, whichever of
// Z3's timeout and the solver's own deadline stops it (the assertion holds for both).
TEST(PlacementSolverTest, ASolveOutOfItsBudgetReportsItTimedOut) {
  const PlacementModel m = FrustratedModel(40);
  auto expect_timed_out = [&](const PlacementSolveOptions& options) {
    absl::StatusOr<PlacementSolution> s = SolvePlacement(m, options);
    if (s.ok()) {
      EXPECT_FALSE(s->optimal);
      EXPECT_LT(s->lower_bound, s->cost);
      EXPECT_TRUE(CapacityHolds(m, s->device));
    } else {
      EXPECT_TRUE(absl::IsDeadlineExceeded(s.status())) << s.status();
    }
  };
  PlacementSolveOptions options;
  options.capacity_search_nodes = 0;  // Z3 only
  options.z3_resource_limit = 1;
  expect_timed_out(options);
  options.z3_resource_limit = 0;
  options.time_limit_seconds = 1e-3;
  expect_timed_out(options);
  // The capacity search out of nodes, then Z3 out of time.
  options.capacity_search_nodes = 1;
  expect_timed_out(options);
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

TEST(PlacementSolverTest, ACompleteGraphOfFourGoesToZ3OrIsClosedByTheBound) {
  PlacementModel m = CompleteGraphOfFour();
  PlacementSolveOptions z3_alone;
  z3_alone.bound_first = false;
  absl::StatusOr<PlacementSolution> s = SolvePlacement(m, z3_alone);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->z3_variables, 4u);
  EXPECT_TRUE(s->optimal);
  EXPECT_EQ(s->cost, ExhaustiveOptimum(m));
  EXPECT_EQ(s->cost, 18);  // all on device 2
  // The LP is tight here: the bound meets the heuristic's assignment and Z3 is not needed.
  s = SolvePlacement(m, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->z3_variables, 0u);
  EXPECT_TRUE(s->optimal);
  EXPECT_EQ(s->cost, 18);
  EXPECT_EQ(s->lower_bound, 18);
}

TEST(PlacementSolverTest, ASlowSolveReportsProgressOnce) {
  PlacementModel m = CompleteGraphOfFour();
  std::vector<PlacementProgress> reported;
  PlacementSolveOptions options;
  options.on_slow_solve = [&](const PlacementProgress& p) { reported.push_back(p); };
  ASSERT_TRUE(SolvePlacement(m, options).ok());
  EXPECT_TRUE(reported.empty());   // well under the default second
  options.slow_after_seconds = 0;  // every solve is "slow"
  ASSERT_TRUE(SolvePlacement(m, options).ok());
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].z3_variables, 0u);  // the bound closed it
  EXPECT_EQ(reported[0].best, 18);
  EXPECT_EQ(reported[0].lower_bound, 18);
  reported.clear();
  options.bound_first = false;
  ASSERT_TRUE(SolvePlacement(m, options).ok());
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].z3_variables, 4u);
}

TEST(PlacementSolverTest, AVariableWithoutAnAllowedDeviceIsAnError) {
  PlacementModel m;
  m.num_devices = 2;
  m.unary = {{kForbidden, kForbidden}};
  EXPECT_FALSE(SolvePlacement(m, {}).ok());
}

}  // namespace
}  // namespace vdev::planner_internal
