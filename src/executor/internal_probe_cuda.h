// The CUDA part of ProbeMachine (machine_probe_cuda.cc, built with the CUDA backend only).
#ifndef VDEV_SRC_EXECUTOR_INTERNAL_PROBE_CUDA_H_
#define VDEV_SRC_EXECUTOR_INTERNAL_PROBE_CUDA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/planner/machine.h"

namespace vdev::probe_internal {

struct GpuProbe {
  std::string name;  // the CUDA device name ("NVIDIA H100 80GB HBM3")
  DeviceSpec spec;
  LinkSpec to_cpu;
  std::vector<LinkSpec> to_gpu;  // by GPU (the entry for itself unused)
};

// GPUs visible to the CUDA runtime.
absl::StatusOr<int> VisibleGpus();
// Measures cuda:0..gpus-1 and their links.
absl::StatusOr<std::vector<GpuProbe>> ProbeGpus(int gpus, int repetitions);

}  // namespace vdev::probe_internal

#endif  // VDEV_SRC_EXECUTOR_INTERNAL_PROBE_CUDA_H_
