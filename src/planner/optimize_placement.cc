// OptimizePlacement: the planner's classes as a PlacementModel (roofline compute per class and
// device, copy costs between classes), solved by SolvePlacement, applied by PlanWithPlacement.
#include "vdev/optimize_placement.h"

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
#include "src/planner/internal/placement_model.h"
#include "src/planner/internal/planner.h"
#include "src/planner/placement_solver.h"
#include "vdev/status_macros.h"

namespace vdev {
namespace {

using planner_internal::Cost;
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
};

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
  auto dim = [&](int from_end) -> double {
    if (first == ir::kNoType || m.types.kind(first) != ir::TypeKind::kTensor) return 1;
    auto dims = m.types.dims(first);
    if (static_cast<int>(dims.size()) < from_end || dims[dims.size() - from_end] == ir::kDynamicDim) return 1;
    return static_cast<double>(dims[dims.size() - from_end]);
  };
  if (op == "matmul" || op == "nn.dense" || op == "nn.batch_matmul" || op == "nn.matmul") {
    w.flops = 2 * out.elements * dim(1);
  } else if (op == "attention") {
    w.flops = 4 * out.elements * dim(2);
  } else if (op == "nn.softmax" || op == "softmax" || op == "layer_norm" || op == "rms_norm" || op == "gelu" ||
             op == "silu" || op == "silu_mul") {
    w.flops = 5 * out.elements;
  }
  return w;
}

Cost Picoseconds(double seconds) { return static_cast<Cost>(std::llround(seconds * 1e12)); }
double Seconds(Cost picoseconds) { return static_cast<double>(picoseconds) * 1e-12; }
std::string Milliseconds(Cost picoseconds) { return absl::StrFormat("%.4g ms", Seconds(picoseconds) * 1e3); }
std::string GapPercent(Cost best, Cost lower) {
  return absl::StrFormat("%.3g%%", best == 0 ? 0.0 : 100.0 * static_cast<double>(best - lower) / static_cast<double>(best));
}

std::string BindingLoc(const ir::Module& m, ir::BindingId b) {
  return absl::StrCat(m.bindings[b].expr.loc.line, ":", m.bindings[b].expr.loc.col);
}

// A model error's place in the source travels with its Status (as "LINE:COL"), so that the plan's
// error report (`vdev plan --optimize --json`) gives its line and column.
constexpr char kSourceLocPayload[] = "vdev.source_loc";
absl::Status AtBinding(absl::Status status, const ir::Module& m, ir::BindingId b) {
  status.SetPayload(kSourceLocPayload, absl::Cord(BindingLoc(m, b)));
  return status;
}
std::optional<PlanError> LocatedError(const absl::Status& status) {
  const absl::optional<absl::Cord> at = status.GetPayload(kSourceLocPayload);
  std::pair<std::string, std::string> parts = absl::StrSplit(at ? std::string(*at) : std::string(), ':');
  PlanError error;
  if (!absl::SimpleAtoi(parts.first, &error.loc.line) || !absl::SimpleAtoi(parts.second, &error.loc.col)) {
    return std::nullopt;
  }
  error.message = std::string(status.message());
  return error;
}

}  // namespace

namespace planner_internal {

absl::StatusOr<PlacementModel> BuildPlacementModel(const ir::Module& m, const PlacementClasses& classes,
                                                   const Machine& machine) {
  const int nd = static_cast<int>(machine.devices.size());
  PlacementModel model;
  model.num_devices = nd;
  model.unary.assign(classes.device.size(), std::vector<Cost>(nd, 0));
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
      return absl::InvalidArgumentError(absl::StrCat("values on ", classes.device[c].ToString(),
                                                     " (", classes.origin[c], ") are on no device of the machine"));
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
      row[d] += Picoseconds(OpSeconds(machine, d, w.flops, w.bytes, w.dtype));
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
  for (const PlacementClasses::Edge& e : classes.edges) {
    double bytes = SizeOf(m, e.type).bytes;
    PlacementModel::Pair pair{e.a, e.b, std::vector<Cost>(nd * nd, 0)};
    for (int i = 0; i < nd; ++i) {
      for (int j = 0; j < nd; ++j) pair.cost[i * nd + j] = Picoseconds(CopySeconds(machine, i, j, bytes));
    }
    model.pairs.push_back(std::move(pair));
  }
  return model;
}

}  // namespace planner_internal

