// OptimizePlacement: the planner's classes as a PlacementModel (roofline compute per class and
// device, copy costs between classes), solved by SolvePlacement, applied by PlanWithPlacement.
#include "vdev/planner/optimize_placement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "src/planner/internal/capacity.h"
#include "src/planner/internal/capacity_rounds.h"
#include "src/planner/internal/identical_devices.h"
#include "src/planner/internal/op_work.h"
#include "src/planner/internal/placement_model.h"
#include "src/planner/internal/planner.h"
#include "src/planner/internal/runs_per_binding.h"
#include "src/planner/placement_solver.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using planner_internal::BindingLoc;
using planner_internal::Cost;
using planner_internal::kCostRange;
using planner_internal::kForbidden;
using planner_internal::PlacementClasses;
using planner_internal::PlacementModel;
using planner_internal::SizeOf;
using planner_internal::TypeSize;

// Work of one op call: flops (matmul-like ops 2·M·N·K, attention 4·out·S, others a few per output
// element) and bytes read and written.
struct Work {
  double flops = 0;
  double bytes = 0;
  ir::DType dtype = ir::DType::kF32;
  KernelKind kind = KernelKind::kElementwise;  // whose fixed time it pays
  bool runs = true;  // false for a view (reshape): the executor runs nothing, it costs nothing
};

// The executor's views of their operand's memory (no kernel runs).
bool IsView(absl::string_view op) { return op == "reshape" || op == "vm.reshape_tensor" || op == "memory.view"; }

// The fixed time per op that `m`'s op calls pay: a straight-line @main (no if, call or const) may
// be captured as a CUDA graph and replayed (docs/executor.md), anything else runs op by op.
bool StraightLineMain(const ir::Module& m) {
  const ir::FuncId main = m.FindGlobal("main");
  if (main == ir::kNoFunc) return false;
  for (ir::BindingId b : m.blocks[m.functions[main].body].bindings) {
    const ir::ExprKind k = m.bindings[b].expr.kind;
    if (k == ir::ExprKind::kIf || k == ir::ExprKind::kCallGlobal || k == ir::ExprKind::kCallValue ||
        k == ir::ExprKind::kConst)
      return false;
  }
  return true;
}

Work WorkOf(const ir::Module& m, ir::BindingId b) {
  const ir::Binding& binding = m.bindings[b];
  TypeSize out = SizeOf(m, binding.type);
  Work w{out.elements, out.bytes, out.dtype};
  ir::TypeId first = ir::kNoType;
  for (const ir::Operand& o : m.Args(binding.expr)) {
    if (!o.is_local()) continue;
    ir::TypeId t = o.value.is_param() ? m.params[o.value.index].type : m.bindings[o.value.index].type;
    if (first == ir::kNoType) first = t;
    w.bytes += SizeOf(m, t).bytes;
  }
  if (binding.expr.kind != ir::ExprKind::kOpCall) return w;
  absl::string_view op = m.OpName(binding.expr);
  if (IsView(op)) return Work{.bytes = 0, .runs = false};
  const planner_internal::OpWork work = planner_internal::OpWorkOf(op);
  w.kind = work.kind;
  // A gather reads the rows it returns and its indices, not the whole table.
  if (op == "take" && first != ir::kNoType) w.bytes -= SizeOf(m, first).bytes - out.bytes;
  auto dim = [&](int from_end) -> double {
    if (first == ir::kNoType || m.types.kind(first) != ir::TypeKind::kTensor) return 1;
    auto dims = m.types.dims(first);
    if (static_cast<int>(dims.size()) < from_end || dims[dims.size() - from_end] == ir::kDynamicDim) return 1;
    return static_cast<double>(dims[dims.size() - from_end]);
  };
  switch (work.flops) {
    case planner_internal::FlopRule::kContraction: w.flops = 2 * out.elements * dim(1); break;
    case planner_internal::FlopRule::kAttention: w.flops = 4 * out.elements * dim(2); break;
    case planner_internal::FlopRule::kPerElement: w.flops = 5 * out.elements; break;
    case planner_internal::FlopRule::kNone: break;
  }
  return w;
}

// A model error's place in the source travels with its Status (as "LINE:COL"), so that the plan's
// error report (`vdev plan --optimize --json`) gives its line and column (LocatedModelError).
constexpr char kSourceLocPayload[] = "vdev.source_loc";
absl::Status AtBinding(absl::Status status, const ir::Module& m, ir::BindingId b) {
  status.SetPayload(kSourceLocPayload, absl::Cord(BindingLoc(m, b)));
  return status;
}

