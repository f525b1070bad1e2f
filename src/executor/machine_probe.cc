// ProbeMachine (vdev/executor/machine_probe.h): the CPU measured with vdev's own CPU kernels (a matmul per
// dtype, an elementwise add for memory bandwidth); the GPUs by machine_probe_cuda.cc where built;
// every device's fixed time per op through vdev's executor (chains of small ops).
#include "vdev/executor/machine_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/support/status_macros.h"
#ifdef VDEV_PROBE_CUDA
#include "internal_probe_cuda.h"
#endif

namespace vdev {
namespace {

// The best of `repetitions` timed runs of `text`'s @main on `backend`, after two untimed ones (the
// first sets kernels up, the second captures a CUDA graph where the program allows one), timed as
// `vdev run` times a run: its inputs in place, enqueue and wait.
absl::StatusOr<double> BestRunSeconds(const std::string& text, ExecutionBackend* backend, int repetitions) {
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(text, "<machine probe>"));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> inputs, ProgramInputs(program, "random:0", 0));
  VDEV_RETURN_IF_ERROR(executor->SetInputs(inputs));
  double best = 1e30;
  for (int r = -2; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    VDEV_RETURN_IF_ERROR(executor->Enqueue());
    VDEV_RETURN_IF_ERROR(backend->Synchronize());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r >= 0) best = std::min(best, seconds);
  }
  return best;
}

// The same on one CPU worker.
absl::StatusOr<double> BestCpuSeconds(const std::string& text, int repetitions) {
  ThreadGroup group(1);
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, 0));
  return BestRunSeconds(text, backend.get(), repetitions);
}

// A chain of `ops` small ops on `device` (the config's default), in turn the kinds programs are
// made of: a matmul, a norm, an activation, an elementwise add, of 8x8 f32 (their fixed times
// differ: a 1-element add alone would be the cheapest kernel, not a typical one). `op_by_op` puts
// the chain in both arms of an `if`, which the executor never captures as a CUDA graph.
std::string OpChain(const std::string& device, int ops, bool op_by_op) {
  auto chain = [ops](const char* name) {
    std::string text;
    for (int i = 0; i < ops; ++i) {
      const std::string prev = i == 0 ? "%a" : absl::StrCat("%", name, i - 1);
      static constexpr const char* kOps[] = {"matmul($, %a)", "rms_norm($, %g)", "silu($)", "add($, %a)"};
      absl::StrAppend(&text, "  %", name, i, " = ", absl::StrReplaceAll(kOps[i % 4], {{"$", prev}}), "\n");
    }
    return absl::StrCat(text, "  return %", name, ops - 1, "\n");
  };
  const std::string head = absl::StrCat("config { targets = [llvm, cuda], default = ", device,
                                        ", host = cpu:0 }\ndef @main(%a: f32[8,8], %g: f32[8]",
                                        op_by_op ? ", %c: bool[]" : "", ") -> f32[8,8] {\n");
  if (!op_by_op) return absl::StrCat(head, chain("x"), "}\n");
  return absl::StrCat(head, "  %r = if %c {\n", chain("x"), "  } else {\n", chain("y"), "  }\n  return %r\n}\n");
}

// The executor's fixed times on `device`: chains of kLongChain and kShortChain ops (whole rounds of
// the four kinds) differ by their difference in ops (the time per op); the short chain, less its
// ops, is what every run pays once (enqueueing, waiting). Runs are short, so 10 times the
// repetitions are timed.
constexpr int kLongChain = 64, kShortChain = 4;
struct FixedTimes {
  double per_op = 0;
  double per_run = 0;
};
absl::StatusOr<FixedTimes> ProbeFixedTimes(ExecutionBackend* backend, const std::string& device, bool op_by_op,
                                           int repetitions) {
  VDEV_ASSIGN_OR_RETURN(double many, BestRunSeconds(OpChain(device, kLongChain, op_by_op), backend, 10 * repetitions));
  VDEV_ASSIGN_OR_RETURN(double few, BestRunSeconds(OpChain(device, kShortChain, op_by_op), backend, 10 * repetitions));
  FixedTimes t;
  t.per_op = std::max(0.0, (many - few) / (kLongChain - kShortChain));
  t.per_run = std::max(0.0, few - kShortChain * t.per_op);
  return t;
}

