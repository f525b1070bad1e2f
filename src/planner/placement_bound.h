// A proven lower bound on a PlacementModel's optimum and a good assignment, both in plain C++, for
// the components that reach Z3 (placement_solver.cc).
//
// The bound is the dual of the model's local LP relaxation: costs are moved between each pair and
// its two variables (a *reparameterisation*: every assignment keeps its cost), and then
//   Σ_v min_i unary'[v][i] + Σ_e min_ij pair'[e][ij]
// bounds every assignment from below. The moves are chosen by sequential message passing (TRW-S's
// schedule, Kolmogorov 2006) in doubles; the messages are rounded to integers at the end and the
// bound is recomputed from them exactly, so it is valid whatever the floating point did. Capacity
// cuts are ignored: they only raise the optimum.
//
// The same reparameterisation prices each device of each variable: no assignment that puts v on i
// costs less than Bound + (unary'[v][i] − min unary'[v]) + Σ_{e∋v} (min_j pair'[e][i,j] − min pair'[e]),
// so devices whose price reaches an incumbent's cost can be dropped (reduced-cost fixing) and what
// is left is a smaller problem for Z3.
#ifndef VDEV_SRC_PLANNER_PLACEMENT_BOUND_H_
#define VDEV_SRC_PLANNER_PLACEMENT_BOUND_H_

#include <vector>

#include "src/planner/placement_solver.h"

namespace vdev::planner_internal {

struct DualBound {
  Cost bound = 0;  // <= the cost of every assignment (capacity cuts ignored)
  // The reparameterised costs, same shapes as the model's (unary'[v][i] is kForbidden where the
  // model's is); a pair of a variable with itself is folded into its unary and left all zero.
  std::vector<std::vector<Cost>> unary;
  std::vector<std::vector<Cost>> pair;
  int iterations = 0;
};

struct BoundOptions {
  int max_iterations = 2000;
  double seconds = 2;
};

// The bound after message passing until it stops improving, `max_iterations` or `seconds`.
DualBound LowerBound(const PlacementModel& model, const BoundOptions& options);

// The least price of putting v on each device (kForbidden where forbidden), as described above;
// by variable and device.
std::vector<std::vector<Cost>> DevicePrices(const PlacementModel& model, const DualBound& dual);

// A good assignment (no capacity cuts considered): devices decoded greedily from the
// reparameterisation, then improved by moving one variable at a time to its cheapest device given
// its neighbours (iterated conditional modes) until no move helps.
std::vector<int> HeuristicAssignment(const PlacementModel& model, const DualBound& dual);

// Reduced-cost fixing: `out` is the model reparameterised by `dual` and shifted to costs >= 0 (its
// cost is the model's minus dual.bound), without the devices whose price reaches `upper` (the cost
// of an assignment in hand); `pruned` tells whether any went. false when some variable keeps no
// device: no assignment costs less than `upper`.
bool RestrictByPrices(const PlacementModel& model, const DualBound& dual, Cost upper, PlacementModel& out,
                      bool& pruned);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_PLACEMENT_BOUND_H_
