// The CPU kernels of vdev/kernels.h: the reference that `vdev run --check` compares against.
#include "vdev/kernels.h"

namespace vdev {

void RegisterCpuKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace vdev