constexpr char kCpuConfig[] = "config { targets = [llvm], default = cpu:0, host = cpu:0 }\n";

absl::StatusOr<DeviceSpec> ProbeCpu(int repetitions, double* run_seconds) {
  DeviceSpec spec;
  spec.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // 2^24 f32 per operand: 192 MiB moved per add, past every cache.
  constexpr int64_t kElements = int64_t{1} << 24;
  VDEV_ASSIGN_OR_RETURN(
      double add_seconds,
      BestCpuSeconds(absl::StrCat(kCpuConfig, "def @main(%a: f32[", kElements, "], %b: f32[", kElements, "]) -> f32[",
                                  kElements, "] {\n  %0 = add(%a, %b)\n  return %0\n}\n"),
                     repetitions));
  spec.bandwidth = 3.0 * 4 * kElements / add_seconds;
  constexpr int64_t kN = 512;
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    const std::string t = absl::StrCat(dtype, "[", kN, ",", kN, "]");
    absl::StatusOr<double> seconds = BestCpuSeconds(absl::StrCat(kCpuConfig, "def @main(%a: ", t, ", %b: ", t, ") -> ",
                                                                 t, " {\n  %0 = matmul(%a, %b)\n  return %0\n}\n"),
                                                    repetitions);
    if (!seconds.ok()) continue;  // no CPU kernel for this dtype: not listed, default_tflops applies
    spec.flops[*ir::DTypeFromName(dtype)] = 2.0 * kN * kN * kN / *seconds;
  }
  if (!spec.flops.contains(ir::DType::kF32))
    return absl::InternalError("machine probe: the CPU f32 matmul did not run");
  spec.default_flops = spec.flops[ir::DType::kF32];
  ThreadGroup group(1);
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, 0));
  VDEV_ASSIGN_OR_RETURN(FixedTimes fixed, ProbeFixedTimes(backend.get(), "cpu:0", false, repetitions));
  spec.kernel_seconds = spec.graph_kernel_seconds = fixed.per_op;  // CPU ops are never replayed
  if (run_seconds != nullptr) *run_seconds = fixed.per_run;
  return spec;
}

#ifdef VDEV_PROBE_CUDA
// cuda:`gpu`'s per-op times, op by op and replayed, through the CUDA backend (one worker: the
// program's cuda:`gpu` is GPU `gpu`); a replayed run's fixed time.
absl::Status ProbeGpuPerOp(int gpu, int repetitions, DeviceSpec* spec, double* run_seconds) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateCudaBackend(nullptr, gpu + 1));
  const std::string device = absl::StrCat("cuda:", gpu);
  VDEV_ASSIGN_OR_RETURN(FixedTimes eager, ProbeFixedTimes(backend.get(), device, true, repetitions));
  VDEV_ASSIGN_OR_RETURN(FixedTimes replayed, ProbeFixedTimes(backend.get(), device, false, repetitions));
  spec->kernel_seconds = eager.per_op;
  spec->graph_kernel_seconds = replayed.per_op;
  *run_seconds = replayed.per_run;
  return absl::OkStatus();
}

