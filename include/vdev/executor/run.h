// `vdev run` as a library: running a module on N workers, inputs, one worker's run, the CPU
// reference and the comparison.
//
// RunOnWorkers is the one call a C++ frontend needs: it takes a module it built (ir::ModuleBuilder)
// or parsed, plans, lowers and runs @main once on N workers, each with its own inputs, and returns
// each worker's outputs. Workers are processes by default (what `vdev run` starts), threads of this
// process on request:
//
//   int main(int argc, char** argv) {
//     vdev::MaybeRunWorker(argc, argv);  // worker processes re-run this program: first in main
//     absl::StatusOr<vdev::ir::Module> module = BuildMyModel();          // a ModuleBuilder's Finish()
//     std::vector<std::vector<vdev::HostTensor>> inputs = {rank0_inputs, rank1_inputs};
//     absl::StatusOr<std::vector<std::vector<vdev::HostTensor>>> outputs =
//         vdev::RunOnWorkers(*module, inputs);                          // 2 worker processes
//     // outputs->at(1) are worker 1's results of @main (a tuple's tensors in order).
//   }
// examples/run/tp_frontend.cc builds a tensor-parallel MLP this way and checks it with a plain loop.
//
// `vdev run FILE --workers N` compiles FILE (CompileRunProgram), starts N workers in a process
// ControllerSession (vdev/controller/controller.h) whose worker function calls RunWorker on each: it makes its backend, loads @main's
// inputs, runs the program `repeat` times and writes its outputs as DIR/rank<k>/output<i>.npy. The
// controller then prints each output's shape, dtype and checksum and, with --check, compares them
// with RunReference: the same program on the CPU kernels, the N workers as threads of one process.
#ifndef VDEV_RUN_H_
#define VDEV_RUN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "vdev/executor/executor.h"
#include "vdev/kernels/tensor.h"
#include "vdev/runtime/peer_group.h"

