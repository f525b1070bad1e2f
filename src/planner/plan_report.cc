// The `vdev plan --json` report (docs/spec/plan-json.md), with `--optimize`'s cost fields.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "json_object/json_object.h"
#include "nlohmann/json.hpp"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"

namespace vdev {
namespace {

using Json = nlohmann::ordered_json;
using JsonObject = ir_internal::JsonObject<Json>;

std::string DeviceText(const ir::Module& m, ir::DeviceId d) {
  return d == ir::kNoDevice ? "?" : m.Device(d).ToString();
}

std::string ValueText(const ir::Module& m, ir::ValueRef v) { return std::string(m.Name(m.ValueName(v))); }

Json PlanReport(const PlanResult& plan) {
  const ir::Module& m = plan.module;
  // Local functions are named by their path of enclosing functions (main/f/inner).
  std::vector<std::string> path(m.functions.size());
  std::vector<bool> reported(m.functions.size(), false);
  std::vector<JsonObject> bindings(m.functions.size());
  std::vector<Json> copies(m.functions.size());
  for (ir::FuncId f = 0; f < m.functions.size(); ++f) {
    const ir::Function& fn = m.functions[f];
    path[f] =
        fn.parent == ir::kNoFunc ? std::string(m.Name(fn.name)) : absl::StrCat(path[fn.parent], "/", m.Name(fn.name));
    reported[f] = fn.kind != ir::FuncKind::kKernel && !fn.primitive;
    copies[f] = Json::array();
  }
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    if (plan.binding_replaced[b] || plan.binding_devices[b] == ir::kNoDevice) continue;
    ir::FuncId f = m.blocks[m.bindings[b].block].func;
    if (reported[f])
      bindings[f].Append(std::string(m.Name(m.bindings[b].name)), DeviceText(m, plan.binding_devices[b]));
  }
  for (const PlannedCopy& c : plan.copies) {
    if (!reported[c.func]) continue;
    Json copy = {{"of", ValueText(m, c.of)}, {"src", DeviceText(m, c.src)}, {"dst", DeviceText(m, c.dst)}};
    copy["into"] = c.into == ir::kNoBinding ? std::string("return") : ValueText(m, ir::ValueRef::Binding(c.into));
    copies[c.func].push_back(std::move(copy));
  }
  JsonObject functions;
  for (ir::FuncId f = 0; f < m.functions.size(); ++f) {
    if (!reported[f]) continue;
    const ir::Function& fn = m.functions[f];
    JsonObject params;
    for (const ir::Param& p : m.Params(fn)) params.Set(std::string(m.Name(p.name)), DeviceText(m, p.device));
    functions.Set(std::move(path[f]), {{"params", std::move(params).Take()},
                                       {"result", DeviceText(m, fn.result_device)},
                                       {"bindings", std::move(bindings[f]).Take()},
                                       {"copies", std::move(copies[f])}});
  }
  JsonObject kernels;
  for (ir::FuncId f : m.items) {
    const ir::Function& fn = m.functions[f];
    if (fn.kind != ir::FuncKind::kKernel) continue;
    Json params = Json::array();
    for (const ir::Param& p : m.Params(fn)) params.push_back(DeviceText(m, p.device));
    kernels.Set(std::string(m.Name(fn.name)),
                {{"params", std::move(params)}, {"result", DeviceText(m, fn.result_device)}});
  }
  Json warnings = Json::array();
  for (const Diagnostic& w : plan.warnings) {
    warnings.push_back({{"line", w.loc.line}, {"col", w.loc.col}, {"message", w.message}});
  }
  return {{"functions", std::move(functions).Take()},
          {"kernels", std::move(kernels).Take()},
          {"warnings", std::move(warnings)}};
}

Json CostJson(const PlanCost& cost) {
  return {{"total", cost.total},
          {"compute", cost.compute},
          {"copy", cost.copy},
          {"calls", cost.calls},
          {"run", cost.run},
          {"unsupported_ops", cost.unsupported},
          {"launch", cost.launch == LaunchMode::kGraphReplay ? "graph_replay" : "op_by_op"}};
}

}  // namespace

std::string PlanReportJson(const PlanResult& plan) { return ir_internal::ReportText(PlanReport(plan)); }

std::string OptimizedReportJson(const PlanResult& plan, const OptimizedPlan& optimized, const Machine& machine) {
  Json report = PlanReport(plan);
  // A handful of keys on the top-level object, not a parse of the report: parsing into ordered_json
  // searches each object's keys linearly, O(n²) in the bindings of a function.
  report["cost"] = CostJson(optimized.cost);
  report["optimal"] = optimized.optimal;
  report["lower_bound"] = optimized.lower_bound;
  report["gap"] = optimized.gap;
  report["model_cost"] = optimized.model_cost;
  report["default_cost"] = CostJson(optimized.default_cost);
  JsonObject peaks;
  for (size_t d = 0; d < optimized.peak_bytes.size() && d < machine.devices.size(); ++d) {
    peaks.Set(machine.devices[d].ToString(), static_cast<int64_t>(optimized.peak_bytes[d]));
  }
  report["peak_bytes"] = std::move(peaks).Take();
  return ir_internal::ReportText(report);
}

std::string PlanErrorJson(const PlanError& error) {
  Json conflicts = Json::array();
  for (const ConflictAnnotation& c : error.conflicts) {
    conflicts.push_back(
        {{"line", c.loc.line}, {"col", c.loc.col}, {"device", c.device.ToString()}, {"annotation", c.what}});
  }
  Json report = {{"error",
                  {{"line", error.loc.line},
                   {"col", error.loc.col},
                   {"message", error.message},
                   {"conflicts", std::move(conflicts)}}}};
  return ir_internal::ReportText(report);
}

}  // namespace vdev
