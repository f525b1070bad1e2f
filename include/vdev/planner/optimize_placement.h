// Cost-optimal placement (`vdev plan --optimize`): PlanDevices' union-find first (everything the
// annotations and the placement semantics force), then one variable per remaining class, chosen
// among a machine's devices to minimise the roofline compute cost of every op call plus, for every
// place where a copy may separate two classes (free and result-side on_device, kernel boundaries),
// latency + bytes / link bandwidth when it does. Annotations always hold; an op runs only on device
// types that implement it. The choice is proven optimal (placement_solver.h: an LP bound that meets
// it, or Z3) unless the time limit cut it short, then with a proven lower bound and the gap; it is
// re-checked in plain C++.
//
// Example:
//   Machine machine = DefaultMachine(2);
//   absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(module, machine, {});
//   // plan->plan: as PlanDevices; plan->cost.total <= plan->default_cost.total when both are
//   // feasible; plan->optimal.
//
// Capacity: every plan's liveness is swept (the peak of live bytes per device under the program
// order, docs/planner.md); where a device overflows, the bytes live at that point become a cut (a
// hard linear constraint over the classes there) and the problem is solved again, until the plan
// fits. No placement fits: InvalidArgument naming the point, and in `error` the fewest values that
// cannot leave the device and together exceed it. The time limit covers every round
// (DeadlineExceeded when no plan that fits was found in it). A plan that needed cuts and holds copies
// the planner added (conflicts, kernel boundaries) is marked not optimal: such a copy can end its
// source's life earlier than a cut counts. A value copied to the same device for several classes is
// costed once per place.
#ifndef VDEV_OPTIMIZE_PLACEMENT_H_
#define VDEV_OPTIMIZE_PLACEMENT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/ir/ir.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/plan_devices.h"

namespace vdev {

struct OptimizeOptions {
  PlanOptions plan;
  double time_limit_seconds = 60;
  // A progress line for each solve that takes over `progress_after_seconds` (the CLI prints it on
  // stderr: "vdev plan: optimising the placement of N classes (M left for Z3 after shrinking; best so
  // far X ms, lower bound Y ms, gap Z%)…"; the best and the gap only when a plan is known by then).
  std::function<void(const std::string&)> progress;
  double progress_after_seconds = 1;
  // true: each component is first bounded (the LP dual) and given a heuristic plan, and Z3 solves
  // only what the bound leaves open (docs/planner.md); false: Z3 alone, as before (measurements).
  bool bound_first = true;
  // true: where capacity cuts are needed, the exact capacity search in plain C++ first, Z3 only when
  // it gives up (docs/planner.md, Capacity); false: the cuts go to Z3 (measurements).
  bool capacity_search = true;
};

// Seconds, by the machine's roofline and links.
struct PlanCost {
  double compute = 0;
  double copy = 0;
  double calls = 0;  // the executor's time for calls of global functions (op by op only)
  double total = 0;  // compute + copy + calls
  // The machine's fixed time of one run of this plan (RunSeconds: a GPU run's, or the host's where
  // every op and copy stays on CPUs), not in `total`: the predicted time of a run is total + run.
  double run = 0;
  int unsupported = 0;  // op calls on a device that does not implement them (costed all the same)
  // How the executor runs the plan, whose per-op times `compute` counts: replayed as a CUDA graph
  // (a straight-line @main, every op on a GPU) or op by op.
  LaunchMode launch = LaunchMode::kEager;
};

struct OptimizedPlan {
  PlanResult plan;
  PlanCost cost;          // of `plan`, evaluated by EvaluatePlanCost
  PlanCost default_cost;  // of PlanDevices' plan of the same module
  bool optimal = true;    // false: the time limit returned the best plan found so far
  // How far the plan may be from the optimum, by the optimiser's model (seconds; it counts a copy per
  // place where two classes differ, and whole picoseconds per op and copy, so `model_cost` can
  // exceed `cost.total`, which counts one copy per value and destination): `lower_bound` is proven
  // (no placement within the capacity cuts costs less), `gap` = (model_cost − lower_bound) /
  // model_cost, 0 exactly when `optimal`.
  double model_cost = 0;
  double lower_bound = 0;
  double gap = 0;
  size_t classes = 0;  // variables before shrinking
  size_t z3_variables = 0;
  double solve_seconds = 0;        // all rounds
  std::vector<double> peak_bytes;  // by machine device: the plan's peak of live bytes
  size_t capacity_cuts = 0;        // rounds solved again because a device overflowed
  std::vector<int> class_devices;  // the machine device chosen for each of the planner's classes
};

// The cost of a plan on a machine: every op call (not on_device/device_copy, nor a view such as
// reshape) by the roofline of its inferred type on its planned device plus the device's per-op time
// in the plan's launch mode, every copy by its link, every call of a global function by the
// machine's call time (op by op); `run` is the machine's RunSeconds for it. InvalidArgument when a planned
// device is not one of the machine's.
absl::StatusOr<PlanCost> EvaluatePlanCost(const PlanResult& plan, const Machine& machine);

// The `vdev plan --optimize --json` report: PlanReportJson(plan) and `cost`, `optimal`,
// `default_cost`, `peak_bytes` (bytes by machine device) from `optimized` (whose own `plan` is not
// read, so it may have been moved into `plan`). docs/planner.md lists the keys.
std::string OptimizedReportJson(const PlanResult& plan, const OptimizedPlan& optimized, const Machine& machine);

// InvalidArgument (and `error` filled, as PlanDevices does) when no placement satisfies the
// annotations, op support and capacity together: the message names the op and the annotation, or
// the overflowing point with the values in `error->conflicts`. Unimplemented when a plan overflows
// through copies that the capacity cuts do not count (never returned as a plan).
absl::StatusOr<OptimizedPlan> OptimizePlacement(const ir::Module& module, const Machine& machine,
                                                const OptimizeOptions& options, PlanError* error = nullptr);

}  // namespace vdev

#endif  // VDEV_OPTIMIZE_PLACEMENT_H_