// GPUs of one model measure apart on every probe, and so do their links (two H100s of one host:
// bandwidth and rates within 2%, the per-op time op by op and link latencies up to 22%): GPUs of
// one name within kAlike of each other get their mean, so that the optimiser finds them identical
// and moves no program from one to another for noise.
constexpr double kAlike = 0.25;
void MakeAlikeGpusIdentical(std::vector<probe_internal::GpuProbe>* probed) {
  for (const probe_internal::GpuProbe& gpu : *probed) {
    if (gpu.name != probed->front().name) return;
  }
  std::vector<DeviceSpec> specs;
  std::vector<LinkSpec> to_cpu, between;
  for (size_t g = 0; g < probed->size(); ++g) {
    specs.push_back((*probed)[g].spec);
    to_cpu.push_back((*probed)[g].to_cpu);
    for (size_t h = g + 1; h < probed->size(); ++h) between.push_back((*probed)[g].to_gpu[h]);
  }
  std::optional<DeviceSpec> spec = AverageIfAlike(specs, kAlike);
  std::optional<LinkSpec> cpu_link = AverageIfAlike(to_cpu, kAlike);
  std::optional<LinkSpec> gpu_link = AverageIfAlike(between, kAlike);
  for (size_t g = 0; g < probed->size(); ++g) {
    if (spec) (*probed)[g].spec = *spec;
    if (cpu_link) (*probed)[g].to_cpu = *cpu_link;
    for (size_t h = g + 1; h < probed->size() && gpu_link; ++h) (*probed)[g].to_gpu[h] = *gpu_link;
  }
}
#endif

// How many GPUs to measure: the requested number, each reachable, else every visible one.
absl::StatusOr<int> GpusToProbe(const ProbeOptions& options) {
#ifdef VDEV_PROBE_CUDA
  absl::StatusOr<int> visible = probe_internal::VisibleGpus();
  if (!visible.ok() && !options.gpus) return 0;  // no driver, no device: a CPU-only machine
  const int count = visible.ok() ? *visible : 0;
  const std::string why =
      visible.ok() ? absl::StrCat(count, " GPU(s) visible") : std::string(visible.status().message());
#else
  const int count = 0;
  const std::string why = "this vdev is built without the CUDA backend";
#endif
  if (!options.gpus) return count;
  if (*options.gpus < 0) return absl::InvalidArgumentError("machine probe: --gpus must be >= 0");
  if (*options.gpus > count) {
    return absl::InvalidArgumentError(absl::StrCat("machine probe: cuda:", count, " cannot be reached (", why, ")"));
  }
  return *options.gpus;
}

}  // namespace

int VisibleGpus() {
#ifdef VDEV_PROBE_CUDA
  return probe_internal::VisibleGpus().value_or(0);
#else
  return 0;
#endif
}

absl::StatusOr<Machine> ProbeMachine(const ProbeOptions& options) {
  VDEV_ASSIGN_OR_RETURN(int gpus, GpusToProbe(options));
  MachineBuilder b;
  double run_seconds = 0;  // a GPU's where there is one: what a program on it pays per run
  VDEV_ASSIGN_OR_RETURN(DeviceSpec cpu, ProbeCpu(std::max(1, options.repetitions), &run_seconds));
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0), cpu);
#ifdef VDEV_PROBE_CUDA
  if (gpus > 0) {
    VDEV_ASSIGN_OR_RETURN(std::vector<probe_internal::GpuProbe> probed,
                          probe_internal::ProbeGpus(gpus, std::max(1, options.repetitions)));
    for (int g = 0; g < gpus; ++g) {
      double gpu_run_seconds = 0;
      VDEV_RETURN_IF_ERROR(ProbeGpuPerOp(g, std::max(1, options.repetitions), &probed[g].spec, &gpu_run_seconds));
      if (g == 0) run_seconds = gpu_run_seconds;
    }
    MakeAlikeGpusIdentical(&probed);
    for (int g = 0; g < gpus; ++g) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g), probed[g].spec);
    for (int g = 0; g < gpus; ++g) {
      b.AddLink(0, g + 1, probed[g].to_cpu);
      for (int h = g + 1; h < gpus; ++h) b.AddLink(g + 1, h + 1, probed[g].to_gpu[h]);
    }
  }
#endif
  b.SetRunSeconds(run_seconds);
  return b.Build();
}

}  // namespace vdev
