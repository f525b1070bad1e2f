// ProbeMachine (vdev/executor/machine_probe.h): the CPU measured with vdev's own CPU kernels (a matmul per
// dtype, an elementwise add for memory bandwidth); the GPUs by machine_probe_cuda.cc where built;
// every device's fixed time per kind of op, its waits on the host, and on GPUs each kind's ramp and
// the copies between GPUs inside a graph, through vdev's executor (chains of small ops).
#include "vdev/executor/machine_probe.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
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

// The op a probe chains for each kind of kernel, `$` its previous value.
const char* ChainOp(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMatmul: return "matmul($, %w)";
    case KernelKind::kNorm: return "rms_norm($, %g)";
    case KernelKind::kElementwise: return "add($, %a)";
  }
  return "add($, %a)";
}

// The shapes of the probe's programs.
enum class ChainForm {
  kReplayed,     // straight-line: captured as a CUDA graph and replayed on a GPU
  kOpByOp,       // inside both arms of one `if`, which the executor never captures
  kIfs,          // every op in the arms of its own `if` on %c: each reads its condition back
  kAlternating,  // ops pinned to another device and this one in turn: each op's value is copied
  kCalls,        // as kOpByOp, each op in a call of a global function of its own (@step)
};

// The f32 values a chain's ops take and give, [rows, cols] (a matmul's weight [cols, cols]).
// kSmall: the smallest operands whose kernels are the kind's usual ones (not a one-element special
// case), for the fixed time; kMedium: a small-batch layer's (the decoder and heterogeneous
// examples': 16-32 tokens, hidden 256-512), for how the time grows (KernelRamp).
struct ChainShape {
  int rows, cols;
};
constexpr ChainShape kSmall{8, 8}, kMedium{32, 512};

// What one op of `kind` reads and writes at `shape`.
double ChainOpBytes(KernelKind kind, ChainShape shape) {
  const double value = 4.0 * shape.rows * shape.cols;
  switch (kind) {
    case KernelKind::kMatmul: return 2 * value + 4.0 * shape.cols * shape.cols;
    case KernelKind::kNorm: return 2 * value + 4.0 * shape.cols;
    case KernelKind::kElementwise: return 3 * value;
  }
  return 3 * value;
}

// A chain of `ops` ops of `kind` on `device` (the config's default) in `form`; kAlternating puts
// every other op on `other`.
std::string OpChain(const std::string& device, int ops, ChainForm form, KernelKind kind, ChainShape shape = kSmall,
                    const std::string& other = "cpu:0") {
  auto step = [kind, form](const std::string& prev) {
    return form == ChainForm::kCalls ? absl::StrCat("@step(", prev, ", %a, %g, %w)")
                                     : absl::StrReplaceAll(ChainOp(kind), {{"$", prev}});
  };
  auto chain = [&](const char* name) {
    std::string text;
    for (int i = 0; i < ops; ++i) {
      const std::string prev = i == 0 ? "%a" : absl::StrCat("%", name, i - 1);
      if (form == ChainForm::kIfs) {  // both arms run an op of the kind, so either arm costs the same
        absl::StrAppend(&text, "  %", name, i, " = if %c {\n    %t", i, " = ", step(prev), "\n    return %t", i,
                        "\n  } else {\n    %f", i, " = ", step(prev), "\n    return %f", i, "\n  }\n");
      } else if (form == ChainForm::kAlternating) {  // each op pinned; `other`'s read %b, an input there
        const bool away = i % 2 == 0;
        absl::StrAppend(&text, "  %h", i, " = ", away ? absl::StrReplaceAll(step(prev), {{"%a", "%b"}}) : step(prev),
                        "\n  %", name, i, " = on_device(%h", i, ", ", away ? other : device, ")\n");
      } else {
        absl::StrAppend(&text, "  %", name, i, " = ", step(prev), "\n");
      }
    }
    return absl::StrCat(text, "  return %", name, ops - 1, "\n");
  };
  const bool in_if = form == ChainForm::kOpByOp || form == ChainForm::kCalls;
  const bool condition = in_if || form == ChainForm::kIfs;
  const std::string value = absl::StrCat("f32[", shape.rows, ",", shape.cols, "]");
  const std::string params =
      absl::StrCat("%a: ", value, ", %g: f32[", shape.cols, "], %w: f32[", shape.cols, ",", shape.cols, "]");
  // @step takes what a chain's op reads, and runs the op on the previous value %p.
  const std::string callee =
      form != ChainForm::kCalls
          ? ""
          : absl::StrCat("def @step(%p: ", value, ", ", params, ") -> ", value,
                         " {\n  %s = ", absl::StrReplaceAll(ChainOp(kind), {{"$", "%p"}}), "\n  return %s\n}\n");
  const std::string head = absl::StrCat(
      "config { targets = [llvm, cuda], default = ", device, ", host = cpu:0 }\n", callee, "def @main(", params,
      condition ? ", %c: bool[]" : "", form == ChainForm::kAlternating ? ", %b: " + value : "", ") -> ", value, " {\n");
  if (!in_if) return absl::StrCat(head, chain("x"), "}\n");
  return absl::StrCat(head, "  %r = if %c {\n", chain("x"), "  } else {\n", chain("y"), "  }\n  return %r\n}\n");
}

