// `vdev run` as a library: inputs, one worker's run, the CPU reference and the comparison.
//
// `vdev run FILE --workers N` compiles FILE (CompileRunProgram), starts N workers in a process
// ControllerSession (vdev/controller.h) whose worker function calls RunWorker on each: it makes its backend, loads @main's
// inputs, runs the program `repeat` times and writes its outputs as DIR/rank<k>/output<i>.npy. The
// controller then prints each output's shape, dtype and checksum and, with --check, compares them
// with RunReference: the same program on the CPU kernels, the N workers as threads of one process.
#ifndef VDEV_RUN_H_
#define VDEV_RUN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/executor.h"
#include "vdev/session.h"
#include "vdev/tensor.h"

namespace vdev {

struct RunOptions {
  std::string file;
  int workers = 1;
  std::string backend = "host";       // "host" or "cuda"
  std::string inputs = "random:0";    // random:SEED or a directory of .npy files
  int repeat = 1;
  bool profile = false;
  std::string allreduce_strategy = "auto";  // written on every IPC all-reduce: auto, one-shot, two-shot, nccl, plan:NAME
  // `--optimize [--machine M.json]`: plan with the optimiser (OptimizePlacement) on the machine of
  // docs/machine.md in `machine` (empty: DefaultMachine(2)) instead of PlanDevices.
  bool optimize = false;
  std::string machine;
  // When >= 0, worker 0 prints it next to the measured time: the model's seconds per run.
  double predicted_seconds = -1;
};

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

// The inputs of worker `rank` for @main's parameters. `random:SEED`: each element drawn from a
// generator seeded by (SEED, rank, parameter index): floats uniform in [-1, 1) divided by
// sqrt(first dimension) for tensors of rank >= 2 (so matmul chains keep their scale), integers in
// [0, 8), booleans fair. A directory: PARAM.npy for each parameter named %PARAM, or rank<k>/PARAM.npy
// where worker k has its own. Errors name the parameter and file (missing, unreadable, wrong dtype
// or shape).
absl::StatusOr<std::vector<HostTensor>> ProgramInputs(const LoweredProgram& program, absl::string_view spec, int rank);

// One worker: backend, executor, `repeat` runs, outputs into `output_dir`/rank<k>/output<i>.npy.
// Worker 0 prints timing (and with `profile`, per-op time) to standard output.
absl::Status RunWorker(const RunOptions& options, Session* session, const std::string& output_dir);

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
