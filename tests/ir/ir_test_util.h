// Helpers of the IR tests: parse-and-verify with readable failures, and the canonical round trip.
#ifndef VDEV_TESTS_PLANNER_IR_TEST_UTIL_H_
#define VDEV_TESTS_PLANNER_IR_TEST_UTIL_H_

#include <string>

#include "gtest/gtest.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/diagnostic.h"

namespace vdev::ir::testing {

// The example of docs/spec/ir-text.md, and the planned program it shows.
inline constexpr const char kSpecExample[] =
    "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
    "def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) -> f32[5,7] {\n"
    "  %0 = add(%a, %b)\n"
    "  %1 = on_device(%0, cpu:0)\n"
    "  %2 = add(%c, %d)\n"
    "  %3 = subtract(%1, %2)\n"
    "  return %3\n"
    "}\n";
inline constexpr const char kPlannedSpecExample[] =
    "def @main(%a: f32[5,7] on cpu:0, %b: f32[5,7] on cpu:0, %c: f32[5,7] on cuda:0, %d: f32[5,7] on cuda:0) "
    "-> f32[5,7] on cuda:0 {\n"
    "  %0 = add(%a, %b)\n"
    "  %1 = device_copy(%0, src=cpu:0, dst=cuda:0)\n"
    "  %2 = add(%c, %d)\n"
    "  %3 = subtract(%1, %2)\n"
    "  return %3\n"
    "}\n";

// Parses and verifies; on failure returns the formatted diagnostic in *error.
inline std::optional<Module> ParseAndVerify(absl::string_view text, std::string* error = nullptr) {
  Diagnostic diag;
  absl::StatusOr<Module> m = ParseModule(text, &diag);
  if (m.ok() && VerifyModule(*m, &diag).ok()) return std::move(*m);
  if (error != nullptr) *error = FormatDiagnostic("input", text, diag);
  return std::nullopt;
}

// The first error (parse or verify) of `text`, with its location.
inline Diagnostic FirstError(absl::string_view text) {
  Diagnostic diag;
  absl::StatusOr<Module> m = ParseModule(text, &diag);
  if (m.ok() && VerifyModule(*m, &diag).ok()) return Diagnostic{Severity::kNote, {}, "no error"};
  return diag;
}

}  // namespace vdev::ir::testing

#endif  // VDEV_TESTS_PLANNER_IR_TEST_UTIL_H_
