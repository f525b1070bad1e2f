// OptimizeRunProgram (vdev/executor/run.h): `vdev run --optimize`'s placement, by the optimiser.
#include "absl/strings/str_cat.h"
#include "vdev/compile/compile.h"
#include "vdev/executor/machine_probe.h"
#include "vdev/executor/run.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/machine.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/source_file.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

// On the CUDA backend every GPU of the machine must be one of this host's: a plan may use any.
absl::Status CheckGpusPresent(const Machine& machine, const std::string& name) {
  const int visible = VisibleGpus();
  for (const VirtualDevice& d : machine.devices) {
    if (d.device_type() == DeviceType::kCUDA && d.virtual_device_id() >= visible) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": error: ", d.ToString(), " is not on this host (", visible, " GPU(s) visible)"));
    }
  }
  return absl::OkStatus();
}

// The workers of one host share its CPU: each runs its multi-threaded CPU kernels (matmuls) on 1/W
// of the cores (CpuThreadsPerWorker), so each sees 1/W of the flop rates a probe (one worker)
// measured. The elementwise kernels, whose single thread the bandwidth is measured by, are not
// shared.
void ShareCpuAmongWorkers(int workers, Machine* machine) {
  if (workers <= 1) return;
  for (size_t d = 0; d < machine->devices.size(); ++d) {
    if (machine->devices[d].device_type() != DeviceType::kCPU) continue;
    DeviceSpec& s = machine->specs[d];
    for (auto& [dtype, rate] : s.flops) rate /= workers;
    s.default_flops /= workers;
  }
}

absl::StatusOr<Machine> RunMachine(const RunOptions& options) {
  Machine machine = DefaultMachine(2);
  if (!options.machine.empty()) {
    VDEV_ASSIGN_OR_RETURN(std::string json, ReadSourceFile(options.machine, StandardInput::kRefused));
    absl::StatusOr<Machine> parsed = ParseMachineJson(json);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(options.machine, ": error: ", parsed.status().message()));
    }
    machine = *std::move(parsed);
  }
  if (options.backend == "cuda") {
    VDEV_RETURN_IF_ERROR(CheckGpusPresent(machine, options.machine.empty() ? "the default machine" : options.machine));
  }
  ShareCpuAmongWorkers(options.workers, &machine);
  return machine;
}

}  // namespace

absl::StatusOr<OptimizedRunProgram> OptimizeRunProgram(const RunOptions& options) {
  VDEV_ASSIGN_OR_RETURN(std::string text, ReadSourceFile(options.file, StandardInput::kRefused));
  CompileOptions compile;
  VDEV_ASSIGN_OR_RETURN(compile.optimize_for, RunMachine(options));
  compile.stop_after = CompileStage::kTypes;
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(text, compile, &error);
  if (!compiled.ok()) {
    std::string message = FormatDiagnostic(options.file, text, error.diagnostic);
    for (const ConflictAnnotation& c : error.plan.conflicts) {
      message += FormatDiagnostic(options.file, text, {Severity::kNote, c.loc, c.what});
    }
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return absl::InvalidArgumentError(message);
  }
  OptimizedRunProgram program;
  program.text = ir::PrintModule(compiled->module());
  program.predicted_seconds = compiled->optimization->cost.total + compiled->optimization->cost.run;
  program.optimal = compiled->optimization->optimal;
  return program;
}

}  // namespace vdev
