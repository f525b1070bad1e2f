// CompileForExecution (vdev/executor/executor.h): parse, verify, plan and lower, as `vdev lower` does.
#include "absl/strings/str_cat.h"
#include "known_ops.h"
#include "vdev/executor/executor.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

absl::StatusOr<LoweredProgram> PlanAndLower(ir::Module module, LoweredProgram program, const LowerOptions& lower) {
  const std::string& file = program.file;
  const std::string& text = program.source;
  PlanError error;
  absl::StatusOr<PlanResult> planned = PlanDevices(std::move(module), PlanOptions{}, &error);
  if (!planned.ok()) {
    if (error.message.empty()) error.message = std::string(planned.status().message());
    std::string message = FormatDiagnostic(file, text, {Severity::kError, error.loc, error.message});
    for (const ConflictAnnotation& c : error.conflicts)
      message += FormatDiagnostic(file, text, {Severity::kNote, c.loc, c.what});
    return absl::InvalidArgumentError(Trimmed(message));
  }
  program.module = std::move(planned->module);
  program.binding_devices = std::move(planned->binding_devices);
  VDEV_ASSIGN_OR_RETURN(program.memory, LowerMemory(program.module, program.binding_devices, lower));
  Diagnostic diag;
  if (absl::Status s = ir::VerifyModule(program.module, &diag); !s.ok())
    return absl::InternalError(
        absl::StrCat(file, ": error: the lowered program does not verify (a vdev bug): ", diag.message));
  return program;
}

}  // namespace

absl::StatusOr<LoweredProgram> CompileForExecution(absl::string_view text, absl::string_view file,
                                                   const LowerOptions& lower) {
  LoweredProgram program;
  program.file = std::string(file);
  program.source = std::string(text);
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(text, &diag);
  if (!module.ok()) return absl::InvalidArgumentError(Trimmed(FormatDiagnostic(file, text, diag)));
  if (absl::Status s = ir::VerifyModule(*module, &diag); !s.ok())
    return absl::InvalidArgumentError(Trimmed(FormatDiagnostic(file, text, diag)));
  VDEV_RETURN_IF_ERROR(internal::CheckKnownOps(*module, file, text));
  return PlanAndLower(*std::move(module), std::move(program), lower);
}

absl::StatusOr<LoweredProgram> CompileForExecution(ir::Module module, absl::string_view name,
                                                   const LowerOptions& lower) {
  LoweredProgram program;
  program.file = std::string(name);
  VDEV_RETURN_IF_ERROR(internal::CheckKnownOps(module, name, ""));
  return PlanAndLower(std::move(module), std::move(program), lower);
}

}  // namespace vdev