absl::StatusOr<PlanCost> EvaluatePlanCost(const PlanResult& plan, const Machine& machine) {
  const ir::Module& m = plan.module;
  PlanCost cost;
  auto device_of = [&](ir::DeviceId d) -> absl::StatusOr<int> {
    std::optional<int> i = d == ir::kNoDevice ? std::nullopt : machine.Find(m.Device(d));
    if (!i) {
      return absl::InvalidArgumentError(absl::StrCat("the plan uses ", d == ir::kNoDevice ? "?" : m.Device(d).ToString(),
                                                     ", which the machine does not have"));
    }
    return *i;
  };
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    if (plan.binding_replaced[b] || plan.binding_devices[b] == ir::kNoDevice) continue;
    const ir::Expr& e = m.bindings[b].expr;
    bool op = e.kind == ir::ExprKind::kOpCall && m.OpName(e) != "device_copy";
    bool kernel = e.kind == ir::ExprKind::kCallGlobal && m.functions[e.func].kind == ir::FuncKind::kKernel;
    if (!op && !kernel) continue;
    VDEV_ASSIGN_OR_RETURN(int device, device_of(plan.binding_devices[b]));
    if (op && !machine.Supports(m.OpName(e), device)) ++cost.unsupported;
    Work w = WorkOf(m, b);
    cost.compute += OpSeconds(machine, device, w.flops, w.bytes, w.dtype);
  }
  for (const PlannedCopy& c : plan.copies) {
    VDEV_ASSIGN_OR_RETURN(int src, device_of(c.src));
    VDEV_ASSIGN_OR_RETURN(int dst, device_of(c.dst));
    ir::TypeId type = c.of.is_param() ? m.params[c.of.index].type : m.bindings[c.of.index].type;
    cost.copy += CopySeconds(machine, src, dst, SizeOf(m, type).bytes);
  }
  cost.total = cost.compute + cost.copy;
  return cost;
}

