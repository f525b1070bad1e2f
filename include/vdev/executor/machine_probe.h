// Measures this machine for the optimiser (`vdev machine probe [--out M.json]`): the CPU (its
// memory, the CPU kernels' matmul rate per dtype, memory bandwidth) and, in a build with the CUDA
// backend, every visible GPU (memory, cuBLAS matmul rate per dtype, device-to-device copy
// bandwidth), every CPU<->GPU link (pinned copies) and every GPU<->GPU link (peer copies):
// bandwidth from large copies, latency from 4-byte ones; and each device's fixed time per kind of op
// as vdev's executor runs it (op by op, and on GPUs replayed as a CUDA graph), from chains of small
// ops; on GPUs also each kind's ramp (the same chains at a small-batch layer's size) and the latency
// of a copy between two GPUs inside a replayed graph; what a run pays once (on cuda:0 where there is
// a GPU, and on the CPU alone) and a call of a function op by op.
// The result is docs/machine.md's machine;
// MachineJson (vdev/planner/machine.h) writes it.
//
// Example:
//   absl::StatusOr<Machine> m = ProbeMachine({});
//   std::cout << MachineJson(*m);
#ifndef VDEV_MACHINE_PROBE_H_
#define VDEV_MACHINE_PROBE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "vdev/planner/machine.h"

namespace vdev {

struct ProbeOptions {
  // GPUs to measure, cuda:0..gpus-1; nullopt: every visible one (none in a build without CUDA).
  std::optional<int> gpus;
  // Timed repetitions of each measurement after one untimed warm-up; the best one is kept (the
  // machine's rate, not its load's).
  int repetitions = 3;
};

// GPUs the CUDA runtime sees (0 in a build without the CUDA backend or without a driver).
int VisibleGpus();

// InvalidArgument naming the device when `gpus` asks for a GPU that cannot be reached (not
// visible, or a build without the CUDA backend); Internal for a failed CUDA call, naming it.
absl::StatusOr<Machine> ProbeMachine(const ProbeOptions& options);

}  // namespace vdev

#endif  // VDEV_MACHINE_PROBE_H_