// The executor's fixed times on `device`: chains of kLongChain and kShortChain ops differ by their
// difference in ops (the time per op); the short chain, less its ops, is what every run pays once
// (enqueueing, waiting). Runs are short, so 10 times the repetitions are timed.
constexpr int kLongChain = 64, kShortChain = 4;
struct FixedTimes {
  double per_op = 0;
  double per_run = 0;
};
absl::StatusOr<FixedTimes> ProbeFixedTimes(ExecutionBackend* backend, const std::string& device, ChainForm form,
                                           KernelKind kind, int repetitions, ChainShape shape = kSmall,
                                           const std::string& other = "cpu:0") {
  VDEV_ASSIGN_OR_RETURN(
      double many, BestRunSeconds(OpChain(device, kLongChain, form, kind, shape, other), backend, 10 * repetitions));
  VDEV_ASSIGN_OR_RETURN(
      double few, BestRunSeconds(OpChain(device, kShortChain, form, kind, shape, other), backend, 10 * repetitions));
  FixedTimes t;
  t.per_op = std::max(0.0, (many - few) / (kLongChain - kShortChain));
  t.per_run = std::max(0.0, few - kShortChain * t.per_op);
  return t;
}

// Each kind's per-op time in `form` into `by_kind`; `kernel_seconds`, for what has no kind of its
// own (and readers of the per-device number alone), their mean; the elementwise chain's per-run time.
absl::StatusOr<double> ProbeKinds(ExecutionBackend* backend, const std::string& device, ChainForm form, int repetitions,
                                  std::map<KernelKind, double>* by_kind, double* kernel_seconds) {
  double sum = 0, per_run = 0;
  for (KernelKind kind : kKernelKinds) {
    VDEV_ASSIGN_OR_RETURN(FixedTimes t, ProbeFixedTimes(backend, device, form, kind, repetitions));
    (*by_kind)[kind] = t.per_op;
    sum += t.per_op;
    if (kind == KernelKind::kElementwise) per_run = t.per_run;
  }
  *kernel_seconds = sum / std::size(kKernelKinds);
  return per_run;
}

// What an `if` whose condition is on `device` waits for: a chain of `if`s, each with an elementwise
// op in both arms, less that op's time op by op.
absl::Status ProbeIfWait(ExecutionBackend* backend, const std::string& device, int repetitions, DeviceSpec* spec) {
  VDEV_ASSIGN_OR_RETURN(FixedTimes t,
                        ProbeFixedTimes(backend, device, ChainForm::kIfs, KernelKind::kElementwise, repetitions));
  spec->if_seconds = std::max(0.0, t.per_op - spec->kind_kernel_seconds.at(KernelKind::kElementwise));
  return absl::OkStatus();
}

// What a call of a global function costs op by op, over the ops it runs: a chain of calls, each
// of a function holding one elementwise op, less that op's time op by op.
absl::StatusOr<double> ProbeCallTime(ExecutionBackend* backend, const std::string& device, int repetitions,
                                     const DeviceSpec& spec) {
  VDEV_ASSIGN_OR_RETURN(FixedTimes t,
                        ProbeFixedTimes(backend, device, ChainForm::kCalls, KernelKind::kElementwise, repetitions));
  return std::max(0.0, t.per_op - spec.kind_kernel_seconds.at(KernelKind::kElementwise));
}

