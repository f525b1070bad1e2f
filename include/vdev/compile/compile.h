// Compile: the whole pipeline from IR text (or a built module) to a planned, lowered, checked module.
//
// Stages, in order; each runs only when the one before succeeded:
//   parse    ir::ParseModule (only for the text overload)
//   verify   ir::VerifyModule: structure, arities, written types; infers every binding's type
//   plan     PlanDevices: the device of every value, device changes as `device_copy` bindings; with
//            CompileOptions::optimize_for, OptimizePlacement on that machine instead (what no
//            annotation fixes placed where it is cheapest; `vdev plan --optimize`)
//   types    the bindings the planner added (the copies it makes for a conflict) get types like
//            every other binding: their operand's, as inference gives them (ir::VerifyModule of
//            the planned module where an added binding is of another kind)
//   lower    LowerMemory: explicit allocation, the IPC all-reduce rewrite, static memory plans
//   check    CheckLoweredMemory runs inside LowerMemory; then ir::VerifyModule of the lowered text
// `CompileOptions::stop_after` ends the pipeline early (`vdev plan` stops after `types`).
//
// Example:
//   CompileError error;
//   absl::StatusOr<CompileResult> compiled = Compile(text, CompileOptions{}, &error);
//   if (!compiled.ok()) {
//     std::cerr << FormatDiagnostic("prog.vdev", text, error.diagnostic);
//     return;
//   }
//   for (const Diagnostic& w : compiled->diagnostics) std::cerr << FormatDiagnostic("prog.vdev", text, w);
//   std::cout << ir::PrintModule(compiled->module());          // the lowered program
//   std::cout << MemoryReportJson(compiled->module(), *compiled->memory);
#ifndef VDEV_COMPILE_H_
#define VDEV_COMPILE_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/diagnostic.h"

namespace vdev {

enum class CompileStage { kParse, kVerify, kPlan, kTypes, kLower, kCheck };
absl::string_view CompileStageName(CompileStage stage);  // "parse", "verify", …

struct CompileOptions {
  PlanOptions plan;
  // Set: the plan stage optimises the placement for this machine, with `optimize`'s time limit and
  // progress line (its `plan` member is replaced by `plan` above).
  std::optional<Machine> optimize_for;
  OptimizeOptions optimize;
  LowerOptions lower;
  // The last stage to run: kTypes gives a planned, typed module without memory lowering.
  CompileStage stop_after = CompileStage::kCheck;
};

struct CompileResult {
  // The planned module (lowered in place when the pipeline ran to kLower or kCheck), with the device
  // of every binding, the copies made, the planner's warnings and statistics. Stopped at kPlan or
  // kTypes, the plan can be explained (vdev/planner/plan_explain.h's PlanResult& overloads).
  PlanResult plan;
  // The memory plan; empty when the pipeline stopped before kLower.
  std::optional<MemoryPlan> memory;
  // Every warning of every stage, in order (today the planner's conflict copies).
  std::vector<Diagnostic> diagnostics;
  // With CompileOptions::optimize_for: the costs, optimality and peaks (its `plan` moved into `plan`
  // above; OptimizedReportJson(plan, *optimization, machine) is `vdev plan --optimize --json`).
  std::optional<OptimizedPlan> optimization;

  const ir::Module& module() const { return plan.module; }
};

// Why compiling failed: the stage, a diagnostic (located in the input text when the stage reads
// it: parse, verify, plan), and for a planning error the full PlanError (its conflicting
// annotations, for notes and PlanErrorJson).
struct CompileError {
  CompileStage stage = CompileStage::kParse;
  Diagnostic diagnostic;
  PlanError plan;
};

// Compiles IR text. On failure returns the stage's status (InvalidArgument for the user's input,
// Internal when a later stage rejects what an earlier one produced) and fills *error when given.
absl::StatusOr<CompileResult> Compile(absl::string_view text, const CompileOptions& options,
                                      CompileError* error = nullptr);

// Compiles a built module (ir::ModuleBuilder::Finish, or a parsed one); it is verified first, so it
// need not have been.
absl::StatusOr<CompileResult> Compile(ir::Module module, const CompileOptions& options, CompileError* error = nullptr);

// The stages after `plan` (types, lower, check, up to options.stop_after) on a plan made elsewhere:
// PlanDevices' or OptimizePlacement's. `options.plan` is not read; the plan's warnings become the
// result's diagnostics. Compile runs exactly this after its own planning.
absl::StatusOr<CompileResult> CompilePlanned(PlanResult plan, const CompileOptions& options,
                                             CompileError* error = nullptr);

}  // namespace vdev

#endif  // VDEV_COMPILE_H_
