// `vdev plan FILE [--json] [--strict] [--default VD] [--host VD]` (shared/spec/cli.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "commands.h"
#include "vdev/diagnostic.h"
#include "vdev/ir_text.h"
#include "vdev/plan_devices.h"
#include "vdev/virtual_device.h"

namespace vdev::cli {

void AddPlanningFlags(CLI::App* command, PlanningFlags* flags) {
  command->add_flag("--strict", flags->strict, "make conflicting uses an error instead of a copy and a warning");
  command->add_option("--default", flags->default_device, "device for unconstrained computations (overrides config)");
  command->add_option("--host", flags->host_device, "device for shapes and allocation operands (overrides config)");
}

std::optional<PlanOptions> ToPlanOptions(const PlanningFlags& flags) {
  PlanOptions options;
  options.strict = flags.strict;
  for (auto [flag, text, device] : {std::tuple{"--default", &flags.default_device, &options.default_device},
                                    std::tuple{"--host", &flags.host_device, &options.host_device}}) {
    if (text->empty()) continue;
    *device = ParseDeviceArgument(flag, *text);
    if (!*device) return std::nullopt;
  }
  return options;
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
  PlanningFlags planning;
};

int RunPlan(const PlanArgs& args) {
  std::optional<PlanOptions> options = ToPlanOptions(args.planning);
  if (!options) return kExitUsage;
  std::string text;
  std::optional<ir::Module> module = LoadModule(args.file, &text);
  if (!module) return kExitUsage;
  const std::string name = args.file == "-" ? "<stdin>" : args.file;
  std::optional<PlanResult> plan = PlanForCommand(*std::move(module), name, text, *options, args.json);
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
  AddPlanningFlags(plan, &args->planning);
  plan->callback([args, exit_code] { *exit_code = RunPlan(*args); });
}

}  // namespace vdev::cli
