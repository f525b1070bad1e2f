// PlanDevices test helpers: planning text, structural validation of the JSON report, fact checks.
#include "planner/plan_test_util.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "vdev/ir/ir_text.h"

namespace vdev::testing {
namespace {

using nlohmann::json;

bool IsCanonicalDevice(const json& j) {
  if (!j.is_string()) return false;
  absl::StatusOr<VirtualDevice> d = ParseVirtualDevice(j.get<std::string>());
  return d.ok() && d->ToString() == j.get<std::string>();
}

bool SameDevice(const std::string& a, const std::string& b, bool exact) {
  if (exact) return a == b;
  absl::StatusOr<VirtualDevice> x = ParseVirtualDevice(a);
  absl::StatusOr<VirtualDevice> y = ParseVirtualDevice(b);
  return x.ok() && y.ok() && x->device_type() == y->device_type() && x->virtual_device_id() == y->virtual_device_id() &&
         x->memory_scope() == y->memory_scope();
}

std::string CompareDeviceMap(const std::string& where, const json& expected, const json& actual, bool exact) {
  std::string out;
  for (auto& [name, device] : expected.items()) {
    if (!actual.contains(name)) {
      absl::StrAppend(&out, where, ": ", name, " missing; ");
    } else if (!SameDevice(device.get<std::string>(), actual[name].get<std::string>(), exact)) {
      absl::StrAppend(&out, where, ": ", name, " is ", actual[name].get<std::string>(), ", expected ",
                      device.get<std::string>(), "; ");
    }
  }
  if (exact) {
    for (auto& [name, device] : actual.items()) {
      if (!expected.contains(name)) absl::StrAppend(&out, where, ": unexpected ", name, "=", device.dump(), "; ");
    }
  }
  return out;
}

std::string CompareCopies(const std::string& where, const json& expected, const json& actual, bool exact) {
  std::vector<json> left(actual.begin(), actual.end());
  std::string out;
  for (const json& want : expected) {
    auto it = std::find_if(left.begin(), left.end(), [&](const json& got) {
      return got["of"] == want["of"] && SameDevice(want["src"], got["src"], exact) &&
             SameDevice(want["dst"], got["dst"], exact) && (!want.contains("into") || got["into"] == want["into"]);
    });
    if (it == left.end()) {
      absl::StrAppend(&out, where, ": missing copy ", want.dump(), "; ");
    } else {
      left.erase(it);
    }
  }
  for (const json& extra : left) absl::StrAppend(&out, where, ": unexpected copy ", extra.dump(), "; ");
  return out;
}

}  // namespace

absl::StatusOr<PlanCost> CostOf(const std::string& text, const Machine& machine) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(text);
  if (!module.ok()) return module.status();
  if (absl::Status verified = ir::VerifyModule(*module); !verified.ok()) return verified;
  absl::StatusOr<PlanResult> plan = PlanDevices(*module, {});
  if (!plan.ok()) return plan.status();
  return EvaluatePlanCost(*plan, machine);
}

PlanOutcome PlanText(const std::string& program, const PlanOptions& options, bool report) {
  PlanOutcome outcome;
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(program, &diag);
  if (!module.ok()) {
    outcome.status = module.status();
    return outcome;
  }
  outcome.status = ir::VerifyModule(*module, &diag);
  if (!outcome.status.ok()) return outcome;
  absl::StatusOr<PlanResult> plan = PlanDevices(*module, options, &outcome.error);
  outcome.status = plan.status();
  if (!plan.ok()) return outcome;
  outcome.text = ir::PrintModule(plan->module);
  if (report) outcome.report = json::parse(PlanReportJson(*plan));
  outcome.warnings = plan->warnings;
  return outcome;
}

