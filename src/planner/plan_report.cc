// The `vdev plan --json` report (shared/spec/plan-json.md).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "vdev/plan_devices.h"

namespace vdev {
namespace {

using Json = nlohmann::ordered_json;

std::string DeviceText(const ir::Module& m, ir::DeviceId d) {
  return d == ir::kNoDevice ? "?" : m.Device(d).ToString();
}

std::string ValueText(const ir::Module& m, ir::ValueRef v) { return std::string(m.Name(m.ValueName(v))); }

}  // namespace

std::string PlanReportJson(const PlanResult& plan) {
  const ir::Module& m = plan.module;
  // Local functions are named by their path of enclosing functions (main/f/inner).
  std::vector<std::string> path(m.functions.size());
  // Built apart and assembled at the end: ordered_json entries move when the object grows.
  std::vector<Json> entries(m.functions.size());
  std::vector<Json*> entry(m.functions.size(), nullptr);
  for (ir::FuncId f = 0; f < m.functions.size(); ++f) {
    const ir::Function& fn = m.functions[f];
    path[f] = fn.parent == ir::kNoFunc ? std::string(m.Name(fn.name))
                                       : absl::StrCat(path[fn.parent], "/", m.Name(fn.name));
    if (fn.kind == ir::FuncKind::kKernel || fn.primitive) continue;
    Json params = Json::object();
    for (const ir::Param& p : m.Params(fn)) params[std::string(m.Name(p.name))] = DeviceText(m, p.device);
    Json& j = entries[f];
    j["params"] = std::move(params);
    j["result"] = DeviceText(m, fn.result_device);
    j["bindings"] = Json::object();
    j["copies"] = Json::array();
    entry[f] = &j;
  }
  for (ir::BindingId b = 0; b < plan.input_bindings; ++b) {
    if (plan.binding_replaced[b] || plan.binding_devices[b] == ir::kNoDevice) continue;
    ir::FuncId f = m.blocks[m.bindings[b].block].func;
    if (entry[f] == nullptr) continue;
    // Names are unique per function: append without ordered_json's linear key search.
    auto* bindings = (*entry[f])["bindings"].get_ptr<Json::object_t*>();
    static_cast<std::vector<Json::object_t::value_type>&>(*bindings)
        .emplace_back(std::string(m.Name(m.bindings[b].name)), DeviceText(m, plan.binding_devices[b]));
  }
  for (const PlannedCopy& c : plan.copies) {
    if (entry[c.func] == nullptr) continue;
    Json copy = {{"of", ValueText(m, c.of)}, {"src", DeviceText(m, c.src)}, {"dst", DeviceText(m, c.dst)}};
    copy["into"] = c.into == ir::kNoBinding ? std::string("return") : ValueText(m, ir::ValueRef::Binding(c.into));
    (*entry[c.func])["copies"].push_back(std::move(copy));
  }
  Json functions = Json::object();
  for (ir::FuncId f = 0; f < m.functions.size(); ++f) {
    if (entry[f] != nullptr) functions[path[f]] = std::move(entries[f]);
  }
  Json kernels = Json::object();
  for (ir::FuncId f : m.items) {
    const ir::Function& fn = m.functions[f];
    if (fn.kind != ir::FuncKind::kKernel) continue;
    Json params = Json::array();
    for (const ir::Param& p : m.Params(fn)) params.push_back(DeviceText(m, p.device));
    kernels[std::string(m.Name(fn.name))] = {{"params", std::move(params)},
                                             {"result", DeviceText(m, fn.result_device)}};
  }
  Json warnings = Json::array();
  for (const Diagnostic& w : plan.warnings) {
    warnings.push_back({{"line", w.loc.line}, {"col", w.loc.col}, {"message", w.message}});
  }
  Json report = {{"functions", std::move(functions)}, {"kernels", std::move(kernels)},
                 {"warnings", std::move(warnings)}};
  return report.dump(2) + "\n";
}

std::string PlanErrorJson(const PlanError& error) {
  Json conflicts = Json::array();
  for (const ConflictAnnotation& c : error.conflicts) {
    conflicts.push_back({{"line", c.loc.line}, {"col", c.loc.col}, {"device", c.device.ToString()},
                         {"annotation", c.what}});
  }
  Json report = {{"error",
                  {{"line", error.loc.line}, {"col", error.loc.col}, {"message", error.message},
                   {"conflicts", std::move(conflicts)}}}};
  return report.dump(2) + "\n";
}

}  // namespace vdev
