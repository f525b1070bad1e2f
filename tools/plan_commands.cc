// `vdev plan FILE [--json] [--strict] [--default VD] [--host VD]` (shared/spec/cli.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "vdev/diagnostic.h"
#include "vdev/ir_text.h"
#include "vdev/plan_devices.h"
#include "vdev/virtual_device.h"

namespace vdev::cli {

bool ParseDeviceOption(absl::string_view flag, const std::string& text, std::optional<VirtualDevice>* out) {
  if (text.empty()) return true;
  size_t offset = 0;
  absl::StatusOr<VirtualDevice> device = ParseVirtualDevice(text, &offset);
  if (!device.ok()) {
    Diagnostic diag{Severity::kError, SourceLoc{1, static_cast<int>(offset) + 1},
                    std::string(device.status().message())};
    std::cerr << FormatDiagnostic(flag, text, diag);
    return false;
  }
  *out = *device;
  return true;
}

std::optional<PlanResult> PlanForCommand(ir::Module module, const std::string& name, const std::string& text,
                                         const PlanOptions& options, bool json) {
  PlanError error;
  absl::StatusOr<PlanResult> plan = PlanDevices(std::move(module), options, &error);
  if (!plan.ok()) {
    if (error.message.empty()) error.message = std::string(plan.status().message());
    std::cerr << FormatDiagnostic(name, text, {Severity::kError, error.loc, error.message});
    for (const ConflictAnnotation& c : error.conflicts) {
      std::cerr << FormatDiagnostic(name, text, {Severity::kNote, c.loc, c.what});
    }
    if (json) std::cout << PlanErrorJson(error);
    return std::nullopt;
  }
  for (const Diagnostic& w : plan->warnings) std::cerr << FormatDiagnostic(name, text, w);
  return *std::move(plan);
}

namespace {

struct PlanArgs {
  std::string file;
  bool json = false;
  bool strict = false;
  std::string default_device;
  std::string host_device;
};

int RunPlan(const PlanArgs& args) {
  PlanOptions options;
  options.strict = args.strict;
  if (!ParseDeviceOption("--default", args.default_device, &options.default_device) ||
      !ParseDeviceOption("--host", args.host_device, &options.host_device)) {
    return kExitUsage;
  }
  std::string text;
  std::optional<ir::Module> module = LoadModule(args.file, &text);
  if (!module) return kExitUsage;
  const std::string name = args.file == "-" ? "<stdin>" : args.file;
  std::optional<PlanResult> plan = PlanForCommand(*std::move(module), name, text, options, args.json);
  if (!plan) return kExitNegative;
  std::cout << (args.json ? PlanReportJson(*plan) : ir::PrintModule(plan->module));
  return kExitOk;
}

}  // namespace

void AddPlanCommands(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* plan = app.add_subcommand("plan", "Plan the device of every value; print the planned program");
  plan->add_option("FILE", args->file, "program in the vdev IR text format (`-` reads standard input)")->required();
  plan->add_flag("--json", args->json, "print the placement report (plan-json.md) instead of the program");
  plan->add_flag("--strict", args->strict, "make conflicting uses an error instead of a copy and a warning");
  plan->add_option("--default", args->default_device, "device for unconstrained computations (overrides config)");
  plan->add_option("--host", args->host_device, "device for shapes and allocation operands (overrides config)");
  plan->callback([args, exit_code] { *exit_code = RunPlan(*args); });
}

}  // namespace vdev::cli