std::string ValidateReport(const json& report) {
  std::string out;
  auto fail = [&](const std::string& what) { absl::StrAppend(&out, what, "; "); };
  if (!report.is_object()) return "not an object";
  for (const char* key : {"functions", "kernels", "warnings"}) {
    if (!report.contains(key)) fail(absl::StrCat("no \"", key, "\""));
  }
  for (auto& [key, value] : report.items()) {
    if (key == "cost" || key == "default_cost") {  // `--optimize`
      for (const char* part : {"total", "compute", "copy", "unsupported_ops"}) {
        if (!value.is_object() || !value.contains(part) || !value[part].is_number()) {
          fail(absl::StrCat(key, ".", part, " is not a number"));
        }
      }
    } else if (key == "optimal") {
      if (!value.is_boolean()) fail("optimal is not a boolean");
    } else if (key == "lower_bound" || key == "model_cost") {  // `--optimize`: seconds
      if (!value.is_number() || value.get<double>() < 0) fail(key + " is not a number of seconds");
    } else if (key == "gap") {  // `--optimize`: 0 exactly when optimal
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1) fail("gap is not in [0, 1]");
      if (report.contains("optimal") && report["optimal"].is_boolean() &&
          report["optimal"].get<bool>() != (value.get<double>() == 0)) {
        fail("gap is 0 but optimal is false, or the reverse");
      }
    } else if (key == "peak_bytes") {  // `--optimize`: by device of the machine
      if (!value.is_object()) fail("peak_bytes is not an object");
      for (auto& [device, bytes] : value.items()) {
        if (!bytes.is_number_integer() || bytes.get<int64_t>() < 0) fail("peak_bytes." + device + " is not a count");
      }
    } else if (key != "functions" && key != "kernels" && key != "warnings") {
      fail("unknown key " + key);
    }
  }
  if (!out.empty()) return out;
  if (!report["functions"].is_object()) return "functions is not an object";
  for (auto& [name, fn] : report["functions"].items()) {
    if (!fn.is_object() || fn.size() != 4) {
      fail(name + ": needs exactly params, result, bindings, copies");
      continue;
    }
    if (!fn["params"].is_object()) fail(name + ".params is not an object");
    for (auto& [p, d] : fn["params"].items()) {
      if (!IsCanonicalDevice(d)) fail(name + ".params." + p + " is not a canonical device");
    }
    if (!IsCanonicalDevice(fn["result"])) fail(name + ".result is not a canonical device");
    if (!fn["bindings"].is_object()) fail(name + ".bindings is not an object");
    for (auto& [b, d] : fn["bindings"].items()) {
      if (!IsCanonicalDevice(d)) fail(name + ".bindings." + b + " is not a canonical device");
    }
    if (!fn["copies"].is_array()) fail(name + ".copies is not an array");
    for (const json& c : fn["copies"]) {
      if (!c.is_object() || c.size() != 4 || !c.contains("of") || !c["of"].is_string() || !c.contains("into") ||
          !c["into"].is_string() || !c.contains("src") || !IsCanonicalDevice(c["src"]) || !c.contains("dst") ||
          !IsCanonicalDevice(c["dst"])) {
        fail(name + ": malformed copy " + c.dump());
      }
    }
  }
  if (!report["kernels"].is_object()) return out + "kernels is not an object";
  for (auto& [name, k] : report["kernels"].items()) {
    if (!k.is_object() || k.size() != 2 || !k.contains("params") || !k["params"].is_array() || !k.contains("result") ||
        !IsCanonicalDevice(k["result"])) {
      fail("kernel " + name + " malformed");
      continue;
    }
    for (const json& d : k["params"]) {
      if (!IsCanonicalDevice(d)) fail("kernel " + name + " has a non-canonical parameter device");
    }
  }
  if (!report["warnings"].is_array()) return out + "warnings is not an array";
  for (const json& w : report["warnings"]) {
    if (!w.is_object() || w.size() != 3 || !w.contains("line") || !w["line"].is_number_integer() ||
        !w.contains("col") || !w["col"].is_number_integer() || !w.contains("message") || !w["message"].is_string()) {
      fail("malformed warning " + w.dump());
    }
  }
  return out;
}

std::string ValidateErrorReport(const json& report) {
  if (!report.is_object() || report.size() != 1 || !report.contains("error")) return "not {\"error\": …}";
  const json& e = report["error"];
  if (!e.is_object() || !e.contains("line") || !e["line"].is_number_integer() || !e.contains("col") ||
      !e["col"].is_number_integer() || !e.contains("message") || !e["message"].is_string() ||
      !e.contains("conflicts") || !e["conflicts"].is_array()) {
    return "malformed error " + e.dump();
  }
  for (const json& c : e["conflicts"]) {
    if (!c.is_object() || !c.contains("line") || !c["line"].is_number_integer() || !c.contains("col") ||
        !c["col"].is_number_integer()) {
      return "malformed conflict " + c.dump();
    }
  }
  return "";
}

std::string CompareFacts(const json& expected, const json& report, bool exact) {
  std::string out;
  const json& functions = report["functions"];
  for (auto& [name, want] : expected["functions"].items()) {
    if (!functions.contains(name)) {
      absl::StrAppend(&out, "no function ", name, "; ");
      continue;
    }
    const json& got = functions[name];
    if (want.contains("params"))
      absl::StrAppend(&out, CompareDeviceMap(name + ".params", want["params"], got["params"], exact));
    if (want.contains("result") && !SameDevice(want["result"], got["result"], exact)) {
      absl::StrAppend(&out, name, ".result is ", got["result"].get<std::string>(), "; ");
    }
    if (want.contains("bindings")) {
      absl::StrAppend(&out, CompareDeviceMap(name + ".bindings", want["bindings"], got["bindings"], exact));
    }
    if (want.contains("copies"))
      absl::StrAppend(&out, CompareCopies(name + ".copies", want["copies"], got["copies"], exact));
  }
  if (exact) {
    for (auto& [name, fn] : functions.items()) {
      if (!expected["functions"].contains(name)) absl::StrAppend(&out, "unexpected function ", name, "; ");
    }
  }
  if (expected.contains("kernels")) {
    for (auto& [name, want] : expected["kernels"].items()) {
      if (!report["kernels"].contains(name) || report["kernels"][name] != want) {
        absl::StrAppend(&out, "kernel ", name, " is ", report["kernels"].value(name, json()).dump(), "; ");
      }
    }
    if (report["kernels"].size() != expected["kernels"].size()) absl::StrAppend(&out, "kernel count differs; ");
  }
  return out;
}

std::string CheckIdempotent(const std::string& planned_text, const PlanOptions& options) {
  PlanOutcome again = PlanText(planned_text, options, /*report=*/false);
  if (!again.status.ok()) return absl::StrCat("replanning failed: ", again.status.message());
  if (again.text != planned_text) return absl::StrCat("replanning changed the text:\n", again.text);
  if (!again.warnings.empty()) return "replanning warned: " + again.warnings[0].message;
  return "";
}

}  // namespace vdev::testing
