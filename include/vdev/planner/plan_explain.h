// Why a value is where the plan puts it: the chain of constraints from an annotation to the value,
// and a warning when one annotation moves most of a program.
//
// Placement is unification (docs/spec/ir-text.md, "Placement semantics"): an op's operands and
// result share one device, a call's arguments its callee's parameters, a tuple its fields, and so
// on. An annotation fixes one value; every value unified with it, directly or through a chain of
// such constraints, follows. ExplainPlacement walks those constraints back from a value to the
// nearest annotation that decided its device:
//
//   %out is on cpu:0:
//     on_device(%a, cpu:0) at 9:8 puts %a on cpu:0
//     %a = relu(%hb) at 8:8: an op's operands and result share one device, so %hb follows %a
//     ...
//
// The chain is read off the input and the plan (a constraint counts only where both of its sides
// ended on the same device, so a conflict copy breaks it, as it does in the plan) and is one
// shortest chain where several lead to annotations. Example:
//
//   absl::StatusOr<PlanResult> plan = PlanDevices(module, {});
//   absl::StatusOr<std::string> why = ExplainPlacement(module, *plan, "out");
//   for (const Diagnostic& w : AnnotationSpreadWarnings(module, *plan, default_device)) ...
//   // or, without keeping the input: PlanDevices(std::move(module), {}), then
//   // AnnotationSpreadWarnings(*plan, default_device)
#ifndef VDEV_PLAN_EXPLAIN_H_
#define VDEV_PLAN_EXPLAIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/diagnostic.h"

namespace vdev {

// The chain of constraints that put `value` where `plan` (PlanDevices of `input`) has it, one line
// each, starting with the annotation; or, when no annotation reaches it, the default that decided.
// `value` names a parameter or binding of the input as the JSON report does: `x` or `%x` in @main,
// or `PATH:x` in another function (`f:x` for @f, `main/g:y` for the local function bound by %g).
// NotFound when no value has that name.
absl::StatusOr<std::string> ExplainPlacement(const ir::Module& input, const PlanResult& plan, absl::string_view value);

// One warning per `on_device` annotation that puts more than half of the program's values (its
// parameters and bindings, moves excluded) on a device other than `default_device`, not counting
// what annotating a computation asks for by itself (the annotated value and its op's operands):
// located at the annotation, naming the first constraints through which it spread.
std::vector<Diagnostic> AnnotationSpreadWarnings(const ir::Module& input, const PlanResult& plan,
                                                 const VirtualDevice& default_device);

// The same two, reading the input from `plan.module` itself: PlanResult::input_edits undone while
// they run and redone before they return, so a large program is never copied to be explained.
// `plan` must be as PlanDevices left it.
absl::StatusOr<std::string> ExplainPlacement(PlanResult& plan, absl::string_view value);
std::vector<Diagnostic> AnnotationSpreadWarnings(PlanResult& plan, const VirtualDevice& default_device);

}  // namespace vdev

#endif  // VDEV_PLAN_EXPLAIN_H_
