// `vdev lower FILE [--json] [--dot]`: plans devices, then lowers to explicit allocation with the
// IPC all-reduce rewrite and static memory planning (docs/lowered-form.md, docs/memory-planning.md).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/dot.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/diagnostic.h"

namespace vdev::cli {
namespace {

struct LowerArgs {
  std::string file;
  bool json = false;
  bool dot = false;
  PlanningFlags planning;
  bool no_ipc = false;
  bool no_fuse = false;
  std::string strategy = "auto";
  int64_t alignment = 256;
};

int RunLower(const LowerArgs& args) {
  std::optional<PlanOptions> plan_options = ToPlanOptions(args.planning);
  if (!plan_options) return kExitUsage;
  LowerOptions lower_options;
  std::string note;
  std::optional<AllReduceStrategy> strategy = AllReduceStrategyFromName(args.strategy, &note);
  if (!strategy) {
    std::cerr << "--allreduce-strategy: error: expected auto, one-shot, two-shot, nccl or plan:NAME, found '"
              << args.strategy << "'\n";
    return kExitUsage;
  }
  if (!note.empty()) std::cerr << "vdev lower: " << note << "\n";
  lower_options.strategy = *strategy;
  lower_options.ipc_allreduce = !args.no_ipc;
  lower_options.fuse_allreduce = !args.no_fuse;
  if (args.alignment <= 0 || (args.alignment & (args.alignment - 1)) != 0) {
    std::cerr << "--alignment: error: expected a positive power of two, found " << args.alignment << "\n";
    return kExitUsage;
  }
  lower_options.storage.alignment = args.alignment;

  CompileOptions compile_options;
  compile_options.plan = *std::move(plan_options);
  compile_options.lower = lower_options;
  if (args.dot) compile_options.stop_after = CompileStage::kTypes;
  int exit_code = kExitOk;
  std::optional<CompileResult> compiled = CompileForCommand(args.file, compile_options, args.json, &exit_code);
  if (!compiled) return exit_code;
  if (args.dot) {
    std::cout << WriteDot(PlannedProgramGraph(compiled->module(), compiled->plan.binding_devices));
  } else {
    std::cout << (args.json ? MemoryReportJson(compiled->module(), *compiled->memory)
                            : ir::PrintModule(compiled->module()));
  }
  return kExitOk;
}

}  // namespace

void AddMemoryCommands(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<LowerArgs>();
  CLI::App* lower = app.add_subcommand(
      "lower",
      "Plan devices, then lower to explicit allocation: IPC all-reduces, static memory plan per (device, scope)");
  lower->add_option("FILE", args->file, "program text (`-` reads standard input)")->required();
  lower->add_flag("--json", args->json, "print the memory report (pools, storages, tensors, all-reduces) as JSON");
  lower->add_flag("--dot", args->dot, "print the planned program as Graphviz: devices as colours, copies as red edges");
  AddPlanningFlags(lower, &args->planning);
  lower->add_option("--allreduce-strategy", args->strategy,
                    "strategy of rewritten all-reduces: auto, one-shot, two-shot, nccl, plan:NAME (a channel plan)");
  lower->add_flag("--no-ipc-allreduce", args->no_ipc, "leave every all-reduce on NCCL (no ipc_memory)");
  lower->add_flag("--no-fuse-allreduce", args->no_fuse,
                  "keep each all-reduce, residual add and rms_norm apart (no vdev.allreduce_add_rms_norm)");
  lower->add_option("--alignment", args->alignment, "alignment of storages in their pool, bytes (a power of two)");
  lower->callback([args, exit_code] { *exit_code = RunLower(*args); });
}

}  // namespace vdev::cli
