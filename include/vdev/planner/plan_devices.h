// PlanDevices: decides the device of every value of a module (docs/spec/ir-text.md, "Placement
// semantics") and makes every device change an explicit `device_copy` binding.
//
// Phases: collect (one device domain per value, per primitive call site and per function signature,
// unified with a union-find over the lattice's Join; a computation that `on_device` annotates has
// its site pinned first, so it never moves and a shared operand is copied instead), free boundaries
// (free `on_device` joined where it can be; each kernel call on one device, its operands and result
// with the kernel's scopes, copied where they cannot join), defaults (function results take the config's default,
// parameters their function's result device, other values their first consumer's device), capture
// (`on_device` removed, copies written out, `on vd` on every parameter and result). Nothing recurses
// with the program's size or nesting depth.
//
// Example:
//   absl::StatusOr<ir::Module> m = ir::ParseModule(text);
//   VDEV_RETURN_IF_ERROR(ir::VerifyModule(*m));
//   PlanError error;
//   absl::StatusOr<PlanResult> plan = PlanDevices(*m, PlanOptions{}, &error);
//   std::cout << ir::PrintModule(plan->module);
//
// A conflict between two primitive uses of one value is resolved with a copy and a warning, or, with
// `strict`, is an error; other conflicts (an annotation against a written parameter or result
// device, an argument against a callee's signature) are errors in both modes. Errors list the
// smallest set of annotations that cannot hold together, found with Z3 and re-checked.
#ifndef VDEV_PLAN_DEVICES_H_
#define VDEV_PLAN_DEVICES_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/support/diagnostic.h"

namespace vdev {

struct PlanOptions {
  // `--strict`: a conflict between primitive uses is an error instead of a copy and a warning.
  bool strict = false;
  // Override the module config's `default` and `host` (`--default`, `--host`).
  std::optional<VirtualDevice> default_device;
  std::optional<VirtualDevice> host_device;
};

// One annotation of a conflict: where it is written and the device it asks for.
struct ConflictAnnotation {
  SourceLoc loc;
  VirtualDevice device;
  std::string what;  // e.g. "on_device(%0, cpu:0)", "parameter %x on cuda:0"
  friend bool operator==(const ConflictAnnotation&, const ConflictAnnotation&) = default;
};

// Why planning failed: the location of the failing use, a message, and the smallest set of
// annotations that cannot hold together (empty when the conflict is not between annotations,
// e.g. a call with the wrong number of arguments).
struct PlanError {
  SourceLoc loc;
  std::string message;
  std::vector<ConflictAnnotation> conflicts;
};

// A device change that the planned module makes with a `device_copy` binding.
struct PlannedCopy {
  ir::FuncId func = ir::kNoFunc;
  ir::ValueRef of;                   // the input value copied (parameter or binding);
                                     // the copy binding itself for a constant atom
                                     // (`on_device(3, cpu:0)` becoming a copy)
  ir::DeviceId src = ir::kNoDevice;  // devices of the planned module (module.Device(src))
  ir::DeviceId dst = ir::kNoDevice;
  ir::BindingId binding = ir::kNoBinding;  // the device_copy binding in the planned module
  ir::BindingId into = ir::kNoBinding;     // its first consumer; kNoBinding: a block's return
  bool written = false;                    // written as device_copy in the input
};

struct PlanStatistics {
  size_t bindings = 0;         // bindings of the input that were analysed
  size_t domains = 0;          // device domains created
  size_t copies = 0;           // device_copy bindings in the plan
  size_t copies_dropped = 0;   // on_device/device_copy bindings whose src == dst
  size_t conflict_copies = 0;  // copies added for conflicting primitive uses
  int solver_calls = 0;        // Z3 checks while explaining an error
  double solver_seconds = 0;
};

// What planning overwrote in the input module, in the order written, each entry holding the value
// it replaced: the PlanResult& overloads of vdev/planner/plan_explain.h turn the planned module back into
// the input's constraints and again into the plan, in place, so that explaining a plan needs no
// copy of the input. Recorded: operands, expressions, written devices and block results (not the blocks'
// binding lists nor written result types, which the explanations do not read).
struct InputEdits {
  std::vector<std::pair<uint32_t, ir::Operand>> operands;  // index into module.operands
  std::vector<std::pair<ir::BindingId, ir::Expr>> exprs;
  std::vector<std::pair<ir::ParamId, ir::DeviceId>> param_devices;
  std::vector<std::pair<ir::FuncId, ir::DeviceId>> result_devices;
  std::vector<std::pair<ir::BlockId, ir::Operand>> block_results;
};

struct PlanResult {
  // The planned module: no on_device, every device change a device_copy binding, `on vd` on every
  // parameter and result (read them from params[p].device and functions[f].result_device).
  ir::Module module;
  // The device of each binding's value, by BindingId (a binding holding a function reports its
  // result's device); ir::kNoDevice for bindings the plan removed or did not analyse (the bodies of
  // fn[primitive]). Indices past the input's bindings are the copies the planner added.
  std::vector<ir::DeviceId> binding_devices;
  // True for input bindings that planning removed or turned into copies (every on_device).
  std::vector<bool> binding_replaced;
  size_t input_bindings = 0;
  std::vector<PlannedCopy> copies;
  std::vector<Diagnostic> warnings;
  PlanStatistics stats;
  // Valid while `module` is as planning left it (not after LowerMemory).
  InputEdits input_edits;
};

// Plans a verified module (ir::ParseModule + ir::VerifyModule, or ModuleBuilder::Finish). The input
// is copied; the overload taking an rvalue plans in place and saves that copy. On failure returns
// InvalidArgument ("LINE:COL: message") and, when `error` is given, fills it.
absl::StatusOr<PlanResult> PlanDevices(const ir::Module& module, const PlanOptions& options,
                                       PlanError* error = nullptr);
absl::StatusOr<PlanResult> PlanDevices(ir::Module&& module, const PlanOptions& options, PlanError* error = nullptr);

// The `--json` report of docs/spec/plan-json.md.
std::string PlanReportJson(const PlanResult& plan);
std::string PlanErrorJson(const PlanError& error);

}  // namespace vdev

#endif  // VDEV_PLAN_DEVICES_H_
