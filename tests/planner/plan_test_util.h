// Helpers for PlanDevices tests: plan a text program, read its report, compare facts, idempotence.
#ifndef VDEV_TESTS_PLANNER_PLAN_TEST_UTIL_H_
#define VDEV_TESTS_PLANNER_PLAN_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::testing {

struct PlanOutcome {
  absl::Status status;
  PlanError error;
  std::string text;       // the planned program (PrintModule)
  nlohmann::json report;  // PlanReportJson, parsed
  std::vector<Diagnostic> warnings;
};

// Parses, verifies and plans `program`; a parse or verify failure is reported in `status`.
// `report`: also build the JSON report (large for deeply nested programs: paths name every level).
PlanOutcome PlanText(const std::string& program, const PlanOptions& options = {}, bool report = true);

// Parses, verifies and plans `text` (no optimisation) and costs the plan on `machine`.
absl::StatusOr<PlanCost> CostOf(const std::string& text, const Machine& machine);

// Empty when the report matches the spec's structure (plan-json.md); otherwise what is wrong.
std::string ValidateReport(const nlohmann::json& report);
std::string ValidateErrorReport(const nlohmann::json& report);

// Compares `expected` facts ({"functions": {name: {params, result, bindings, copies}}, "kernels"})
// with a report. `exact`: every function, parameter and binding of the report must be listed, and
// devices must print identically; otherwise only listed ones are checked, comparing devices by
// type, id and scope (the examples' rule). Copies are always compared as an exact multiset; an
// expected copy without "into" matches any. Returns "" on a match.
std::string CompareFacts(const nlohmann::json& expected, const nlohmann::json& report, bool exact);

// "" when planning the planned text again gives the same text.
std::string CheckIdempotent(const std::string& planned_text, const PlanOptions& options = {});

}  // namespace vdev::testing

#endif  // VDEV_TESTS_PLANNER_PLAN_TEST_UTIL_H_
