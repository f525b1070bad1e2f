// InitCCL's CUDA kinds in builds without the CUDA runtime: refused (the controller refuses them
// first; this keeps the worker honest if it is asked anyway).
#include "absl/strings/str_cat.h"
#include "internal/ccl.h"

namespace vdev::internal {

bool CudaCclBuilt() { return false; }

absl::Status AddCudaCcl(const CclRequest& request, CclState*) {
  return absl::UnimplementedError(
      absl::StrCat("InitCCL(\"", request.kind, "\"): this build of vdev has no CUDA runtime (nvcc and NCCL)"));
}

}  // namespace vdev::internal