// Whole picoseconds, at most kCostRange (a time that does not fit, NaN included, saturates).
Cost Picoseconds(double seconds) {
  const double ps = seconds * 1e12;
  return ps < static_cast<double>(kCostRange) ? std::max<Cost>(0, std::llround(ps)) : kCostRange;
}

// Caps every unary and pair cost at kCostRange / (terms + 1), so that the cost of every assignment,
// and every sum the solver forms, stays below 2^62. Capping lowers only costs at or above the cap,
// so an optimum that uses no capped cost is an optimum of the uncapped model too, and every lower
// bound stays one (CheckWithinCostRange refuses the rest).
Cost CapCosts(PlacementModel* model) {
  const Cost cap = kCostRange / static_cast<Cost>(model->unary.size() + model->pairs.size() + 1);
  for (std::vector<Cost>& row : model->unary) {
    for (Cost& c : row) c = c == kForbidden ? c : std::min(c, cap);
  }
  for (PlacementModel::Pair& p : model->pairs) {
    for (Cost& c : p.cost) c = std::min(c, cap);
  }
  return cap;
}

// Each `if` that runs (of nested arms, the larger) waits for its condition: on the condition's
// class, at each device, that device's if_seconds. A passive condition class (no op, no edge: the
// defaults place it) is left out, so that it stays free; EvaluatePlanCost counts its wait.
void AddIfWaits(const ir::Module& m, const PlacementClasses& classes, const Machine& machine, LaunchMode mode,
                const std::vector<double>& runs, PlacementModel* model) {
  for (ir::BindingId b = 0; b < m.bindings.size(); ++b) {
    const ir::Expr& e = m.bindings[b].expr;
    if (e.kind != ir::ExprKind::kIf || runs[b] == 0) continue;
    const ir::Operand& condition = m.Args(e)[0];
    if (!condition.is_local()) continue;
    const std::vector<uint32_t>& of = condition.value.is_param() ? classes.param_class : classes.binding_class;
    const uint32_t c = condition.value.index < of.size() ? of[condition.value.index] : UINT32_MAX;
    if (c == UINT32_MAX || (c < classes.passive.size() && classes.passive[c])) continue;
    std::vector<Cost>& row = model->unary[c];
    for (int d = 0; d < model->num_devices; ++d) {
      if (row[d] != kForbidden)
        row[d] = std::min(kCostRange, row[d] + Picoseconds(runs[b] * IfSeconds(machine, d, mode)));
    }
  }
}

}  // namespace

