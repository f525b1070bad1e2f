// The placement problem of a module's classes on a machine (used by OptimizePlacement; the tests
// compare its optimum with an exhaustive search).
#ifndef VDEV_SRC_PLANNER_INTERNAL_PLACEMENT_MODEL_H_
#define VDEV_SRC_PLANNER_INTERNAL_PLACEMENT_MODEL_H_

#include <optional>

#include "absl/status/statusor.h"
#include "src/planner/internal/planner.h"
#include "src/planner/placement_solver.h"
#include "vdev/planner/machine.h"

namespace vdev::planner_internal {

// The source position BuildPlacementModel attached to its error (an op no device implements).
std::optional<PlanError> LocatedModelError(const absl::Status& status);

// One variable per class (its devices: the machine's that its device joins with and that implement
// all its ops; unary costs: their rooflines), one pair per edge (copy costs). InvalidArgument when a
// class has no device, naming the op and the annotation.
absl::StatusOr<PlacementModel> BuildPlacementModel(const ir::Module& m, const PlacementClasses& classes,
                                                   const Machine& machine);

// InvalidArgument when the assignment uses a cost that BuildPlacementModel capped (an op or copy
// slower than the model's cost_cap): the model's optimum is then not known to be the program's.
absl::Status CheckWithinCostRange(const PlacementModel& model, const std::vector<int>& device);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_PLACEMENT_MODEL_H_
