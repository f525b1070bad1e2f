// The optimiser's rounds on one machine: solve the placement model, sweep the plan's liveness, and
// while a device overflows, add a capacity cut where it did and solve again (optimize_placement.h).
#ifndef VDEV_SRC_PLANNER_INTERNAL_CAPACITY_ROUNDS_H_
#define VDEV_SRC_PLANNER_INTERNAL_CAPACITY_ROUNDS_H_

#include <string>

#include "absl/status/statusor.h"
#include "src/planner/placement_solver.h"
#include "vdev/ir/ir.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"

namespace vdev::planner_internal {

struct RoundsResult {
  OptimizedPlan optimized;    // everything but default_cost (the caller's machine may be larger)
  Cost model_cost = 0;        // of the last round's solution (placement_solver.h)
  Cost relaxation_bound = 0;  // its bound ignoring the capacity cuts
};

// `capacity_infeasible` (when given) is set when the error is that no placement fits in memory.
absl::StatusOr<RoundsResult> SolveWithCapacity(const ir::Module& module, const Machine& machine,
                                               const OptimizeOptions& options, PlanError* error,
                                               bool* capacity_infeasible);

// "LINE:COL" of a binding's expression, for messages.
std::string BindingLoc(const ir::Module& m, ir::BindingId b);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_CAPACITY_ROUNDS_H_
