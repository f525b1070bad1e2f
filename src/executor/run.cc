// RunWorker, RunReference, CompareOutputs and Summarize of vdev/executor/run.h.
#include "vdev/executor/run.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "run_internal.h"
#include "vdev/executor/npy.h"
#include "vdev/memory/fuse_allreduce.h"
#include "vdev/support/source_file.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using Clock = std::chrono::steady_clock;

void PrintProfile(const std::vector<OpProfile>& profile) {
  double total = 0, copies = 0, allreduces = 0, norms = 0;
  for (const OpProfile& p : profile) {
    total += p.seconds;
    if (p.op == "device_copy") copies += p.seconds;
    // The fused op is an all-reduce that also adds the residual and normalises.
    if (p.op == "allreduce" || p.op == "vdev.allreduce" || p.op == kFusedAllReduceOp) allreduces += p.seconds;
    if (p.op == "rms_norm" || p.op == "layer_norm") norms += p.seconds;
  }
  std::vector<OpProfile> sorted = profile;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const OpProfile& a, const OpProfile& b) { return a.seconds > b.seconds; });
  std::cout << absl::StrFormat("profile (worker 0, one run, %.3f ms in ops):\n", total * 1e3);
  std::cout << absl::StrFormat("  %-28s %7s %11s %7s\n", "op", "calls", "time ms", "share");
  for (const OpProfile& p : sorted)
    std::cout << absl::StrFormat("  %-28s %7d %11.3f %6.1f%%\n", p.op, p.calls, p.seconds * 1e3,
                                 total > 0 ? 100 * p.seconds / total : 0.0);
  const double share = total > 0 ? 100 / total : 0.0;
  std::cout << absl::StrFormat(
      "  copies %.1f%%, all-reduces %.1f%% (fused ones included), all-reduces + norms %.1f%% of op time\n",
      share * copies, share * allreduces, share * (allreduces + norms));
}

absl::Status WriteOutputs(const std::vector<HostTensor>& outputs, const std::string& dir, int rank) {
  const std::string mine = absl::StrCat(dir, "/rank", rank);
  if (mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST)
    return absl::InvalidArgumentError(absl::StrCat(mine, ": cannot create: ", std::strerror(errno)));
  for (size_t i = 0; i < outputs.size(); ++i)
    VDEV_RETURN_IF_ERROR(WriteNpy(absl::StrCat(mine, "/output", i, ".npy"), outputs[i]));
  return absl::OkStatus();
}

double Tolerance(ir::DType dtype, bool relative) {
  switch (dtype) {
    case ir::DType::kF64:
    case ir::DType::kF32: return relative ? 1e-4 : 1e-5;
    case ir::DType::kF16: return relative ? 1e-2 : 1e-2;
    case ir::DType::kBF16: return relative ? 5e-2 : 2e-2;
    default: return 0;
  }
}

}  // namespace

namespace internal {

int CpuThreadsPerWorker(int workers) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, workers));
}

absl::StatusOr<LoweredProgram> CompileWithStrategy(absl::string_view text, absl::string_view file,
                                                   absl::string_view strategy_name, bool fuse_allreduce) {
  LowerOptions lower;
  std::optional<AllReduceStrategy> strategy = AllReduceStrategyFromName(strategy_name);
  if (!strategy)
    return absl::InvalidArgumentError(absl::StrCat(
        "--allreduce-strategy: expected auto, one-shot, two-shot, nccl or plan:NAME, found '", strategy_name, "'"));
  lower.strategy = *strategy;
  lower.fuse_allreduce = fuse_allreduce;
  return CompileForExecution(text, file, lower);
}

}  // namespace internal

int VirtualCudaDevices(const ir::Module& m) {
  int n = 0;
  for (size_t d = 0; d < m.devices.size(); ++d) {
    const VirtualDevice& vd = m.devices.Get(static_cast<ir::DeviceId>(d));
    if (vd.device_type() == DeviceType::kCUDA && vd.has_id()) n = std::max(n, vd.virtual_device_id() + 1);
  }
  return std::max(n, 1);
}

absl::StatusOr<LoweredProgram> CompileRunProgram(const RunOptions& options) {
  // Every worker reads FILE again, and only the controller has the caller's standard input.
  if (options.optimize) {
    VDEV_ASSIGN_OR_RETURN(OptimizedRunProgram optimized, OptimizeRunProgram(options));
    return internal::CompileWithStrategy(optimized.text, options.file, options.allreduce_strategy,
                                         options.fuse_allreduce);
  }
  VDEV_ASSIGN_OR_RETURN(std::string text, ReadSourceFile(options.file, StandardInput::kRefused));
  return internal::CompileWithStrategy(text, options.file, options.allreduce_strategy, options.fuse_allreduce);
}

