// CreateCudaBackend when vdev is built without the CUDA runtime.
#include "prepared_op.h"
#include "vdev/executor/executor.h"

namespace vdev {

namespace {

absl::Status NotBuilt() {
  return absl::UnimplementedError(
      "this vdev was built without the CUDA runtime (see BUILD_NOTES.md); use --backend host");
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(PeerGroup*, int, const CudaBackendOptions&) {
  return NotBuilt();
}

bool HasCudaBackend() { return false; }

int VisibleCudaDevices() { return 0; }

absl::Status internal::PrepareCudaBackend() { return NotBuilt(); }

}  // namespace vdev