namespace planner_internal {

std::optional<PlanError> LocatedModelError(const absl::Status& status) {
  const absl::optional<absl::Cord> at = status.GetPayload(kSourceLocPayload);
  std::pair<std::string, std::string> parts = absl::StrSplit(at ? std::string(*at) : std::string(), ':');
  PlanError error;
  if (!absl::SimpleAtoi(parts.first, &error.loc.line) || !absl::SimpleAtoi(parts.second, &error.loc.col)) {
    return std::nullopt;
  }
  error.message = std::string(status.message());
  return error;
}

absl::StatusOr<PlacementModel> BuildPlacementModel(const ir::Module& m, const PlacementClasses& classes,
                                                   const Machine& machine) {
  const int nd = static_cast<int>(machine.devices.size());
  PlacementModel model;
  model.num_devices = nd;
  model.unary.assign(classes.device.size(), std::vector<Cost>(nd, 0));
  // One mode for every placement keeps an op's cost a constant of its device (the model stays
  // linear); a placement that puts an op on the CPU then runs op by op, which only
  // EvaluatePlanCost sees.
  const LaunchMode mode = StraightLineMain(m) ? LaunchMode::kGraphReplay : LaunchMode::kEager;
  // The larger arm of an `if` by its ops' (and nested `if`s' waits') costs on their cheapest
  // devices: a weight per op that no placement changes, so the model stays linear.
  const std::vector<double> runs = planner_internal::RunsPerBinding(m, [&](ir::BindingId b) {
    const ir::ExprKind kind = m.bindings[b].expr.kind;
    const Work w = kind == ir::ExprKind::kOpCall ? WorkOf(m, b) : Work{.runs = false};
    if (!w.runs && kind != ir::ExprKind::kIf) return 0.0;
    double cheapest = INFINITY;
    for (int d = 0; d < nd; ++d) {
      cheapest = std::min(cheapest, w.runs ? OpSeconds(machine, d, w.flops, w.bytes, w.dtype, mode, w.kind)
                                           : IfSeconds(machine, d, mode));
    }
    return cheapest;
  });
  // A class may take a machine device its own (partial) device joins with.
  for (size_t c = 0; c < classes.device.size(); ++c) {
    for (int d = 0; d < nd; ++d) {
      if (!Join(classes.device[c], machine.devices[d])) model.unary[c][d] = kForbidden;
    }
    bool none = std::all_of(model.unary[c].begin(), model.unary[c].end(), [](Cost x) { return x == kForbidden; });
    if (none && c < classes.passive.size() && classes.passive[c]) {
      // Costs nothing and is named by no cut (CapacityCutAt leaves it out): its device is the defaults'.
      std::fill(model.unary[c].begin(), model.unary[c].end(), 0);
    } else if (none) {
      return absl::InvalidArgumentError(absl::StrCat("values on ", classes.device[c].ToString(), " (",
                                                     classes.origin[c], ") are on no device of the machine"));
    }
  }
  for (const PlacementClasses::Op& op : classes.ops) {
    if (op.cls == UINT32_MAX) continue;
    absl::string_view name = m.bindings[op.binding].expr.kind == ir::ExprKind::kOpCall
                                 ? m.OpName(m.bindings[op.binding].expr)
                                 : absl::string_view();
    Work w = WorkOf(m, op.binding);
    std::vector<Cost>& row = model.unary[op.cls];
    bool any = false;
    for (int d = 0; d < nd; ++d) {
      if (row[d] == kForbidden) continue;
      if (!name.empty() && !machine.Supports(name, d)) {
        row[d] = kForbidden;
        continue;
      }
      if (w.runs) {
        const double seconds = runs[op.binding] * OpSeconds(machine, d, w.flops, w.bytes, w.dtype, mode, w.kind);
        row[d] = std::min(kCostRange, row[d] + Picoseconds(seconds));
      }
      any = true;
    }
    if (!any) {
      // The smallest conflicting set: this op and what fixed its class's device.
      std::string message = absl::StrCat(name, " at ", BindingLoc(m, op.binding),
                                         " is implemented on no device that its placement allows");
      if (!classes.origin[op.cls].empty()) absl::StrAppend(&message, " (", classes.origin[op.cls], ")");
      return AtBinding(absl::InvalidArgumentError(message), m, op.binding);
    }
  }
  AddIfWaits(m, classes, machine, mode, runs, &model);
  for (const PlacementClasses::Edge& e : classes.edges) {
    double bytes = SizeOf(m, e.type).bytes;
    PlacementModel::Pair pair{e.a, e.b, std::vector<Cost>(nd * nd, 0)};
    for (int i = 0; i < nd; ++i) {
      for (int j = 0; j < nd; ++j) pair.cost[i * nd + j] = Picoseconds(CopySeconds(machine, i, j, bytes, mode));
    }
    model.pairs.push_back(std::move(pair));
  }
  model.cost_cap = CapCosts(&model);
  return model;
}

absl::Status CheckWithinCostRange(const PlacementModel& model, const std::vector<int>& device) {
  bool capped = false;
  for (size_t v = 0; v < model.unary.size(); ++v) capped |= model.unary[v][device[v]] >= model.cost_cap;
  for (const PlacementModel::Pair& p : model.pairs) {
    capped |= p.cost[device[p.a] * model.num_devices + device[p.b]] >= model.cost_cap;
  }
  if (!capped) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the cheapest placement has an op or copy of %.3g s or more, beyond the times the optimiser counts exactly "
      "for a program of %d classes",
      static_cast<double>(model.cost_cap) * 1e-12, model.unary.size()));
}

}  // namespace planner_internal