absl::Status RunWorker(const RunOptions& options, PeerGroup* session, const std::string& output_dir) {
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileRunProgram(options));
  std::unique_ptr<ExecutionBackend> backend;
  if (options.backend == "cuda") {
    VDEV_ASSIGN_OR_RETURN(backend, CreateCudaBackend(session, VirtualCudaDevices(program.module)));
  } else {
    VDEV_ASSIGN_OR_RETURN(backend, CreateHostBackend(session));
  }
  const int rank = backend->rank();
  SetCpuKernelThreads(internal::CpuThreadsPerWorker(backend->world_size()));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> inputs, ProgramInputs(program, options.inputs, rank));
  std::vector<HostTensor> outputs;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress = start;
  double first_seconds = 0, rest_seconds = 0;
  // The inputs are the same every run: copied in once; each run waits for its work to finish.
  VDEV_RETURN_IF_ERROR(executor->SetInputs(inputs));
  for (int r = 0; r < options.repeat; ++r) {
    const Clock::time_point t0 = Clock::now();
    VDEV_RETURN_IF_ERROR(executor->Enqueue());
    VDEV_RETURN_IF_ERROR(backend->Synchronize());
    const Clock::time_point t1 = Clock::now();
    (r == 0 ? first_seconds : rest_seconds) += std::chrono::duration<double>(t1 - t0).count();
    // Progress is news only while runs remain: after the last one the summary line follows at once.
    if (rank == 0 && r + 1 < options.repeat && t1 - start > std::chrono::seconds(2) &&
        t1 - last_progress > std::chrono::seconds(1)) {
      std::cerr << absl::StrFormat("vdev run: run %d of %d, %.1f s\n", r + 1, options.repeat,
                                   std::chrono::duration<double>(t1 - start).count());
      last_progress = t1;
    }
  }
  VDEV_ASSIGN_OR_RETURN(outputs, executor->Outputs());
  if (rank == 0 && options.print_timing) {
    std::string line = absl::StrFormat("worker 0: %d run(s) on the %s backend, first %.3f ms", options.repeat,
                                       backend->name(), first_seconds * 1e3);
    if (options.predicted_seconds >= 0) {
      absl::StrAppendFormat(&line, " (the machine model predicts %.4f ms per run)", options.predicted_seconds * 1e3);
    }
    if (options.repeat > 1)
      absl::StrAppendFormat(&line, ", then %.4f ms per run%s", rest_seconds * 1e3 / (options.repeat - 1),
                            executor->replaying() ? " (CUDA graph replay)" : "");
    std::cout << line << "\n";
  }
  if (options.profile) {
    std::vector<OpProfile> profile;
    VDEV_ASSIGN_OR_RETURN(outputs, executor->RunProfiled(inputs, &profile));
    if (rank == 0) PrintProfile(profile);
  }
  std::cout.flush();
  return WriteOutputs(outputs, output_dir, rank);
}

absl::StatusOr<std::vector<std::vector<HostTensor>>> RunReference(const LoweredProgram& program, int workers,
                                                                  absl::string_view inputs) {
  SetCpuKernelThreads(internal::CpuThreadsPerWorker(workers));
  std::vector<std::vector<HostTensor>> tensors(workers);
  std::vector<std::vector<TensorRef>> views(workers);
  for (int k = 0; k < workers; ++k) {
    absl::StatusOr<std::vector<HostTensor>> in = ProgramInputs(program, inputs, k);
    if (!in.ok())
      return absl::Status(in.status().code(), absl::StrCat("reference worker ", k, ": ", in.status().message()));
    tensors[k] = *std::move(in);
    for (const HostTensor& t : tensors[k]) views[k].push_back(t.Ref());
  }
  absl::StatusOr<std::vector<std::vector<HostTensor>>> results = RunInThreads(program, views);
  if (!results.ok())
    return absl::Status(results.status().code(), absl::StrCat("reference ", results.status().message()));
  return results;
}

absl::Status CompareOutputs(absl::Span<const HostTensor> actual, absl::Span<const HostTensor> expected, int rank) {
  if (actual.size() != expected.size())
    return absl::InternalError(
        absl::StrCat("worker ", rank, " returned ", actual.size(), " outputs; the reference ", expected.size()));
  for (size_t o = 0; o < actual.size(); ++o) {
    const HostTensor& a = actual[o];
    const HostTensor& e = expected[o];
    if (a.dtype != e.dtype || a.shape != e.shape)
      return absl::InternalError(absl::StrCat("worker ", rank, " output ", o, ": type differs from the reference"));
    const int64_t n = e.NumElements();
    double max_abs = 0;
    for (int64_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(ReadAsDouble(e.Ref(), i)));
    const double rtol = Tolerance(e.dtype, true), atol = Tolerance(e.dtype, false) * max_abs;
    for (int64_t i = 0; i < n; ++i) {
      const double x = ReadAsDouble(a.Ref(), i), y = ReadAsDouble(e.Ref(), i);
      const bool ok = std::isnan(y) ? std::isnan(x) : std::fabs(x - y) <= atol + rtol * std::fabs(y);
      if (!ok)
        return absl::InternalError(
            absl::StrFormat("worker %d output %d differs from the CPU reference at flat index %d: %.9g, expected %.9g "
                            "(tolerance %.3g + %.3g*|expected|)",
                            rank, o, i, x, y, atol, rtol));
    }
  }
  return absl::OkStatus();
}

std::string Summarize(const HostTensor& t) {
  double sum = 0, abs_sum = 0;
  const int64_t n = t.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    const double v = ReadAsDouble(t.Ref(), i);
    sum += v;
    abs_sum += std::fabs(v);
  }
  return absl::StrFormat("%s[%s] sum=%.6g mean|x|=%.6g", ir::DTypeName(t.dtype), absl::StrJoin(t.shape, ","), sum,
                         n > 0 ? abs_sum / n : 0.0);
}

}  // namespace vdev
