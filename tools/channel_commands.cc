// `vdev channels list|show|check`: the shipped collectives written in the channel language, and
// execution-plan files (vdev/channel_plan.h) checked as the plan executors load them.
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "vdev/channel_algorithms.h"
#include "vdev/channel_plan.h"

namespace vdev::cli {
namespace {

struct ShowArgs {
  std::string name;
  int ranks = 2;
};

// "one_shot: allreduce on 2 ranks, 2 thread blocks, 8 ops, 2 memory and 0 port channels".
std::string Summary(const channels::ProgramSpec& plan) {
  size_t tbs = 0, ops = 0;
  for (const auto& rank : plan.ranks) {
    tbs += rank.size();
    for (const channels::ThreadBlock& tb : rank) ops += tb.ops.size();
  }
  return absl::StrCat(plan.name, ": ", channels::CollectiveName(plan.collective), " on ", plan.world_size,
                      " ranks, ", tbs, " thread blocks, ", ops, " ops, ", plan.memory_channels.size(), " memory and ",
                      plan.port_channels.size(), " port channels");
}

}  // namespace

void AddChannelCommands(CLI::App& app, int* exit_code) {
  CLI::App* channels = app.add_subcommand(
      "channels", "The channel language's shipped collectives and execution-plan files (docs/channels.md)");
  channels->require_subcommand(1);
  channels->add_subcommand("list", "Print the names of the shipped plans (strategy plan:NAME)")->callback([exit_code] {
    for (const std::string& name : channels::ShippedPlanNames()) std::cout << name << "\n";
    *exit_code = kExitOk;
  });
  auto show = std::make_shared<ShowArgs>();
  CLI::App* show_cmd = channels->add_subcommand("show", "Print a shipped plan for N ranks as an execution-plan file");
  show_cmd->add_option("NAME", show->name, "a name that `vdev channels list` prints")->required();
  show_cmd->add_option("-n,--ranks", show->ranks, "world size, 1..8")->capture_default_str();
  show_cmd->callback([show, exit_code] {
    absl::StatusOr<channels::ProgramSpec> plan = channels::ShippedPlan(show->name, show->ranks);
    if (!plan.ok()) {
      std::cerr << "vdev channels show: error: " << plan.status().message() << "\n";
      *exit_code = kExitUsage;
      return;
    }
    std::cout << channels::PlanToJson(*plan);
    *exit_code = kExitOk;
  });
  auto file = std::make_shared<std::string>();
  CLI::App* check_cmd = channels->add_subcommand(
      "check", "Load and validate an execution-plan file as the executors do; print what it holds");
  check_cmd->add_option("FILE", *file, "a plan file (`vdev channels show` writes them); - reads standard input")
      ->required();
  check_cmd->callback([file, exit_code] {
    std::string text;
    if (!ReadSource(*file, &text)) {
      *exit_code = kExitUsage;
      return;
    }
    absl::StatusOr<channels::ProgramSpec> plan = channels::PlanFromJson(text, DisplayName(*file));
    if (!plan.ok()) {
      std::cerr << plan.status().message() << "\n";
      *exit_code = kExitNegative;
      return;
    }
    std::cout << Summary(*plan) << ": valid\n";
    *exit_code = kExitOk;
  });
}

}  // namespace vdev::cli