absl::StatusOr<PlanCost> EvaluatePlanCost(const PlanResult& plan, const Machine& machine) {
  const ir::Module& m = plan.module;
  PlanCost cost;
  auto device_of = [&](ir::DeviceId d) -> absl::StatusOr<int> {
    std::optional<int> i = d == ir::kNoDevice ? std::nullopt : machine.Find(m.Device(d));
    if (!i) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the plan uses ", d == ir::kNoDevice ? "?" : m.Device(d).ToString(), ", which the machine does not have"));
    }
    return *i;
  };
  // The op calls and kernels that run, on their devices.
  std::vector<std::pair<ir::BindingId, int>> runs;
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    if (plan.binding_replaced[b] || plan.binding_devices[b] == ir::kNoDevice) continue;
    const ir::Expr& e = m.bindings[b].expr;
    bool op = e.kind == ir::ExprKind::kOpCall && m.OpName(e) != "device_copy";
    bool kernel = e.kind == ir::ExprKind::kCallGlobal && m.functions[e.func].kind == ir::FuncKind::kKernel;
    if (!op && !kernel) continue;
    VDEV_ASSIGN_OR_RETURN(int device, device_of(plan.binding_devices[b]));
    if (op && !machine.Supports(m.OpName(e), device)) ++cost.unsupported;
    runs.emplace_back(b, device);
  }
  // The executor's capture rule: a straight-line @main whose ops all run on GPUs is replayed.
  bool all_on_gpus = true, uses_gpu = false;
  auto on_cpu = [&](int device) { return machine.devices[device].device_type() == DeviceType::kCPU; };
  for (const auto& [b, device] : runs) {
    all_on_gpus &= machine.devices[device].device_type() == DeviceType::kCUDA;
    uses_gpu |= !on_cpu(device);
  }
  cost.launch = StraightLineMain(m) && all_on_gpus ? LaunchMode::kGraphReplay : LaunchMode::kEager;
  // Each binding's own time, compute (an op, a kernel, an `if`'s wait for its condition) or copy;
  // then each counted as often as it runs, of an `if` the larger arm.
  std::vector<double> compute(m.bindings.size(), 0), copy(m.bindings.size(), 0), calls(m.bindings.size(), 0);
  for (const auto& [b, device] : runs) {
    Work w = WorkOf(m, b);
    if (w.runs) compute[b] = OpSeconds(machine, device, w.flops, w.bytes, w.dtype, cost.launch, w.kind);
  }
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    const ir::Expr& e = m.bindings[b].expr;
    if (plan.binding_replaced[b]) continue;
    if (e.kind == ir::ExprKind::kCallGlobal && m.functions[e.func].kind == ir::FuncKind::kGlobal) {
      calls[b] = CallSeconds(machine, cost.launch);
    }
    if (e.kind != ir::ExprKind::kIf) continue;
    const ir::Operand& condition = m.Args(e)[0];
    if (!condition.is_local()) continue;  // a constant: nothing to read back
    const ir::DeviceId on = condition.value.is_param() ? m.params[condition.value.index].device
                                                       : plan.binding_devices[condition.value.index];
    if (on == ir::kNoDevice) continue;
    VDEV_ASSIGN_OR_RETURN(int device, device_of(on));
    compute[b] = IfSeconds(machine, device, cost.launch);
  }
  double unplaced_copies = 0;  // copies without a binding of their own (none expected): always counted
  for (const PlannedCopy& c : plan.copies) {
    VDEV_ASSIGN_OR_RETURN(int src, device_of(c.src));
    VDEV_ASSIGN_OR_RETURN(int dst, device_of(c.dst));
    uses_gpu |= !on_cpu(src) || !on_cpu(dst);
    ir::TypeId type = c.of.is_param() ? m.params[c.of.index].type : m.bindings[c.of.index].type;
    const double seconds = CopySeconds(machine, src, dst, SizeOf(m, type).bytes, cost.launch);
    (c.binding < copy.size() ? copy[c.binding] : unplaced_copies) += seconds;
  }
  const std::vector<double> times =
      planner_internal::RunsPerBinding(m, [&](ir::BindingId b) { return compute[b] + copy[b] + calls[b]; });
  for (size_t b = 0; b < m.bindings.size(); ++b) {
    cost.compute += times[b] * compute[b];
    cost.copy += times[b] * copy[b];
    cost.calls += times[b] * calls[b];
  }
  cost.copy += unplaced_copies;
  cost.total = cost.compute + cost.copy + cost.calls;
  cost.run = RunSeconds(machine, uses_gpu);
  return cost;
}

