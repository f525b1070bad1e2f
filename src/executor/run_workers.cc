// RunOnWorkers, RunInThreads and RunFileOnWorkers (vdev/executor/run.h): a program on N workers, as threads
// of this process or as worker processes of a controller session.
//
// The worker function `vdev.run.worker` is registered here, in the object file that defines the
// calls which start workers: any program that calls them links this file, so its static registrar
// runs in the program and in the worker processes that re-run it.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "run_internal.h"
#include "vdev/controller/controller.h"
#include "vdev/controller/worker_function.h"
#include "vdev/executor/npy.h"
#include "vdev/executor/run.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

// On each worker: RunWorker with the options the controller sends, over the session InitCCL made.
VDEV_REGISTER_WORKER_FUNCTION("vdev.run.worker",
                              [](WorkerContext& context, const WorkerArgs& args) -> absl::StatusOr<WorkerValue> {
                                VDEV_RETURN_IF_ERROR(args.ExpectCount(10));
                                RunOptions options;
                                VDEV_ASSIGN_OR_RETURN(options.file, args.String(0));
                                VDEV_ASSIGN_OR_RETURN(options.backend, args.String(1));
                                VDEV_ASSIGN_OR_RETURN(options.inputs, args.String(2));
                                VDEV_ASSIGN_OR_RETURN(int64_t repeat, args.Int(3));
                                VDEV_ASSIGN_OR_RETURN(int64_t profile, args.Int(4));
                                VDEV_ASSIGN_OR_RETURN(std::string output_dir, args.String(5));
                                VDEV_ASSIGN_OR_RETURN(options.allreduce_strategy, args.String(6));
                                VDEV_ASSIGN_OR_RETURN(int64_t print_timing, args.Int(7));
                                VDEV_ASSIGN_OR_RETURN(int64_t fuse, args.Int(8));
                                options.fuse_allreduce = fuse != 0;
                                VDEV_ASSIGN_OR_RETURN(std::string predicted, args.String(9));
                                if (!absl::SimpleAtod(predicted, &options.predicted_seconds))
                                  options.predicted_seconds = -1;
                                options.repeat = static_cast<int>(repeat);
                                options.profile = profile != 0;
                                options.print_timing = print_timing != 0;
                                options.workers = context.num_workers();
                                if (context.session() == nullptr)
                                  return absl::FailedPreconditionError("the workers' collectives are not set up");
                                VDEV_RETURN_IF_ERROR(RunWorker(options, context.session(), output_dir));
                                return WorkerValue();
                              });

// A fresh directory under the system's temporary directory, removed with everything in it.
class TemporaryDirectory {
 public:
  static absl::StatusOr<std::unique_ptr<TemporaryDirectory>> Make() {
    std::string pattern = (std::filesystem::temp_directory_path() / "vdev-workers-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("cannot make a temporary directory");
    return std::unique_ptr<TemporaryDirectory>(new TemporaryDirectory(std::move(pattern)));
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TemporaryDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Every worker's inputs match @main's parameters, named by worker and parameter otherwise.
absl::Status CheckInputs(const LoweredProgram& program, absl::Span<const std::vector<HostTensor>> inputs) {
  const ir::Module& m = program.module;
  const ir::FuncId main = m.FindGlobal("main");
  if (main == ir::kNoFunc)
    return absl::InvalidArgumentError(absl::StrCat(program.file, ": error: the program has no @main"));
  absl::Span<const ir::Param> params = m.Params(m.functions[main]);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].size() != params.size())
      return absl::InvalidArgumentError(
          absl::StrCat("worker ", k, ": @main takes ", params.size(), " inputs, got ", inputs[k].size()));
    for (size_t i = 0; i < params.size(); ++i) {
      const HostTensor& t = inputs[k][i];
      const ir::TypeId type = params[i].type;
      absl::Span<const int64_t> dims = m.types.dims(type);
      if (t.dtype != m.types.node(type).dtype || !std::equal(dims.begin(), dims.end(), t.shape.begin(), t.shape.end()))
        return absl::InvalidArgumentError(absl::StrCat("worker ", k, " input ", i, " (%", m.Name(params[i].name),
                                                       "): expected ", m.types.ToString(type), ", found ",
                                                       ir::DTypeName(t.dtype), "[", absl::StrJoin(t.shape, ","), "]"));
    }
  }
  return absl::OkStatus();
}