// What a run pays once (`host_run` where its ops all run on the CPU) and per call of a function,
// through the backend that measured them.
struct RunTimes {
  double run = 0;
  double host_run = 0;
  double call = 0;
};

constexpr char kCpuConfig[] = "config { targets = [llvm], default = cpu:0, host = cpu:0 }\n";

// `with_call`: also a call's time, which only a machine without GPUs takes from the CPU (else cuda:0's).
absl::StatusOr<DeviceSpec> ProbeCpu(int repetitions, bool with_call, RunTimes* times) {
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
  VDEV_ASSIGN_OR_RETURN(double per_run, ProbeKinds(backend.get(), "cpu:0", ChainForm::kReplayed, repetitions,
                                                   &spec.kind_kernel_seconds, &spec.kernel_seconds));
  // CPU ops are never replayed: the straight-line chain runs op by op, and its times are both.
  spec.graph_kernel_seconds = spec.kernel_seconds;
  spec.kind_graph_kernel_seconds = spec.kind_kernel_seconds;
  VDEV_RETURN_IF_ERROR(ProbeIfWait(backend.get(), "cpu:0", repetitions, &spec));
  times->run = times->host_run = per_run;
  if (with_call) {
    VDEV_ASSIGN_OR_RETURN(times->call, ProbeCallTime(backend.get(), "cpu:0", repetitions, spec));
  }
  return spec;
}

#ifdef VDEV_PROBE_CUDA
// How much longer than its fixed time each kind's op takes at kMedium, op by op and replayed.
absl::Status ProbeRamps(ExecutionBackend* backend, const std::string& device, int repetitions, DeviceSpec* spec) {
  for (KernelKind kind : kKernelKinds) {
    VDEV_ASSIGN_OR_RETURN(FixedTimes op_by_op,
                          ProbeFixedTimes(backend, device, ChainForm::kOpByOp, kind, repetitions, kMedium));
    VDEV_ASSIGN_OR_RETURN(FixedTimes replayed,
                          ProbeFixedTimes(backend, device, ChainForm::kReplayed, kind, repetitions, kMedium));
    spec->kind_ramp[kind] = {
        .bytes = ChainOpBytes(kind, kMedium),
        .seconds = std::max(0.0, op_by_op.per_op - spec->kind_kernel_seconds.at(kind)),
        .graph_seconds = std::max(0.0, replayed.per_op - spec->kind_graph_kernel_seconds.at(kind)),
    };
  }
  return absl::OkStatus();
}

// A copy between cuda:`from` and cuda:`to` inside a replayed graph: a chain of adds alternating
// between them pays per op an add (its replayed fixed time) and a copy (`link`'s bandwidth and the
// latency wanted).
absl::Status ProbeGraphCopy(int from, int to, int repetitions, double add_seconds, LinkSpec* link) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateCudaBackend(nullptr, std::max(from, to) + 1));
  VDEV_ASSIGN_OR_RETURN(FixedTimes alternating,
                        ProbeFixedTimes(backend.get(), absl::StrCat("cuda:", to), ChainForm::kAlternating,
                                        KernelKind::kElementwise, repetitions, kSmall, absl::StrCat("cuda:", from)));
  link->graph_latency = std::max(0.0, alternating.per_op - add_seconds - 8 * 8 * 4 / link->bandwidth);
  return absl::OkStatus();
}

