// The CPU kernels of vdev/kernels/kernels.h: the reference that `vdev run --check` compares against. Each
// family lives in src/kernels/cpu/.
#include "internal/cpu_util.h"
#include "vdev/kernels/kernels.h"

namespace vdev {

void RegisterCpuKernels(KernelRegistry& registry) {
  kernels_internal::RegisterElementwiseKernels(registry);
  kernels_internal::RegisterMatmulKernels(registry);
  kernels_internal::RegisterNormKernels(registry);
  kernels_internal::RegisterLayoutKernels(registry);
  kernels_internal::RegisterAttentionKernels(registry);
  kernels_internal::RegisterSelectKernels(registry);
}

}  // namespace vdev
