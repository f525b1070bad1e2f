// `vdev plan FILE [--json | --explain VALUE] [--strict] [--default VD] [--host VD]
//            [--optimize [--machine FILE | --gpus N] [--time-limit S]]` (docs/spec/cli.md; --explain,
// --optimize and the annotation-spread warning extend it, docs/planner.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "commands.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/planner/plan_explain.h"
#include "vdev/support/diagnostic.h"

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

std::optional<CompileResult> CompileForCommand(const std::string& path, const CompileOptions& options, bool json,
                                               int* exit_code, SourceText* source) {
  *exit_code = kExitUsage;
  SourceText own_text;
  SourceText& source_text = source != nullptr ? *source : own_text;
  if (!ReadSource(path, &source_text)) return std::nullopt;
  const absl::string_view text = source_text.view();
  const std::string name = DisplayName(path);
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(text, options, &error);
  if (!compiled.ok()) {
    std::cerr << FormatDiagnostic(name, text, error.diagnostic);
    if (error.stage >= CompileStage::kPlan) *exit_code = kExitNegative;
    if (error.stage == CompileStage::kPlan) {
      for (const ConflictAnnotation& c : error.plan.conflicts) {
        std::cerr << FormatDiagnostic(name, text, {Severity::kNote, c.loc, c.what});
      }
      if (json) std::cout << PlanErrorJson(error.plan);
    }
    return std::nullopt;
  }
  if (compiled->module().functions.empty()) {
    std::cerr << FormatDiagnostic(
        name, text,
        {Severity::kWarning,
         {},
         text.empty() ? "the file is empty: no functions, no @main" : "the program has no functions, no @main"});
  }
  for (const Diagnostic& w : compiled->diagnostics) std::cerr << FormatDiagnostic(name, text, w);
  *exit_code = kExitOk;
  return *std::move(compiled);
}

namespace {

struct PlanArgs {
  std::string file;
  bool json = false;
  std::string explain;
  PlanningFlags planning;
  bool optimize = false;
  std::string machine;
  int gpus = 2;
  double time_limit = 60;
};

// The machine of --machine FILE, else the default one with --gpus GPUs; nullopt after an error.
std::optional<Machine> LoadMachine(const PlanArgs& args) {
  if (args.machine.empty()) return DefaultMachine(args.gpus);
  std::string json;
  if (!ReadSource(args.machine, &json)) return std::nullopt;
  absl::StatusOr<Machine> parsed = ParseMachineJson(json);
  if (!parsed.ok()) {
    std::cerr << args.machine << ": error: " << parsed.status().message() << "\n";
    return std::nullopt;
  }
  return *std::move(parsed);
}

// The annotation-spread warnings (stderr, and the JSON report's warnings) and, with --explain, the
// explanation instead of the program: an exit status then, nullopt when the plan is to be printed.
std::optional<int> WarnAndExplain(const PlanArgs& args, const CompileOptions& compile_options, absl::string_view text,
                                  CompileResult& compiled) {
  PlanResult& plan = compiled.plan;
  const VirtualDevice default_device =
      compile_options.plan.default_device.value_or(plan.module.config.EffectiveDefault());
  for (Diagnostic& w : AnnotationSpreadWarnings(plan, default_device)) {
    std::cerr << FormatDiagnostic(DisplayName(args.file), text, w);
    plan.warnings.push_back(std::move(w));
  }
  if (args.explain.empty()) return std::nullopt;
  absl::StatusOr<std::string> why = ExplainPlacement(plan, args.explain);
  if (!why.ok()) {
    std::cerr << "vdev plan: --explain: " << why.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << *why;
  return kExitOk;
}

int RunPlan(const PlanArgs& args) {
  std::optional<PlanOptions> options = ToPlanOptions(args.planning);
  if (!options) return kExitUsage;
  CompileOptions compile_options;
  compile_options.plan = *std::move(options);
  compile_options.stop_after = CompileStage::kTypes;
  if (args.optimize) {
    compile_options.optimize_for = LoadMachine(args);
    if (!compile_options.optimize_for) return kExitUsage;
    compile_options.optimize.time_limit_seconds = args.time_limit;
    compile_options.optimize.progress = [](const std::string& line) { std::cerr << "vdev plan: " << line << "\n"; };
  }
  int exit_code = kExitOk;
  SourceText text;
  std::optional<CompileResult> compiled = CompileForCommand(args.file, compile_options, args.json, &exit_code, &text);
  if (!compiled) return exit_code;
  if (std::optional<int> explained = WarnAndExplain(args, compile_options, text, *compiled)) return *explained;
  if (compiled->optimization && !compiled->optimization->optimal) {
    // How far the plan may be from the optimum (the JSON has the same as lower_bound and gap).
    const OptimizedPlan& o = *compiled->optimization;
    std::cerr << absl::StrFormat(
        "vdev plan: not proven optimal within the time limit: the plan costs %.4g ms by the "
        "optimiser's model, no plan costs less than %.4g ms (gap %.3g%%)\n",
        o.model_cost * 1e3, o.lower_bound * 1e3, o.gap * 100);
  }
  if (!args.json) {
    ir::PrintModule(compiled->module(), std::cout);
  } else if (compiled->optimization) {
    std::cout << OptimizedReportJson(compiled->plan, *compiled->optimization, *compile_options.optimize_for);
  } else {
    std::cout << PlanReportJson(compiled->plan);
  }
  return kExitOk;
}

}  // namespace

void AddPlanCommands(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* plan = app.add_subcommand("plan", "Plan the device of every value; print the planned program");
  plan->add_option("FILE", args->file, "program in the vdev IR text format (`-` reads standard input)")->required();
  CLI::Option* json =
      plan->add_flag("--json", args->json, "print the placement report (plan-json.md) instead of the program");
  plan->add_option("--explain", args->explain,
                   "print why VALUE (x, %x, or PATH:x for another function) is where the plan puts it: the "
                   "annotation and the chain of constraints from it, instead of the program")
      ->excludes(json);
  AddPlanningFlags(plan, &args->planning);
  CLI::Option* optimize =
      plan->add_flag("--optimize", args->optimize,
                     "place what no annotation fixes where it is cheapest on a machine (proven optimal)");
  plan->add_option("--machine", args->machine, "machine description (docs/machine.md); default: 1 CPU + --gpus H100s")
      ->needs(optimize);
  plan->add_option("--gpus", args->gpus, "GPUs of the default machine (default 2)")
      ->needs(optimize)
      ->check(CLI::Range(0, 64));
  plan->add_option("--time-limit", args->time_limit,
                   "seconds for the solver; past it the best plan so far is "
                   "printed, marked not optimal (default 60)")
      ->needs(optimize)
      ->check(CLI::PositiveNumber);
  plan->callback([args, exit_code] { *exit_code = RunPlan(*args); });
}

}  // namespace vdev::cli
