// ProbeMachine (vdev/executor/machine_probe.h): the CPU measured with vdev's own CPU kernels (a matmul per
// dtype, an elementwise add for memory bandwidth); the GPUs by machine_probe_cuda.cc where built.
#include "vdev/executor/machine_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/support/status_macros.h"
#ifdef VDEV_PROBE_CUDA
#include "internal_probe_cuda.h"
#endif

namespace vdev {
namespace {

// The best of `repetitions` timed runs of `text`'s @main on one CPU worker, after one warm-up.
absl::StatusOr<double> BestCpuSeconds(const std::string& text, int repetitions) {
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(text, "<machine probe>"));
  ThreadGroup group(1);
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, 0));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> inputs, ProgramInputs(program, "random:0", 0));
  double best = 1e30;
  for (int r = 0; r <= repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    VDEV_RETURN_IF_ERROR(executor->Run(inputs).status());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, seconds);
  }
  return best;
}

constexpr char kCpuConfig[] = "config { targets = [llvm], default = cpu:0, host = cpu:0 }\n";

absl::StatusOr<DeviceSpec> ProbeCpu(int repetitions) {
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
  return spec;
}

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
  VDEV_ASSIGN_OR_RETURN(DeviceSpec cpu, ProbeCpu(std::max(1, options.repetitions)));
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0), cpu);
#ifdef VDEV_PROBE_CUDA
  if (gpus > 0) {
    VDEV_ASSIGN_OR_RETURN(std::vector<probe_internal::GpuProbe> probed,
                          probe_internal::ProbeGpus(gpus, std::max(1, options.repetitions)));
    for (int g = 0; g < gpus; ++g) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g), probed[g].spec);
    for (int g = 0; g < gpus; ++g) {
      b.AddLink(0, g + 1, probed[g].to_cpu);
      for (int h = g + 1; h < gpus; ++h) b.AddLink(g + 1, h + 1, probed[g].to_gpu[h]);
    }
  }
#endif
  return b.Build();
}

}  // namespace vdev
