// `vdev channels list|show|check|run`: the shipped collectives written in the channel language,
// execution-plan files (vdev/channels/channel_plan.h) checked as the plan executors load them, and a plan run
// on the host executor with its result checked against the collective's definition.
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/channels/channel_plan.h"

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
  return absl::StrCat(plan.name, ": ", channels::CollectiveName(plan.collective), " on ", plan.world_size, " ranks, ",
                      tbs, " thread blocks, ", ops, " ops, ", plan.memory_channels.size(), " memory and ",
                      plan.port_channels.size(), " port channels");
}

struct RunArgs {
  std::string plan;
  int ranks = 2;
  size_t count = 1001;
  std::string dtype = "f32";
  int instances = 1;
  int executions = 3;
  double timeout_seconds = 8;
};

// Rank r's input element i: small integers, so every sum of up to 8 of them is exact in f32.
template <typename T>
T InputValue(int rank, size_t i) {
  return static_cast<T>(static_cast<int64_t>((rank * 131 + i * 7) % 1009) - 504);
}

// Runs the plan (RunPlanInThreads) and checks every rank's every output element: "" when exact, else
// what is wrong.
template <typename T>
std::string RunAndCompare(const channels::ProgramSpec& plan, const RunArgs& args, DataType type) {
  const int n = plan.world_size;
  const size_t in_n = args.count * channels::InputSegments(plan.collective, n);
  const size_t out_n = args.count * channels::OutputSegments(plan.collective, n);
  std::vector<std::vector<T>> in(n, std::vector<T>(in_n)), out(n, std::vector<T>(out_n));
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < in_n; ++i) in[r][i] = InputValue<T>(r, i);
    in_ptrs.push_back(in[r].data());
    out_ptrs.push_back(out[r].data());
  }
  const absl::Status run = channels::RunPlanInThreads(plan, in_ptrs, out_ptrs, args.count, type, args.instances,
                                                      absl::Seconds(args.timeout_seconds), args.executions);
  if (!run.ok()) return std::string(run.message());
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < out_n; ++i) {
      const T want = channels::CollectiveOutput<T>(plan, r, i, args.count, InputValue<T>);
      if (out[r][i] != want) {
        return absl::StrCat("rank ", r, " output element ", i, ": got ", out[r][i], ", want ", want);
      }
    }
  }
  return "";
}

// A plan file (`-`: standard input) loaded as the executors load it: an unreadable file exits
// kExitUsage, one that does not load kExitNegative with its located message (`check` and `run`).
std::optional<channels::ProgramSpec> LoadPlanFile(const std::string& path, int* exit_code) {
  std::string text;
  if (!ReadSource(path, &text)) {
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  absl::StatusOr<channels::ProgramSpec> plan = channels::PlanFromJson(text, DisplayName(path));
  if (!plan.ok()) {
    std::cerr << plan.status().message() << "\n";
    *exit_code = kExitNegative;
    return std::nullopt;
  }
  return *std::move(plan);
}

// A shipped plan's name, or a plan file (a path ending in .json, containing '/', or -); an unknown
// name or world size exits kExitUsage.
std::optional<channels::ProgramSpec> PlanFor(const RunArgs& args, int* exit_code) {
  const std::string& name = args.plan;
  if (name == "-" || absl::EndsWith(name, ".json") || absl::StrContains(name, '/'))
    return LoadPlanFile(name, exit_code);
  absl::StatusOr<channels::ProgramSpec> plan = channels::ShippedPlan(name, args.ranks);
  if (!plan.ok()) {
    std::cerr << "vdev channels run: error: " << plan.status().message() << "\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  return *std::move(plan);
}

std::string Counted(int n, absl::string_view what) { return absl::StrCat(n, " ", what, n == 1 ? "" : "s"); }

void Run(const RunArgs& args, int* exit_code) {
  const bool f32 = args.dtype == "f32", f64 = args.dtype == "f64", i32 = args.dtype == "i32";
  if (!f32 && !f64 && !i32) {
    std::cerr << "vdev channels run: error: --dtype " << args.dtype << ": f32, f64 or i32\n";
    *exit_code = kExitUsage;
    return;
  }
  const std::optional<channels::ProgramSpec> plan = PlanFor(args, exit_code);
  if (!plan) return;
  const DataType type = f32 ? DataType::kF32 : f64 ? DataType::kF64 : DataType::kI32;
  const std::string wrong = f32   ? RunAndCompare<float>(*plan, args, type)
                            : f64 ? RunAndCompare<double>(*plan, args, type)
                                  : RunAndCompare<int32_t>(*plan, args, type);
  const std::string what = absl::StrCat(Summary(*plan), "; ", args.count, " ", args.dtype, " elements a segment, ",
                                        Counted(args.instances, "instance"), ", ",
                                        Counted(args.executions, "execution"), " on the host executor");
  if (!wrong.empty()) {
    std::cerr << what << ": " << wrong << "\n";
    *exit_code = kExitNegative;
    return;
  }
  std::cout << what << ": exact\n";
  *exit_code = kExitOk;
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
    const std::optional<channels::ProgramSpec> plan = LoadPlanFile(*file, exit_code);
    if (!plan) return;
    std::cout << Summary(*plan) << ": valid\n";
    *exit_code = kExitOk;
  });
  auto run = std::make_shared<RunArgs>();
  CLI::App* run_cmd = channels->add_subcommand(
      "run",
      "Run a plan on the host executor (a thread per rank) and check every output element against the "
      "collective's definition");
  run_cmd->add_option("PLAN", run->plan, "a shipped plan's name, or a plan file (a path ending in .json, or -)")
      ->required();
  run_cmd->add_option("-n,--ranks", run->ranks, "world size for a shipped plan, 1..8 (a file gives its own)")
      ->capture_default_str();
  run_cmd->add_option("--count", run->count, "elements a segment")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  run_cmd->add_option("--dtype", run->dtype, "f32, f64 or i32")->capture_default_str();
  run_cmd->add_option("--instances", run->instances, "copies of every thread block, each a part of the data")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  run_cmd->add_option("--executions", run->executions, "executions in a row")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  run_cmd->add_option("--timeout", run->timeout_seconds, "seconds a wait may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run_cmd->callback([run, exit_code] { Run(*run, exit_code); });
}

}  // namespace vdev::cli