// Worker k's inputs as DIR/rank<k>/PARAM.npy, where ProgramInputs of a directory finds them.
absl::Status WriteInputs(const LoweredProgram& program, absl::Span<const std::vector<HostTensor>> inputs,
                         const std::string& dir) {
  const ir::Module& m = program.module;
  absl::Span<const ir::Param> params = m.Params(m.functions[m.FindGlobal("main")]);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string rank_dir = absl::StrCat(dir, "/rank", k);
    std::error_code error;
    std::filesystem::create_directories(rank_dir, error);
    if (error) return absl::InternalError(absl::StrCat(rank_dir, ": ", error.message()));
    for (size_t i = 0; i < params.size(); ++i)
      VDEV_RETURN_IF_ERROR(WriteNpy(absl::StrCat(rank_dir, "/", m.Name(params[i].name), ".npy"), inputs[k][i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<HostTensor>>> RunInProcesses(const std::string& text,
                                                                    const LoweredProgram& program,
                                                                    absl::Span<const std::vector<HostTensor>> inputs,
                                                                    const WorkerRunOptions& options) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<TemporaryDirectory> dir, TemporaryDirectory::Make());
  RunOptions run;
  run.file = absl::StrCat(dir->path(), "/program.vdev");
  {
    std::ofstream file(run.file);
    file << text;
    if (!file.good()) return absl::InternalError(absl::StrCat(run.file, ": cannot write"));
  }
  VDEV_RETURN_IF_ERROR(WriteInputs(program, inputs, dir->path()));
  run.workers = static_cast<int>(inputs.size());
  run.backend = options.backend;
  run.inputs = dir->path();
  run.allreduce_strategy = options.allreduce_strategy;
  run.print_timing = false;
  VDEV_RETURN_IF_ERROR(RunFileOnWorkers(run, options.timeout, dir->path(), options.worker_program));
  return ReadRunOutputs(dir->path(), run.workers);
}

}  // namespace

absl::StatusOr<std::vector<std::vector<HostTensor>>> ReadRunOutputs(const std::string& dir, int workers) {
  std::vector<std::vector<HostTensor>> outputs(workers);
  for (int k = 0; k < workers; ++k) {
    for (int i = 0;; ++i) {
      absl::StatusOr<HostTensor> t = ReadNpy(absl::StrCat(dir, "/rank", k, "/output", i, ".npy"));
      if (absl::IsNotFound(t.status())) break;
      VDEV_RETURN_IF_ERROR(t.status());
      outputs[k].push_back(*std::move(t));
    }
  }
  return outputs;
}

absl::Status RunFileOnWorkers(const RunOptions& o, absl::Duration timeout, const std::string& output_dir,
                              const std::string& worker_program) {
  ControllerOptions options;
  options.timeout = timeout;
  options.program = worker_program;
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ControllerSession> session, ControllerSession::Process(o.workers, options));
  VDEV_RETURN_IF_ERROR(session->InitCCL("host", {}));
  VDEV_ASSIGN_OR_RETURN(RemoteFunc run, session->GetGlobalFunc("vdev.run.worker"));
  VDEV_RETURN_IF_ERROR(session
                           ->CallPacked(run, o.file, o.backend, o.inputs, int64_t{o.repeat}, int64_t{o.profile ? 1 : 0},
                                        output_dir, o.allreduce_strategy, int64_t{o.print_timing ? 1 : 0},
                                        int64_t{o.fuse_allreduce ? 1 : 0}, absl::StrCat(o.predicted_seconds))
                           .status());
  VDEV_RETURN_IF_ERROR(session->SyncAllWorkers());
  return session->Shutdown();
}

absl::StatusOr<std::vector<std::vector<HostTensor>>> RunInThreads(const LoweredProgram& program,
                                                                  absl::Span<const std::vector<TensorRef>> inputs) {
  const int workers = static_cast<int>(inputs.size());
  ThreadGroup group(workers);
  std::vector<std::vector<HostTensor>> results(workers);
  std::vector<absl::Status> statuses(workers);
  std::vector<std::thread> threads;
  for (int k = 0; k < workers; ++k) {
    threads.emplace_back([&, k] {
      absl::Status status = [&]() -> absl::Status {
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, k));
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
        VDEV_ASSIGN_OR_RETURN(results[k], executor->RunViews(inputs[k]));
        return absl::OkStatus();
      }();
      if (!status.ok()) group.Abort(status);
      statuses[k] = status;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < workers; ++k)
    if (!statuses[k].ok())
      return absl::Status(statuses[k].code(), absl::StrCat("worker ", k, ": ", statuses[k].message()));
  return results;
}

absl::StatusOr<std::vector<std::vector<HostTensor>>> RunOnWorkers(const ir::Module& module,
                                                                  absl::Span<const std::vector<HostTensor>> inputs,
                                                                  const WorkerRunOptions& options) {
  const int workers = static_cast<int>(inputs.size());
  if (workers < 1 || workers > kMaxWorkers)
    return absl::InvalidArgumentError(
        absl::StrCat("RunOnWorkers: the inputs of 1 to ", kMaxWorkers, " workers, got ", workers));
  if (options.backend != "host" && options.backend != "cuda")
    return absl::InvalidArgumentError(
        absl::StrCat("RunOnWorkers: unknown backend '", options.backend, "' (host or cuda)"));
  if (options.kind == WorkerKind::kThreads && options.backend != "host")
    return absl::InvalidArgumentError("RunOnWorkers: thread workers run on the host backend only");
  // Compiled from its printed text, exactly as the process workers will compile it.
  const std::string text = ir::PrintModule(module);
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program,
                        internal::CompileWithStrategy(text, options.name, options.allreduce_strategy));
  VDEV_RETURN_IF_ERROR(CheckKernels(program, options.backend));
  VDEV_RETURN_IF_ERROR(CheckWorkerCount(program, workers));
  VDEV_RETURN_IF_ERROR(CheckInputs(program, inputs));
  if (options.kind == WorkerKind::kProcesses) return RunInProcesses(text, program, inputs, options);
  SetCpuKernelThreads(internal::CpuThreadsPerWorker(workers));
  std::vector<std::vector<TensorRef>> views(workers);
  for (int k = 0; k < workers; ++k)
    for (const HostTensor& t : inputs[k]) views[k].push_back(t.Ref());
  return RunInThreads(program, views);
}

}  // namespace vdev
