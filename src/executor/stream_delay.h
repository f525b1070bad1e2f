// A spin kernel that holds a stream for a while: CudaBackendOptions::producer_delay_us puts one
// before every piece of work, so work on another stream that is not ordered after it reads its
// results too early, every time (a missing cross-stream event becomes a wrong answer on one GPU).
#ifndef VDEV_SRC_EXECUTOR_STREAM_DELAY_H_
#define VDEV_SRC_EXECUTOR_STREAM_DELAY_H_

#include <cuda_runtime_api.h>

namespace vdev::internal {

// Enqueues on `stream` (of the current device) a one-thread kernel that returns after
// `microseconds` of the GPU's global timer; the launch's error, if any.
cudaError_t LaunchStreamDelay(cudaStream_t stream, int microseconds);

}  // namespace vdev::internal

#endif  // VDEV_SRC_EXECUTOR_STREAM_DELAY_H_
