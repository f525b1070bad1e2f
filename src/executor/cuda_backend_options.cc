// CudaBackendOptions from the environment, and the two-argument CreateCudaBackend that uses them
// (built with or without the CUDA runtime).
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "vdev/executor/executor.h"
#include "vdev/support/status_macros.h"

namespace vdev {

absl::StatusOr<CudaBackendOptions> CudaBackendOptionsFromEnvironment() {
  CudaBackendOptions options;
  if (const char* streams = std::getenv("VDEV_CUDA_STREAMS"); streams != nullptr && *streams != 0) {
    const std::string value = streams;
    if (value == "per-gpu") {
      options.streams = CudaStreams::kPerGpu;
    } else if (value == "per-virtual-device") {
      options.streams = CudaStreams::kPerVirtualDevice;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("VDEV_CUDA_STREAMS='", value, "': expected per-gpu or per-virtual-device"));
    }
  }
  if (const char* delay = std::getenv("VDEV_CUDA_PRODUCER_DELAY_US"); delay != nullptr && *delay != 0) {
    int us = 0;
    if (!absl::SimpleAtoi(delay, &us) || us < 0 || us > 1000000)
      return absl::InvalidArgumentError(
          absl::StrCat("VDEV_CUDA_PRODUCER_DELAY_US='", delay, "': expected microseconds from 0 to 1000000"));
    options.producer_delay_us = us;
  }
  return options;
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(PeerGroup* session, int virtual_cuda_devices) {
  VDEV_ASSIGN_OR_RETURN(CudaBackendOptions options, CudaBackendOptionsFromEnvironment());
  return CreateCudaBackend(session, virtual_cuda_devices, options);
}

}  // namespace vdev
