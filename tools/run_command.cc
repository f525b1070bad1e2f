// `vdev run FILE [--workers N] [--backend cuda|host] [--inputs random:SEED|random-per-rank:SEED|DIR] [--outputs DIR]
//  [--check] [--repeat K] [--profile] [--optimize [--machine M.json]]`: plans (with --optimize, by
//  the optimiser on the machine model), lowers and runs @main on N workers (vdev/executor/run.h).
//
// The command is its own controller: it compiles FILE (located errors, exit 2), checks the inputs
// and that every op has a kernel where it was planned, then starts N workers in a process
// ControllerSession (RunFileOnWorkers of vdev/executor/run.h: copies of this program, which main() turns into
// workers with MaybeRunWorker), sets up their collectives (InitCCL("host"): the rendezvous and
// shared memory) and calls the worker function "vdev.run.worker" on all of them. Each worker writes its
// outputs as .npy files; the controller prints their summaries and, with --check, compares them
// with the CPU reference. A failing or killed worker fails the run (exit 1), named by the session.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "run_output_dir.h"
#include "vdev/controller/controller.h"
#include "vdev/controller/worker_function.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/npy.h"
#include "vdev/executor/run.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/status_macros.h"

namespace vdev::cli {
namespace {

struct RunArgs {
  RunOptions options;
  std::string outputs;
  bool check = false;
  // Bound on each wait for a worker and on the workers' collectives. A worker that dies is named at
  // once whatever this is; the bound only ends runs that hang. Ten minutes, as PyTorch's default
  // collective timeout: a run of a large program on CPU workers can take minutes.
  double timeout_seconds = 600;
};

// --optimize: the optimiser's placement of FILE, written as DIR/optimized.vdev (a fully placed
// program that plans to itself) for the workers and the reference to run; its predicted time.
absl::Status UseOptimizedPlacement(const std::string& dir, RunOptions& o) {
  VDEV_ASSIGN_OR_RETURN(OptimizedRunProgram optimized, OptimizeRunProgram(o));
  const std::string path = absl::StrCat(dir, "/optimized.vdev");
  std::ofstream(path) << optimized.text;
  std::cout << "vdev run: placed by the optimiser (" << (optimized.optimal ? "proven optimal" : "best found")
            << "), written to " << path << "\n";
  o.file = path;
  o.optimize = false;
  o.predicted_seconds = optimized.predicted_seconds;
  return absl::OkStatus();
}

// Whether the program can run on o.workers workers of o.backend, checked before any worker starts
// (each would find a problem only once started); if not, says why on stderr.
bool ReadyToRun(const LoweredProgram& program, const RunOptions& o) {
  for (absl::Status s : {CheckKernels(program, o.backend), CheckWorkerCount(program, o.workers)}) {
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return false;
    }
  }
  if (const ir::FuncId main = program.module.FindGlobal("main");
      main == ir::kNoFunc || program.module.functions[main].kind != ir::FuncKind::kGlobal) {
    std::cerr << FormatDiagnostic(o.file, program.source,
                                  {Severity::kError, SourceLoc{1, 1}, "the program has no function @main to run"});
    return false;
  }
  // Random inputs are drawn by each worker (only the seed is checked here); files are read here
  // first, so a bad one stops the run before any worker starts.
  const bool random = absl::StartsWith(o.inputs, "random:") || absl::StartsWith(o.inputs, "random-per-rank:");
  if (uint64_t seed; random && !absl::SimpleAtoi(absl::string_view(o.inputs).substr(o.inputs.find(':') + 1), &seed)) {
    std::cerr
        << "vdev run: --inputs: expected random:SEED or random-per-rank:SEED with a non-negative integer SEED, found "
        << o.inputs << "\n";
    return false;
  }
  for (int k = 0; k < o.workers && !random; ++k) {
    if (absl::Status s = ProgramInputs(program, o.inputs, k).status(); !s.ok()) {
      std::cerr << "vdev run: " << s.message() << "\n";
      return false;
    }
  }
  return true;
}

// --check: compares each worker's outputs with the CPU reference run of the program.
int CheckOutputs(const LoweredProgram& program, const RunOptions& o,
                 const std::vector<std::vector<HostTensor>>& outputs) {
  absl::StatusOr<std::vector<std::vector<HostTensor>>> reference = RunReference(program, o.workers, o.inputs);
  if (!reference.ok()) {
    std::cerr << "vdev run: --check: " << reference.status().message() << "\n";
    return kExitNegative;
  }
  for (int k = 0; k < o.workers; ++k) {
    if (absl::Status s = CompareOutputs(outputs[k], (*reference)[k], k); !s.ok()) {
      std::cerr << "vdev run: --check failed: " << s.message() << "\n";
      return kExitNegative;
    }
  }
  std::cout << "check: the outputs of " << o.workers << " worker(s) match the CPU reference\n";
  return kExitOk;
}

int RunAsController(RunArgs args) {
  RunOptions& o = args.options;
  // The workers get the canonical spelling, so the note is printed once.
  std::string note;
  if (std::optional<AllReduceStrategy> s = AllReduceStrategyFromName(o.allreduce_strategy, &note); s && !note.empty()) {
    std::cerr << "vdev run: " << note << "\n";
    o.allreduce_strategy = AllReduceStrategyName(*s);
  }
  // With --optimize the output directory is made first: it holds the optimised program.
  std::optional<OutputDir> early_dir;
  if (o.optimize) {
    absl::StatusOr<OutputDir> made = OutputDir::Make(args.outputs);
    absl::Status s = made.ok() ? UseOptimizedPlacement(made->path(), o) : made.status();
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return kExitUsage;
    }
    early_dir.emplace(*std::move(made));
  }
  absl::StatusOr<LoweredProgram> program = CompileRunProgram(o);
  if (!program.ok()) {
    std::cerr << program.status().message() << "\n";
    return kExitUsage;
  }
  if (!ReadyToRun(*program, o)) return kExitUsage;
  absl::StatusOr<OutputDir> dir = early_dir ? *std::move(early_dir) : OutputDir::Make(args.outputs);
  if (!dir.ok()) {
    std::cerr << "vdev run: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  std::cout.flush();
  if (absl::Status s = RunFileOnWorkers(o, absl::Seconds(args.timeout_seconds), dir->path()); !s.ok()) {
    std::cerr << "vdev run: failed: " << s.message() << "\n";
    return kExitNegative;
  }
  absl::StatusOr<std::vector<std::vector<HostTensor>>> outputs = ReadRunOutputs(dir->path(), o.workers);
  if (!outputs.ok()) {
    std::cerr << "vdev run: " << outputs.status().message() << "\n";
    return kExitNegative;
  }
  for (int k = 0; k < o.workers; ++k)
    for (size_t i = 0; i < (*outputs)[k].size(); ++i)
      std::cout << "worker " << k << " output " << i << ": " << Summarize((*outputs)[k][i]) << "\n";
  if (!args.check) return kExitOk;
  return CheckOutputs(*program, o, *outputs);
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Plan, lower and run @main on N workers; print each output's summary");
  run->add_option("FILE", args->options.file, "program text")->required();
  run->add_option("-n,--workers", args->options.workers, "number of workers (1..8)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int n = 0;
            if (absl::SimpleAtoi(text, &n) && n >= 1 && n <= kMaxWorkers) return "";
            return absl::StrCat("expected a whole number of workers from 1 to ", kMaxWorkers, ", found '", text, "'");
          },
          "1..8"));
  run->add_option("--backend", args->options.backend, "cuda or host (default: host)")
      ->check(CLI::IsMember({"cuda", "host"}));
  run->add_option("--inputs", args->options.inputs,
                  "random:SEED (default random:0; the same inputs on every worker), random-per-rank:SEED (each worker "
                  "its own) or a directory of PARAM.npy files");
  run->add_option("--outputs", args->outputs, "write each worker's outputs as DIR/rank<k>/output<i>.npy");
  run->add_flag("--check", args->check, "recompute on the CPU (all workers as threads) and compare");
  run->add_option("--repeat", args->options.repeat, "run K times (CUDA: graph replay from the 3rd)")
      ->check(CLI::PositiveNumber);
  run->add_option("--allreduce-strategy", args->options.allreduce_strategy,
                  "strategy of the IPC all-reduces: auto, one-shot, two-shot, nccl, plan:NAME (a channel plan)");
  run->add_flag(
      "--no-fuse-allreduce", [args](int64_t) { args->options.fuse_allreduce = false; },
      "keep each all-reduce, residual add and rms_norm apart (no vdev.allreduce_add_rms_norm)");
  CLI::Option* optimize = run->add_flag(
      "--optimize", args->options.optimize,
      "place what no annotation fixes where the machine model says it is cheapest (vdev plan --optimize); print "
      "the model's predicted time next to the measured one");
  run->add_option("--machine", args->options.machine, "machine description (docs/machine.md); default: 1 CPU + 2 H100s")
      ->needs(optimize);
  run->add_flag("--profile", args->options.profile, "print per-op time and the share of copies and all-reduces");
  run->add_option("--timeout", args->timeout_seconds,
                  "seconds a worker may take per step and a collective may wait before the run fails (default 600)")
      ->check(CLI::Range(1.0, 86400.0));
  run->callback([args, exit_code] { *exit_code = RunAsController(*args); });

  // What scripts ask before choosing a backend (scripts/demo.sh): a GPU is no use to a vdev built
  // without the CUDA backend.
  CLI::App* version =
      app.add_subcommand("version", "Print vdev's version and the backends of `vdev run` in this build");
  version->callback([exit_code] {
    std::cout << "vdev " << VDEV_VERSION << "\nbackends: host" << (HasCudaBackend() ? " cuda" : "") << "\n";
    *exit_code = kExitOk;
  });
}

}  // namespace vdev::cli