namespace {

using planner_internal::DevicePeak;
using planner_internal::LiveValue;

int64_t CapacityLimit(const Machine& machine, int device) {
  return static_cast<int64_t>(std::min(machine.specs[device].memory_bytes, 9e18));
}

std::string ValueText(const ir::Module& m, ir::ValueRef v) {
  return absl::StrCat("%", m.Name(m.ValueName(v)));
}

// A parameter's name, or the expression that makes a binding's value.
SourceLoc ValueLoc(const ir::Module& m, ir::ValueRef v) {
  return v.is_param() ? m.params[v.index].loc : m.bindings[v.index].expr.loc;
}

// A point where the plan of some round overflowed a device.
struct Overflow {
  int device;
  uint32_t item;
  uint32_t point;
};

// Why no placement fits: where a cut's values that nothing can move off its device exceed its
// capacity, the fewest of them that do (largest first), each with what fixed its device;
// otherwise (only the cuts together fail) the points of the cuts.
PlanError ExplainCapacity(const ir::Module& m, const PlacementClasses& classes, const PlacementModel& model,
                          const std::vector<std::vector<ir::ValueRef>>& term_values,
                          const std::vector<Overflow>& overflows, const Machine& machine) {
  PlanError error;
  for (size_t c = 0; c < model.capacity.size(); ++c) {
    const PlacementModel::CapacityCut& cut = model.capacity[c];
    auto only_on_cut_device = [&](uint32_t v) {
      for (int d = 0; d < model.num_devices; ++d) {
        if (d != cut.device && model.unary[v][d] != kForbidden) return false;
      }
      return true;
    };
    std::vector<size_t> forced;
    for (size_t t = 0; t < cut.terms.size(); ++t) {
      const auto& term = cut.terms[t];
      bool other_cannot_join = term.other == UINT32_MAX || model.unary[term.other][cut.device] == kForbidden;
      if (only_on_cut_device(term.var) && other_cannot_join) forced.push_back(t);
    }
    std::stable_sort(forced.begin(), forced.end(),
                     [&](size_t a, size_t b) { return cut.terms[a].bytes > cut.terms[b].bytes; });
    int64_t sum = 0;
    size_t needed = 0;
    while (needed < forced.size() && sum <= cut.limit) sum += cut.terms[forced[needed++]].bytes;
    if (sum <= cut.limit) continue;
    ir::BindingId at = planner_internal::BindingAt(m, overflows[c].item, overflows[c].point);
    const VirtualDevice& device = machine.devices[cut.device];
    error.loc = at == ir::kNoBinding ? SourceLoc{} : m.bindings[at].expr.loc;
    error.message = absl::StrCat("the values live here need ", sum, " bytes on ", device.ToString(),
                                 ", which holds ", cut.limit, ": no placement fits in its memory");
    for (size_t k = 0; k < needed; ++k) {
      const auto& term = cut.terms[forced[k]];
      ir::ValueRef v = term_values[c][forced[k]];
      std::string why = classes.origin[term.var].empty() ? std::string("its ops run only there")
                                                         : absl::StrCat("placed by ", classes.origin[term.var]);
      error.conflicts.push_back({ValueLoc(m, v), device,
                                 absl::StrCat(ValueText(m, v), " (", term.bytes, " bytes) is live here on ",
                                              device.ToString(), ", ", why)});
    }
    return error;
  }
  // A value larger than every device its class may take.
  for (size_t c = 0; c < model.capacity.size(); ++c) {
    const PlacementModel::CapacityCut& cut = model.capacity[c];
    for (size_t t = 0; t < cut.terms.size(); ++t) {
      const auto& term = cut.terms[t];
      bool fits_somewhere = false;
      for (int d = 0; d < model.num_devices; ++d) {
        fits_somewhere |= model.unary[term.var][d] != kForbidden && term.bytes <= CapacityLimit(machine, d);
      }
      if (fits_somewhere) continue;
      ir::ValueRef v = term_values[c][t];
      error.loc = ValueLoc(m, v);
      error.message = absl::StrCat(ValueText(m, v), " needs ", term.bytes,
                                   " bytes, more than any device its placement allows holds");
      std::string why = classes.origin[term.var].empty() ? std::string("its ops run only on devices that small")
                                                         : absl::StrCat("placed by ", classes.origin[term.var]);
      error.conflicts.push_back({ValueLoc(m, v), machine.devices[cut.device],
                                 absl::StrCat(ValueText(m, v), " (", term.bytes, " bytes), ", why)});
      return error;
    }
  }
  error.message = "no placement keeps every device within its capacity at these points together:";
  for (const Overflow& o : overflows) {
    ir::BindingId at = planner_internal::BindingAt(m, o.item, o.point);
    if (at == ir::kNoBinding) continue;
    if (!error.loc.valid()) error.loc = m.bindings[at].expr.loc;
    absl::StrAppend(&error.message, " ", machine.devices[o.device].ToString(), " at ",
                    BindingLoc(m, at));
  }
  return error;
}

}  // namespace

