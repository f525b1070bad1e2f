// `vdev machine probe [--out M.json] [--gpus N] [--repetitions K]`: measures this machine
// (vdev/executor/machine_probe.h) and writes docs/machine.md's JSON, for `vdev plan --optimize --machine`
// and `vdev run --optimize --machine`. A summary of what was measured goes to standard error.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "commands.h"
#include "vdev/executor/machine_probe.h"
#include "vdev/planner/machine.h"

namespace vdev::cli {
namespace {

struct ProbeArgs {
  std::string out;
  int gpus = -1;  // -1: every visible GPU
  int repetitions = 3;
};

void PrintSummary(const Machine& m) {
  for (size_t d = 0; d < m.devices.size(); ++d) {
    const DeviceSpec& s = m.specs[d];
    std::string rates;
    for (const auto& [dtype, rate] : s.flops)
      absl::StrAppendFormat(&rates, " %s %.3g", ir::DTypeName(dtype), rate / 1e12);
    std::string kinds;  // per kind: op by op / replayed
    for (const auto& [kind, seconds] : s.kind_kernel_seconds) {
      auto replayed = s.kind_graph_kernel_seconds.find(kind);
      absl::StrAppendFormat(&kinds, " %s %.3g/%.3g", KernelKindName(kind), seconds * 1e6,
                            replayed == s.kind_graph_kernel_seconds.end() ? 0.0 : replayed->second * 1e6);
    }
    std::string ramps;  // per kind: bytes, op by op / replayed
    for (const auto& [kind, r] : s.kind_ramp) {
      absl::StrAppendFormat(&ramps, " %s %.3g B %.3g/%.3g", KernelKindName(kind), r.bytes, r.seconds * 1e6,
                            r.graph_seconds * 1e6);
    }
    std::cerr << absl::StrFormat(
        "vdev machine probe: %s: %.3g GB, %.4g GB/s, TFLOP/s:%s, per op %.3g us (%.3g us replayed), by kind "
        "us (op by op/replayed):%s, if %.3g us, host copy %.3g us%s\n",
        m.devices[d].ToString(), s.memory_bytes / 1e9, s.bandwidth / 1e9, rates, s.kernel_seconds * 1e6,
        s.graph_kernel_seconds * 1e6, kinds, s.if_seconds * 1e6, s.host_copy_seconds * 1e6,
        ramps.empty() ? "" : absl::StrCat(", ramp us (op by op/replayed):", ramps));
  }
  std::cerr << absl::StrFormat("vdev machine probe: per run %.3g us (%.3g us on the CPU alone), per call %.3g us\n",
                               m.run_seconds * 1e6, RunSeconds(m, /*uses_gpu=*/false) * 1e6, m.call_seconds * 1e6);
  for (size_t a = 0; a < m.devices.size(); ++a) {
    for (size_t b = a + 1; b < m.devices.size(); ++b) {
      const LinkSpec& l = m.Link(a, b);
      std::cerr << absl::StrFormat(
          "vdev machine probe: %s <-> %s: %.4g GB/s, %.3g us%s\n", m.devices[a].ToString(), m.devices[b].ToString(),
          l.bandwidth / 1e9, l.latency * 1e6,
          l.graph_latency ? absl::StrFormat(" (%.3g us in a graph)", *l.graph_latency * 1e6) : std::string());
    }
  }
}

int RunProbe(const ProbeArgs& args) {
  ProbeOptions options;
  if (args.gpus >= 0) options.gpus = args.gpus;
  options.repetitions = args.repetitions;
  absl::StatusOr<Machine> machine = ProbeMachine(options);
  if (!machine.ok()) {
    std::cerr << "vdev " << machine.status().message() << "\n";
    return absl::IsInvalidArgument(machine.status()) ? kExitUsage : kExitNegative;
  }
  PrintSummary(*machine);
  const std::string json = MachineJson(*machine);
  if (args.out.empty()) {
    std::cout << json;
    return kExitOk;
  }
  std::ofstream out(args.out);
  out << json;
  out.close();
  if (!out) {
    std::cerr << "vdev machine probe: cannot write " << args.out << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

void AddMachineCommands(CLI::App& app, int* exit_code) {
  CLI::App* machine = app.add_subcommand("machine", "Machine descriptions for the optimiser (docs/machine.md)");
  machine->require_subcommand(1);
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* probe = machine->add_subcommand(
      "probe", "Measure this machine (CPU and, where built with CUDA, every GPU and link) and write its JSON");
  probe->add_option("--out", args->out, "write the JSON to FILE (default: standard output)");
  probe
      ->add_option("--gpus", args->gpus,
                   "measure cuda:0..N-1 (an error if one cannot be reached); default: all visible")
      ->check(CLI::Range(0, kMaxMachineDevices - 1));
  probe->add_option("--repetitions", args->repetitions, "timed runs of each measurement, the best kept (default 3)")
      ->check(CLI::Range(1, 100));
  probe->callback([args, exit_code] { *exit_code = RunProbe(*args); });
}

}  // namespace vdev::cli