namespace {

using planner_internal::DeviceSubset;
using planner_internal::RoundsResult;

// Machines this small are solved whole when capacity cuts were needed: the identical devices left
// out might have held part of the program more cheaply, and the whole machine proves it.
constexpr size_t kWholeMachineForCapacity = 64;

// A sub-machine's result in the full machine's devices.
void ToFullMachine(const DeviceSubset& subset, const Machine& machine, OptimizedPlan* r) {
  for (int& d : r->class_devices) d = subset.full_index[d];
  std::vector<double> peaks(machine.devices.size(), 0);
  for (size_t d = 0; d < r->peak_bytes.size(); ++d) peaks[subset.full_index[d]] = r->peak_bytes[d];
  r->peak_bytes = std::move(peaks);
}

// With capacity cuts on a sub-machine only the bound that ignores them holds for the whole machine
// (without capacity, the sub-machine's optimum is the machine's: internal/identical_devices.h).
void KeepOnlyRelaxationBound(const RoundsResult& rounds, OptimizedPlan* r) {
  r->optimal = rounds.relaxation_bound == rounds.model_cost;
  r->lower_bound = static_cast<double>(rounds.relaxation_bound) * 1e-12;
  r->gap = rounds.model_cost == 0 ? 0
                                  : static_cast<double>(rounds.model_cost - rounds.relaxation_bound) /
                                        static_cast<double>(rounds.model_cost);
}

// Solves on the sub-machine that keeps one of each group of identical devices, then two, four, …
// while no placement fits in memory there, up to the whole machine; the time limit covers them all.
absl::StatusOr<RoundsResult> SolveOverIdenticalDevices(const ir::Module& module, const Machine& machine,
                                                       const OptimizeOptions& options, PlanError* error) {
  const auto start = std::chrono::steady_clock::now();
  for (int keep = 1;; keep = std::min(2 * keep, kMaxMachineDevices)) {
    DeviceSubset subset = planner_internal::KeepIdenticalDevices(module, options.plan, machine, keep);
    OptimizeOptions attempt = options;
    attempt.time_limit_seconds -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (keep > 1 && attempt.time_limit_seconds <= 0) {  // a retry with no time left
      return absl::DeadlineExceededError("no plan within every device's capacity in the time limit");
    }
    bool capacity_infeasible = false;
    PlanError attempt_error;
    absl::StatusOr<RoundsResult> rounds =
        planner_internal::SolveWithCapacity(module, subset.machine, attempt, &attempt_error, &capacity_infeasible);
    if (subset.complete || (!rounds.ok() && !capacity_infeasible)) {
      *error = std::move(attempt_error);
      if (rounds.ok()) ToFullMachine(subset, machine, &rounds->optimized);
      return rounds;
    }
    if (!rounds.ok()) continue;
    if (rounds->optimized.capacity_cuts > 0 && machine.devices.size() <= kWholeMachineForCapacity) {
      keep = kMaxMachineDevices / 2;  // the next round keeps every device
      continue;
    }
    ToFullMachine(subset, machine, &rounds->optimized);
    if (rounds->optimized.capacity_cuts > 0) KeepOnlyRelaxationBound(*rounds, &rounds->optimized);
    return rounds;
  }
}

// Every op call of the plan on a device that implements it.
absl::Status CheckSupport(const PlanResult& plan, const Machine& machine) {
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    if (plan.binding_replaced[b] || plan.binding_devices[b] == ir::kNoDevice) continue;
    const ir::Expr& e = plan.module.bindings[b].expr;
    if (e.kind != ir::ExprKind::kOpCall) continue;
    std::optional<int> d = machine.Find(plan.module.Device(plan.binding_devices[b]));
    if (d && !machine.Supports(plan.module.OpName(e), *d)) {
      return absl::InternalError(absl::StrCat("optimised plan: ", plan.module.OpName(e), " at ",
                                              BindingLoc(plan.module, b), " on an unsupporting device"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OptimizedPlan> OptimizePlacement(const ir::Module& module, const Machine& machine,
                                                const OptimizeOptions& options, PlanError* error) {
  PlanError local_error;
  VDEV_ASSIGN_OR_RETURN(RoundsResult rounds,
                        SolveOverIdenticalDevices(module, machine, options, error != nullptr ? error : &local_error));
  OptimizedPlan result = std::move(rounds.optimized);
  // The re-check: every device within its capacity (the rounds' sweep), every op call on a device
  // that implements it, every annotation kept (planning the optimised output again changes nothing
  // is tested separately), the cost recomputed.
  VDEV_RETURN_IF_ERROR(CheckSupport(result.plan, machine));
  VDEV_ASSIGN_OR_RETURN(result.cost, EvaluatePlanCost(result.plan, machine));
  absl::StatusOr<PlanResult> default_plan = PlanDevices(module, options.plan);
  if (default_plan.ok()) {
    absl::StatusOr<PlanCost> cost = EvaluatePlanCost(*default_plan, machine);
    if (cost.ok()) result.default_cost = *cost;
  }
  return result;
}

}  // namespace vdev
