// The cost-optimal placement of the classes the planner leaves free: a weighted constraint problem
// over small finite domains (one variable per class, one value per machine device), solved exactly.
//
// Costs are integers (picoseconds), so that the solver's optimum and the plain C++ re-check compare
// exactly. Before Z3 the problem shrinks: variables with one allowed device are fixed and folded
// into their neighbours, leaves (one neighbour) are eliminated exactly into that neighbour's costs,
// and what is left splits into independent components. Each component is first bounded in plain C++
// (placement_bound.h: the LP dual's bound and a heuristic assignment); when they meet, it is solved;
// else the devices that cannot beat the assignment are dropped and the rest is solved the same way
// as a model of its own, until Z3 gets what nothing closes (device variables of an enumeration sort;
// soft constraints asserted inside push()/pop(), MaxRes). Z3 stays inside placement_solver.cc; no
// z3::exception leaves it.
//
// Capacity cuts (hard: the bytes that an assignment puts on a device at one program point stay
// within a limit) are added lazily by OptimizePlacement, only for points where a plan overflowed.
// A model with cuts first goes to an exact search that shrinks it with the cuts set aside and then
// searches in order of cost, pruned by the cuts (internal/capacity_search.h: layer pipelines, trees).
// When that gives up, a variable named by a cut is never eliminated (its choice is no longer local),
// and the cut joins its variables into one Z3 component.
//
// Example:
//   PlacementModel m;
//   m.num_devices = 2;
//   m.unary = {{5, 1}, {1, 5}};                       // variable 0 prefers device 1, 1 prefers 0
//   m.pairs.push_back({0, 1, {0, 3, 3, 0}});          // a copy between them costs 3
//   absl::StatusOr<PlacementSolution> s = SolvePlacement(m, {});
//   // s->device == {1, 0}, s->cost == 2 + 3, s->optimal
#ifndef VDEV_SRC_PLANNER_PLACEMENT_SOLVER_H_
#define VDEV_SRC_PLANNER_PLACEMENT_SOLVER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"

namespace vdev::planner_internal {

using Cost = int64_t;
inline constexpr Cost kForbidden = std::numeric_limits<Cost>::max();
// Costs a model holds are below this, and so are all their sums (PlacementModel::cost_cap): every
// sum the solver forms stays far from overflowing.
inline constexpr Cost kCostRange = Cost{1} << 61;

// Bytes that count against a capacity cut when `var` is on the cut's device and, if `other` is set,
// `other` is not (a copy of other's value made for var exists only then).
struct CapacityTerm {
  uint32_t var = 0;
  uint32_t other = UINT32_MAX;
  int64_t bytes = 0;
};

struct PlacementModel {
  int num_devices = 0;
  // unary[v][d]: the cost of variable v on device d (kForbidden: not allowed).
  std::vector<std::vector<Cost>> unary;
  // A cost between two variables, by (device of a) * num_devices + (device of b); never kForbidden.
  struct Pair {
    uint32_t a = 0;
    uint32_t b = 0;
    std::vector<Cost> cost;
  };
  std::vector<Pair> pairs;
  // Σ bytes of the terms that hold <= limit (CapacityTerm).
  struct CapacityCut {
    using Term = CapacityTerm;
    int device = 0;
    int64_t limit = 0;
    std::vector<Term> terms;
  };
  std::vector<CapacityCut> capacity;
  // No unary or pair cost exceeds it, and (terms + 1) times it is at most kCostRange, so no
  // assignment's cost reaches kCostRange (BuildPlacementModel caps the costs; a solution that uses
  // a capped cost is refused, see placement_model.h).
  Cost cost_cap = kCostRange;
};

// What a slow solve reports: the variables left for Z3 and, before Z3 starts, the best assignment's
// cost and the proven lower bound (model units).
struct PlacementProgress {
  size_t z3_variables = 0;
  Cost best = 0;
  Cost lower_bound = 0;
};

struct PlacementSolveOptions {
  double time_limit_seconds = 60;
  // Called once when the Z3 part of a solve has run `slow_after_seconds` (a progress line).
  std::function<void(const PlacementProgress&)> on_slow_solve;
  double slow_after_seconds = 1;
  // Each component first gets a lower bound (the LP dual, placement_bound.h) and a heuristic
  // assignment; when they meet no Z3 runs, else devices priced above the assignment are dropped
  // and the reparameterised rest is solved again (shrinking, then Z3). false: Z3 alone, as before
  // (kept for measurements).
  bool bound_first = true;
  // A model with capacity cuts first goes to an exact search in plain C++ (internal/capacity_search.h)
  // of at most this many nodes and half the time limit; Z3 gets it when the search gives up. 0: Z3 only.
  uint64_t capacity_search_nodes = 20'000'000;
  // Z3's deterministic resource limit per component (its `rlimit`; 0: none), for tests of what a
  // solve that runs out returns: DeadlineExceeded, or the best assignment in hand, not optimal.
  uint64_t z3_resource_limit = 0;
};

struct PlacementSolution {
  std::vector<int> device;  // by variable
  Cost cost = 0;            // recomputed in plain C++ from `device`
  bool optimal = true;      // false when a component hit the time limit (its best model so far)
  // A proven lower bound on the cost of every assignment within the capacity cuts: equal to `cost`
  // exactly when `optimal`.
  Cost lower_bound = 0;
  // A proven lower bound on every assignment's cost ignoring the capacity cuts (<= lower_bound).
  Cost relaxation_bound = 0;
  size_t z3_variables = 0;  // variables left for Z3 after shrinking
  size_t components = 0;    // Z3 problems solved
  double seconds = 0;
};

// The cost of an assignment; kForbidden when it uses a forbidden device.
Cost PlacementCost(const PlacementModel& model, const std::vector<int>& device);
// The bytes a cut counts under an assignment; whether every cut holds.
int64_t CutLoad(const PlacementModel::CapacityCut& cut, const std::vector<int>& device);
bool CapacityHolds(const PlacementModel& model, const std::vector<int>& device);

// InvalidArgument when a variable has no allowed device; FailedPrecondition when no assignment
// satisfies the capacity cuts; DeadlineExceeded when a component found no model at all in the time
// limit; Internal when a model fails the re-check.
absl::StatusOr<PlacementSolution> SolvePlacement(const PlacementModel& model, const PlacementSolveOptions& options);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_PLACEMENT_SOLVER_H_