absl::StatusOr<OptimizedPlan> OptimizePlacement(const ir::Module& module, const Machine& machine,
                                                const OptimizeOptions& options, PlanError* error) {
  OptimizedPlan result;
  const std::vector<uint32_t> points = planner_internal::InputPoints(module);
  std::vector<LiveValue> input_values;  // made at the first overflow
  std::vector<Overflow> overflows;
  std::optional<PlanError> capacity_error;
  std::optional<PlanError> model_error;  // located: an op that no device of the machine implements
  double seconds_left = options.time_limit_seconds;
  Cost model_cost = 0;  // of the last round's solution, and its bounds (placement_solver.h)
  Cost lower_bound = 0;
  Cost relaxation_bound = 0;
  auto choose = [&](const ir::Module& m,
                    const PlacementClasses& classes) -> absl::StatusOr<std::vector<std::optional<VirtualDevice>>> {
    absl::StatusOr<PlacementModel> built = planner_internal::BuildPlacementModel(m, classes, machine);
    if (!built.ok()) {
      model_error = LocatedError(built.status());
      return built.status();
    }
    PlacementModel& model = *built;
    // One cut per point where an earlier round's plan overflowed.
    std::vector<std::vector<ir::ValueRef>> term_values(overflows.size());
    for (size_t k = 0; k < overflows.size(); ++k) {
      const Overflow& o = overflows[k];
      model.capacity.push_back(planner_internal::CapacityCutAt(input_values, classes, machine, o.item, o.point,
                                                               o.device, CapacityLimit(machine, o.device),
                                                               &term_values[k]));
    }
    planner_internal::PlacementSolveOptions solve;
    solve.time_limit_seconds = seconds_left;
    solve.slow_after_seconds = options.progress_after_seconds;
    solve.bound_first = options.bound_first;
    if (options.progress) {
      solve.on_slow_solve = [&](const planner_internal::PlacementProgress& p) {
        std::string line = absl::StrCat("optimising the placement of ", classes.device.size(), " classes (",
                                        p.z3_variables, " left for Z3 after shrinking");
        if (p.best != kForbidden) {
          absl::StrAppend(&line, "; best so far ", Milliseconds(p.best), ", lower bound ", Milliseconds(p.lower_bound),
                          ", gap ", GapPercent(p.best, p.lower_bound));
        } else {
          absl::StrAppend(&line, "; lower bound ", Milliseconds(p.lower_bound));
        }
        options.progress(line + ")…");
      };
    }
    absl::StatusOr<planner_internal::PlacementSolution> solution = planner_internal::SolvePlacement(model, solve);
    if (absl::IsFailedPrecondition(solution.status())) {
      capacity_error = ExplainCapacity(m, classes, model, term_values, overflows, machine);
      return absl::InvalidArgumentError(capacity_error->message);
    }
    if (!solution.ok()) return solution.status();
    result.optimal = solution->optimal;
    model_cost = solution->cost;
    lower_bound = solution->lower_bound;
    relaxation_bound = solution->relaxation_bound;
    result.classes = classes.device.size();
    result.z3_variables = solution->z3_variables;
    result.solve_seconds += solution->seconds;
    result.class_devices = solution->device;
    std::vector<bool> in_cut(classes.device.size(), false);
    for (const PlacementModel::CapacityCut& cut : model.capacity) {
      for (const auto& t : cut.terms) {
        in_cut[t.var] = true;
        if (t.other != UINT32_MAX) in_cut[t.other] = true;
      }
    }
    std::vector<std::optional<VirtualDevice>> chosen(classes.device.size());
    for (size_t c = 0; c < chosen.size(); ++c) {
      if (!classes.passive[c] || in_cut[c]) chosen[c] = machine.devices[solution->device[c]];
    }
    return chosen;
  };
  PlanError local_error;
  PlanError* plan_error = error != nullptr ? error : &local_error;
  absl::StatusOr<PlanResult> plan;
  // Solve, sweep the plan's liveness, and while a device overflows, solve again with a cut where
  // each device overflowed; the time limit covers every round.
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    seconds_left =
        options.time_limit_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!overflows.empty() && seconds_left <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("no plan within every device's capacity in the time limit (",
                                                      overflows.size(), " capacity cuts)"));
    }
    plan = planner_internal::PlanWithPlacement(module.Clone(), options.plan, choose, plan_error);
    if (!plan.ok()) {
      if (const std::optional<PlanError>& located = capacity_error ? capacity_error : model_error) {
        *plan_error = *located;
        return absl::InvalidArgumentError(absl::StrCat(located->loc.line, ":", located->loc.col, ": ", located->message));
      }
      return plan.status();
    }
    result.peak_bytes.clear();
    std::vector<Overflow> overflowed;
    std::vector<DevicePeak> peaks = planner_internal::PeakBytes(*plan, points, machine);
    for (int d = 0; d < static_cast<int>(peaks.size()); ++d) {
      result.peak_bytes.push_back(static_cast<double>(peaks[d].bytes));
      if (peaks[d].bytes > CapacityLimit(machine, d)) overflowed.push_back({d, peaks[d].item, peaks[d].point});
    }
    if (overflowed.empty()) break;
    std::optional<Overflow> overflow;  // a new point, if any
    for (const Overflow& candidate : overflowed) {
      bool seen = std::any_of(overflows.begin(), overflows.end(), [&](const Overflow& o) {
        return o.device == candidate.device && o.item == candidate.item && o.point == candidate.point;
      });
      if (!seen) {
        if (input_values.empty()) input_values = planner_internal::LiveValues(module, points);
        overflows.push_back(candidate);
        overflow = candidate;
      }
    }
    if (!overflow) {
      overflow = overflowed.front();
      // The cut there held, so what overflows is what it does not count (copies the planner adds
      // at conflicts and kernel boundaries): not modelled, so not silently accepted.
      ir::BindingId at = planner_internal::BindingAt(module, overflow->item, overflow->point);
      plan_error->loc = at == ir::kNoBinding ? SourceLoc{} : module.bindings[at].expr.loc;
      plan_error->message = absl::StrCat("the optimised plan needs ", peaks[overflow->device].bytes, " bytes on ",
                                         machine.devices[overflow->device].ToString(), " here (capacity ",
                                         CapacityLimit(machine, overflow->device),
                                         "), partly for copies the capacity model does not count");
      plan_error->conflicts.clear();
      return absl::UnimplementedError(absl::StrCat(plan_error->loc.line, ":", plan_error->loc.col, ": ",
                                                   plan_error->message));
    }
  }
  result.capacity_cuts = overflows.size();
  // With cuts, optimality holds where the cuts bound the plans' live bytes from below; copies the
  // planner adds (conflicts, kernel boundaries) can end a value's life earlier than the cut counts.
  bool added_copies = std::any_of(plan->copies.begin(), plan->copies.end(),
                                  [&](const PlannedCopy& c) { return c.binding >= plan->input_bindings; });
  if (!overflows.empty() && added_copies) {
    // The optimum under the cuts may then exceed the optimum under capacity: only the bound that
    // ignores the cuts is proven; meeting the plan's cost, it still proves the plan optimal.
    lower_bound = relaxation_bound;
    result.optimal = lower_bound == model_cost;
  }
  result.model_cost = Seconds(model_cost);
  result.lower_bound = Seconds(lower_bound);
  result.gap = model_cost == 0 ? 0 : static_cast<double>(model_cost - lower_bound) / static_cast<double>(model_cost);
  // The re-check: every device within its capacity (the sweep above), every op call on a device
  // that implements it, every annotation kept (planning the optimised output again changes nothing
  // is tested separately), the cost recomputed.
  for (ir::BindingId b = 0; b < plan->input_bindings; ++b) {
    if (plan->binding_replaced[b] || plan->binding_devices[b] == ir::kNoDevice) continue;
    const ir::Expr& e = plan->module.bindings[b].expr;
    if (e.kind != ir::ExprKind::kOpCall) continue;
    std::optional<int> d = machine.Find(plan->module.Device(plan->binding_devices[b]));
    if (d && !machine.Supports(plan->module.OpName(e), *d)) {
      return absl::InternalError(absl::StrCat("optimised plan: ", plan->module.OpName(e), " at ",
                                              BindingLoc(plan->module, b), " on an unsupporting device"));
    }
  }
  VDEV_ASSIGN_OR_RETURN(result.cost, EvaluatePlanCost(*plan, machine));
  absl::StatusOr<PlanResult> default_plan = PlanDevices(module, options.plan);
  if (default_plan.ok()) {
    absl::StatusOr<PlanCost> cost = EvaluatePlanCost(*default_plan, machine);
    if (cost.ok()) result.default_cost = *cost;
  }
  result.plan = *std::move(plan);
  return result;
}

}  // namespace vdev
