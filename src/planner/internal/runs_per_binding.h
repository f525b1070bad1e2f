// How many times one run of @main runs each binding, for the cost of a plan: a global function's
// bindings once per call of it (call sites counted through the call graph), and of an `if`'s two
// arms only the larger, by the cost the caller gives each binding (a run takes one arm; costing the
// larger bounds it, where counting both would cost a run that never happens).
#ifndef VDEV_SRC_PLANNER_INTERNAL_RUNS_PER_BINDING_H_
#define VDEV_SRC_PLANNER_INTERNAL_RUNS_PER_BINDING_H_

#include <functional>
#include <vector>

#include "vdev/ir/ir.h"

namespace vdev::planner_internal {

// By binding: its runs (0 in the smaller arm of an `if`, and in an arm inside one). An arm's cost
// is the sum of `own_cost` over its bindings and the larger arm of each `if` in it (not what the
// functions it calls cost); of two arms of equal cost the `then` arm counts. Iterative: arms may
// nest as deep as the program's bindings.
std::vector<double> RunsPerBinding(const ir::Module& m, const std::function<double(ir::BindingId)>& own_cost);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_RUNS_PER_BINDING_H_
