// OptimizePlacement: the planner's classes as a PlacementModel (roofline compute per class and
// device, copy costs between classes), solved by SolvePlacement, applied by PlanWithPlacement.
#include "vdev/optimize_placement.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/planner/internal/planner.h"
#include "src/planner/internal/placement_model.h"
#include "src/planner/placement_solver.h"
#include "vdev/status_macros.h"

namespace vdev {
namespace {

using planner_internal::Cost;
using planner_internal::kForbidden;
using planner_internal::PlacementClasses;
using planner_internal::PlacementModel;

// Elements and bytes of a type (tuples summed; dynamic dims and unknown types count as empty).
struct Size {
  double elements = 0;
  double bytes = 0;
  ir::DType dtype = ir::DType::kF32;
};

double DTypeBytes(ir::DType t) {
  switch (t) {
    case ir::DType::kF64:
    case ir::DType::kI64:
      return 8;
    case ir::DType::kF32:
    case ir::DType::kI32:
      return 4;
    case ir::DType::kF16:
    case ir::DType::kBF16:
      return 2;
    case ir::DType::kI8:
    case ir::DType::kU8:
    case ir::DType::kBool:
      return 1;
  }
  return 4;
}

Size SizeOf(const ir::Module& m, ir::TypeId type) {
  Size size;
  std::vector<ir::TypeId> work{type};
  while (!work.empty()) {
    ir::TypeId t = work.back();
    work.pop_back();
    if (t == ir::kNoType) continue;
    if (m.types.kind(t) == ir::TypeKind::kTuple) {
      for (ir::TypeId f : m.types.fields(t)) work.push_back(f);
      continue;
    }
    if (m.types.kind(t) != ir::TypeKind::kTensor) continue;
    double n = 1;
    for (int64_t d : m.types.dims(t)) n *= d == ir::kDynamicDim ? 0 : static_cast<double>(d);
    size.elements += n;
    size.dtype = m.types.node(t).dtype;
    size.bytes += n * DTypeBytes(size.dtype);
  }
  return size;
}

// Work of one op call: flops (matmul-like ops 2·M·N·K, attention 4·out·S, others a few per output
// element) and bytes read and written.
struct Work {
  double flops = 0;
  double bytes = 0;
  ir::DType dtype = ir::DType::kF32;
};

Work WorkOf(const ir::Module& m, ir::BindingId b) {
  const ir::Binding& binding = m.bindings[b];
  Size out = SizeOf(m, binding.type);
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

std::string BindingLoc(const ir::Module& m, ir::BindingId b) {
  return absl::StrCat(m.bindings[b].expr.loc.line, ":", m.bindings[b].expr.loc.col);
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
    if (std::all_of(model.unary[c].begin(), model.unary[c].end(), [](Cost x) { return x == kForbidden; })) {
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
      return absl::InvalidArgumentError(message);
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

absl::StatusOr<OptimizedPlan> OptimizePlacement(const ir::Module& module, const Machine& machine,
                                                const OptimizeOptions& options, PlanError* error) {
  OptimizedPlan result;
  auto choose = [&](const ir::Module& m,
                    const PlacementClasses& classes) -> absl::StatusOr<std::vector<std::optional<VirtualDevice>>> {
    VDEV_ASSIGN_OR_RETURN(PlacementModel model, planner_internal::BuildPlacementModel(m, classes, machine));
    planner_internal::PlacementSolveOptions solve;
    solve.time_limit_seconds = options.time_limit_seconds;
    if (options.progress) {
      solve.on_slow_solve = [&](size_t variables) {
        options.progress(absl::StrCat("optimising the placement of ", classes.device.size(), " classes (",
                                      variables, " left for Z3 after shrinking)…"));
      };
    }
    VDEV_ASSIGN_OR_RETURN(planner_internal::PlacementSolution solution, planner_internal::SolvePlacement(model, solve));
    result.optimal = solution.optimal;
    result.classes = classes.device.size();
    result.z3_variables = solution.z3_variables;
    result.solve_seconds = solution.seconds;
    std::vector<std::optional<VirtualDevice>> chosen(classes.device.size());
    for (size_t c = 0; c < chosen.size(); ++c) chosen[c] = machine.devices[solution.device[c]];
    return chosen;
  };
  PlanError local_error;
  absl::StatusOr<PlanResult> plan =
      planner_internal::PlanWithPlacement(module.Clone(), options.plan, choose, error != nullptr ? error : &local_error);
  if (!plan.ok()) return plan.status();
  // The re-check: every op call on a device that implements it, every annotation kept (planning
  // the optimised output again changes nothing is tested separately), the cost recomputed.
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