namespace vdev {

// How RunOnWorkers runs the workers.
enum class WorkerKind {
  // Worker processes started by re-running this program (vdev/controller/controller.h: the program must call
  // vdev::MaybeRunWorker(argc, argv) first in main): each worker's crash is its own, its all-reduces
  // go through shared memory (host) or CUDA IPC, and the backend may be "cuda".
  kProcesses,
  // Threads of this process (ThreadGroup): no start-up cost and no MaybeRunWorker needed; host
  // backend only; all-reduces meet in memory. Sets the CPU kernels' thread count for this process
  // (SetCpuKernelThreads) to an equal share of the cores per worker.
  kThreads,
};

struct WorkerRunOptions {
  WorkerKind kind = WorkerKind::kProcesses;
  std::string backend = "host";                 // "host" or "cuda" (processes only)
  std::string allreduce_strategy = "auto";      // as RunOptions::allreduce_strategy
  std::string name = "<module>";                // names the program in messages
  absl::Duration timeout = absl::Seconds(600);  // processes: bound on each wait (vdev run --timeout)
  // Processes: the program the workers run; empty: this program. Another program must call
  // vdev::MaybeRunWorker first in main and link this library's RunOnWorkers.
  std::string worker_program;
};

// Plans, lowers and runs @main of `module` once on inputs.size() workers (1..kMaxWorkers); worker k
// gets inputs[k], one tensor per parameter of @main, and result[k] are its outputs (@main's result
// flattened). Before any worker starts: compile errors (located in the module's printed text), ops
// without a kernel, inputs of the wrong count, dtype or shape (naming the worker and parameter) and
// a worker count the program cannot mean (CheckWorkerCount) are InvalidArgument. A worker that
// fails or dies fails the call, named. Process workers receive the module as its printed text
// (ir::PrintModule) and compile it themselves, as `vdev run` workers do; inputs and outputs travel
// as .npy files in a temporary directory, removed afterwards.
absl::StatusOr<std::vector<std::vector<HostTensor>>> RunOnWorkers(const ir::Module& module,
                                                                  absl::Span<const std::vector<HostTensor>> inputs,
                                                                  const WorkerRunOptions& options = {});

// The thread path of RunOnWorkers on a lowered program, inputs read in place (what RunReference and
// Python's vdev.run_workers use): worker k runs on inputs[k] on the host backend, its all-reduces
// meet the others' in memory. A failing worker stops the others and is named ("worker K: …").
absl::StatusOr<std::vector<std::vector<HostTensor>>> RunInThreads(const LoweredProgram& program,
                                                                  absl::Span<const std::vector<TensorRef>> inputs);

struct RunOptions {
  std::string file;
  int workers = 1;
  std::string backend = "host";     // "host" or "cuda"
  std::string inputs = "random:0";  // random:SEED, random-per-rank:SEED or a directory of .npy files
  int repeat = 1;
  bool profile = false;
  std::string allreduce_strategy =
      "auto";                  // written on every IPC all-reduce: auto, one-shot, two-shot, nccl, plan:NAME
  bool print_timing = true;    // worker 0 prints its timing line (`vdev run`'s first line)
  bool fuse_allreduce = true;  // LowerOptions::fuse_allreduce (`--no-fuse-allreduce` clears it)
  // `--optimize [--machine M.json]`: plan with the optimiser (OptimizePlacement) on the machine of
  // docs/machine.md in `machine` (empty: DefaultMachine(2)) instead of PlanDevices.
  bool optimize = false;
  std::string machine;
  // When >= 0, worker 0 prints it next to the measured time: the model's seconds per run.
  double predicted_seconds = -1;
};

// `vdev run`'s workers: starts options.workers processes of `worker_program` (empty: this program),
// sets up their collectives and runs RunWorker on each, outputs into `output_dir`. Returns once all
// have finished; a failing or dead worker is named.
absl::Status RunFileOnWorkers(const RunOptions& options, absl::Duration timeout, const std::string& output_dir,
                              const std::string& worker_program = "");
// What the workers of RunFileOnWorkers wrote: result[k][i] from DIR/rank<k>/output<i>.npy.
absl::StatusOr<std::vector<std::vector<HostTensor>>> ReadRunOutputs(const std::string& dir, int workers);

// With `optimize`: options.file placed by the optimiser, as the planned program's text (which plans
// to itself, so every worker that plans it again runs the same placement), the model's predicted
// seconds per run and whether the placement is proven optimal. Errors are located in options.file
// (FILE:LINE:COL, caret, notes): no placement fits in memory, an op no device runs; a bad machine
// file is named.
struct OptimizedRunProgram {
  std::string text;
  double predicted_seconds = 0;
  bool optimal = false;
};
absl::StatusOr<OptimizedRunProgram> OptimizeRunProgram(const RunOptions& options);

// CompileForExecution of options.file with options.allreduce_strategy (placed by the optimiser
// first with options.optimize).
absl::StatusOr<LoweredProgram> CompileRunProgram(const RunOptions& options);

// The inputs of worker `rank` for @main's parameters. `random:SEED`: the same inputs on every
// worker (what a tensor-parallel program expects of its replicated operands), each element drawn
// from a generator seeded by (SEED, parameter index): floats uniform in [-1, 1) divided by
// sqrt(first dimension) for tensors of rank >= 2 (so matmul chains keep their scale), integers in
// [0, 8), booleans fair. `random-per-rank:SEED`: the same draw seeded by (SEED, rank, parameter
// index), so every worker has its own inputs (worker 0's are those of `random:SEED`). A directory:
// PARAM.npy for each parameter named %PARAM, or rank<k>/PARAM.npy where worker k has its own.
// Errors name the parameter and file (missing, unreadable, wrong dtype or shape).
absl::StatusOr<std::vector<HostTensor>> ProgramInputs(const LoweredProgram& program, absl::string_view spec, int rank);

// One worker: backend, executor, `repeat` runs, outputs into `output_dir`/rank<k>/output<i>.npy.
// Worker 0 prints timing (and with `profile`, per-op time) to standard output.
absl::Status RunWorker(const RunOptions& options, PeerGroup* session, const std::string& output_dir);

// The reference: every worker of the program as a thread running the CPU kernels, all-reduces
// summing in memory. result[k] are worker k's outputs.
absl::StatusOr<std::vector<std::vector<HostTensor>>> RunReference(const LoweredProgram& program, int workers,
                                                                  absl::string_view inputs);

// OK when `actual` matches `expected` within the dtype's tolerance: |a - e| <= atol * max|e| + rtol * |e|
// with (rtol, atol) = f64/f32 (1e-4, 1e-5), f16 (1e-2, 1e-2), bf16 (5e-2, 2e-2); integers and bool
// exactly; NaN only where NaN is expected. Otherwise names the first differing output and index.
absl::Status CompareOutputs(absl::Span<const HostTensor> actual, absl::Span<const HostTensor> expected, int rank);

// `f32[8,1024] sum=… mean|x|=…`, for the printed summary.
std::string Summarize(const HostTensor& tensor);

}  // namespace vdev

#endif  // VDEV_RUN_H_