// cuda:`gpu`'s per-op times per kind, op by op and replayed, and its waits on the host, through the
// CUDA backend (one worker: the program's cuda:`gpu` is GPU `gpu`); a replayed run's fixed time,
// and for cuda:0, whose run times are the machine's, a call's op by op and a run's whose ops all run
// on the CPU.
// A copy's wait: a chain alternating an op on the CPU (`cpu_op`) and one on the GPU pays per pair of
// ops two copies, each its link's time (`to_cpu`, 256 bytes) and the wait.
absl::Status ProbeGpuPerOp(int gpu, int repetitions, double cpu_op, const LinkSpec& to_cpu, DeviceSpec* spec,
                           RunTimes* times) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateCudaBackend(nullptr, gpu + 1));
  const std::string device = absl::StrCat("cuda:", gpu);
  VDEV_RETURN_IF_ERROR(ProbeKinds(backend.get(), device, ChainForm::kOpByOp, repetitions, &spec->kind_kernel_seconds,
                                  &spec->kernel_seconds)
                           .status());
  VDEV_ASSIGN_OR_RETURN(times->run, ProbeKinds(backend.get(), device, ChainForm::kReplayed, repetitions,
                                               &spec->kind_graph_kernel_seconds, &spec->graph_kernel_seconds));
  VDEV_RETURN_IF_ERROR(ProbeIfWait(backend.get(), device, repetitions, spec));
  if (gpu == 0) {
    VDEV_ASSIGN_OR_RETURN(times->call, ProbeCallTime(backend.get(), device, repetitions, *spec));
    // A run of CPU ops alone through the CUDA backend, as `vdev run --backend cuda` runs one: its
    // fixed time is the backend's, not the thread backend's.
    VDEV_ASSIGN_OR_RETURN(FixedTimes host, ProbeFixedTimes(backend.get(), "cpu:0", ChainForm::kReplayed,
                                                           KernelKind::kElementwise, repetitions));
    times->host_run = host.per_run;
  }
  VDEV_RETURN_IF_ERROR(ProbeRamps(backend.get(), device, repetitions, spec));
  VDEV_ASSIGN_OR_RETURN(FixedTimes alternating, ProbeFixedTimes(backend.get(), device, ChainForm::kAlternating,
                                                                KernelKind::kElementwise, repetitions));
  const double gpu_op = spec->kind_kernel_seconds.at(KernelKind::kElementwise);
  const double link = to_cpu.latency + 8 * 8 * 4 / to_cpu.bandwidth;
  spec->host_copy_seconds = std::max(0.0, (2 * alternating.per_op - cpu_op - gpu_op) / 2 - link);
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
  // Through the thread backend, and where there is a GPU, through cuda:0's CUDA backend: what a
  // run pays once and per call.
  RunTimes times;
  VDEV_ASSIGN_OR_RETURN(DeviceSpec cpu, ProbeCpu(std::max(1, options.repetitions), gpus == 0, &times));
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0), cpu);
#ifdef VDEV_PROBE_CUDA
  if (gpus > 0) {
    VDEV_ASSIGN_OR_RETURN(std::vector<probe_internal::GpuProbe> probed,
                          probe_internal::ProbeGpus(gpus, std::max(1, options.repetitions)));
    for (int g = 0; g < gpus; ++g) {
      RunTimes gpu;
      VDEV_RETURN_IF_ERROR(ProbeGpuPerOp(g, std::max(1, options.repetitions),
                                         cpu.kind_kernel_seconds.at(KernelKind::kElementwise), probed[g].to_cpu,
                                         &probed[g].spec, &gpu));
      if (g == 0) times = gpu;
    }
    for (int g = 0; g < gpus; ++g) {
      for (int h = g + 1; h < gpus; ++h) {
        const double add = (probed[g].spec.kind_graph_kernel_seconds.at(KernelKind::kElementwise) +
                            probed[h].spec.kind_graph_kernel_seconds.at(KernelKind::kElementwise)) /
                           2;
        VDEV_RETURN_IF_ERROR(ProbeGraphCopy(g, h, std::max(1, options.repetitions), add, &probed[g].to_gpu[h]));
      }
    }
    MakeAlikeGpusIdentical(&probed);
    for (int g = 0; g < gpus; ++g) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g), probed[g].spec);
    for (int g = 0; g < gpus; ++g) {
      b.AddLink(0, g + 1, probed[g].to_cpu);
      for (int h = g + 1; h < gpus; ++h) b.AddLink(g + 1, h + 1, probed[g].to_gpu[h]);
    }
  }
#endif
  b.SetRunSeconds(times.run).SetHostRunSeconds(times.host_run).SetCallSeconds(times.call);
  return b.Build();
}

}  // namespace vdev
