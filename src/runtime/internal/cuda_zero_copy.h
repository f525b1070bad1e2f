// The zero-copy one-shot kernel without its exit barrier (ZeroCopyRead::kInPlaceNoExitBarrier in
// vdev/runtime/cuda_allreduce.h); the kernel with both barriers is in cuda_kernels.h.
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_ZERO_COPY_H_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_ZERO_COPY_H_

#include "internal/cuda_kernel_families.h"

namespace vdev::internal {

Kernels ZeroCopyOneShotNoExitInstances();  // cuda_flag_kernels.cu
// As LaunchZeroCopyOneShot, but a block leaves as soon as it has written its sums.
cudaError_t LaunchZeroCopyOneShotNoExit(DataType type, const KernelArgs& args, cudaStream_t stream, bool programmatic);

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_ZERO_COPY_H_
