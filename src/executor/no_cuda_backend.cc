// CreateCudaBackend when vdev is built without the CUDA runtime.
#include "vdev/executor.h"

namespace vdev {

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(Session*, int) {
  return absl::UnimplementedError("this vdev was built without the CUDA runtime (see BUILD_NOTES.md); use --backend host");
}

}  // namespace vdev
