// `vdev run FILE [--workers N] [--backend cuda|host] [--inputs random:SEED|DIR] [--outputs DIR]
//  [--check] [--repeat K] [--profile]`: plans, lowers and runs @main on N workers (vdev/run.h).
//
// The command is its own controller: it compiles FILE (located errors, exit 2), checks the inputs
// and that every op has a kernel where it was planned, then starts N copies of itself as the
// workers of one session (the hidden --worker-dir tells them apart). Each worker writes its outputs
// as .npy files; the controller prints their summaries and, with --check, compares them with the
// CPU reference. A failing or killed worker fails the run (exit 1) within a few seconds.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "vdev/executor.h"
#include "vdev/launch.h"
#include "vdev/npy.h"
#include "vdev/run.h"

namespace vdev::cli {
namespace {

struct RunArgs {
  RunOptions options;
  std::string outputs;
  bool check = false;
  std::string worker_dir;  // hidden: set on the workers the controller starts
};

int RunAsWorker(const RunArgs& args) {
  absl::StatusOr<std::unique_ptr<Session>> session = Session::FromEnvironment();
  if (!session.ok()) {
    std::cerr << "vdev run: worker: " << session.status().message() << "\n";
    return kExitNegative;
  }
  absl::Status s = RunWorker(args.options, session->get(), args.worker_dir);
  if (!s.ok()) {
    std::cerr << "vdev run: worker " << (*session)->rank() << ": " << s.message() << "\n";
    return kExitNegative;
  }
  return kExitOk;
}

std::string SelfPath() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

// A temporary directory for the workers' outputs, removed when the run ends.
class OutputDir {
 public:
  static absl::StatusOr<OutputDir> Make(const std::string& requested) {
    OutputDir dir;
    if (!requested.empty()) {
      std::error_code error;
      std::filesystem::create_directories(requested, error);
      if (error) return absl::InvalidArgumentError(absl::StrCat("--outputs ", requested, ": ", error.message()));
      dir.path_ = requested;
      return dir;
    }
    std::string pattern = (std::filesystem::temp_directory_path() / "vdev-run-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("cannot make a temporary directory");
    dir.path_ = pattern;
    dir.temporary_ = true;
    return dir;
  }
  OutputDir(OutputDir&& other) noexcept : path_(std::move(other.path_)), temporary_(other.temporary_) { other.temporary_ = false; }
  ~OutputDir() {
    std::error_code ignored;
    if (temporary_) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  OutputDir() = default;
  std::string path_;
  bool temporary_ = false;
};

int RunAsController(const RunArgs& args) {
  const RunOptions& o = args.options;
  std::ifstream in(o.file, std::ios::binary);
  if (!in) {
    std::cerr << o.file << ": error: cannot read the program\n";
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<LoweredProgram> program = CompileForExecution(text.str(), o.file);
  if (!program.ok()) {
    std::cerr << program.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s = CheckKernels(*program, o.backend); !s.ok()) {
    std::cerr << s.message() << "\n";
    return kExitUsage;
  }
  // Random inputs are drawn by each worker; files are read here first, so a bad one stops the run
  // before any worker starts.
  for (int k = 0; k < o.workers && o.inputs.rfind("random:", 0) != 0; ++k) {
    if (absl::Status s = ProgramInputs(*program, o.inputs, k).status(); !s.ok()) {
      std::cerr << "vdev run: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  absl::StatusOr<OutputDir> dir = OutputDir::Make(args.outputs);
  if (!dir.ok()) {
    std::cerr << "vdev run: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  LaunchOptions launch;
  launch.num_workers = o.workers;
  launch.grace = absl::Seconds(2);
  launch.argv = {SelfPath(), "run", o.file, "--backend", o.backend, "--inputs", o.inputs,
                 "--repeat", std::to_string(o.repeat), "--worker-dir", dir->path()};
  if (o.profile) launch.argv.push_back("--profile");
  std::cout.flush();
  absl::StatusOr<int> status = Launch(launch);
  if (!status.ok()) {
    std::cerr << "vdev run: " << status.status().message() << "\n";
    return kExitUsage;
  }
  if (*status != 0) {
    std::cerr << "vdev run: failed: a worker exited with status " << *status << " (its message is above)\n";
    return kExitNegative;
  }
  std::vector<std::vector<HostTensor>> outputs(o.workers);
  for (int k = 0; k < o.workers; ++k) {
    for (int i = 0;; ++i) {
      const std::string path = absl::StrCat(dir->path(), "/rank", k, "/output", i, ".npy");
      absl::StatusOr<HostTensor> t = ReadNpy(path);
      if (absl::IsNotFound(t.status())) break;
      if (!t.ok()) {
        std::cerr << "vdev run: " << t.status().message() << "\n";
        return kExitNegative;
      }
      std::cout << "worker " << k << " output " << i << ": " << Summarize(*t) << "\n";
      outputs[k].push_back(*std::move(t));
    }
  }
  if (!args.check) return kExitOk;
  absl::StatusOr<std::vector<std::vector<HostTensor>>> reference = RunReference(*program, o.workers, o.inputs);
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

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Plan, lower and run @main on N workers; print each output's summary");
  run->add_option("FILE", args->options.file, "program text")->required();
  run->add_option("-n,--workers", args->options.workers, "number of workers (1..8)")->check(CLI::Range(1, kMaxWorkers));
  run->add_option("--backend", args->options.backend, "cuda or host (default: host)")
      ->check(CLI::IsMember({"cuda", "host"}));
  run->add_option("--inputs", args->options.inputs, "random:SEED (default random:0) or a directory of PARAM.npy files");
  run->add_option("--outputs", args->outputs, "write each worker's outputs as DIR/rank<k>/output<i>.npy");
  run->add_flag("--check", args->check, "recompute on the CPU (all workers as threads) and compare");
  run->add_option("--repeat", args->options.repeat, "run K times (CUDA: graph replay from the 3rd)")->check(CLI::PositiveNumber);
  run->add_flag("--profile", args->options.profile, "print per-op time and the share of copies and all-reduces");
  run->add_option("--worker-dir", args->worker_dir)->group("");  // hidden: the controller's workers
  run->callback([args, exit_code] {
    *exit_code = args->worker_dir.empty() ? RunAsController(*args) : RunAsWorker(*args);
  });
}

}  // namespace vdev::cli
