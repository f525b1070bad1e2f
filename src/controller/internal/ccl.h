// The collectives a controller session's workers set up with InitCCL: their vdev::PeerGroup, IPC
// allocator and an all-reduce of host tensors, on the host or (CUDA builds) on the GPUs.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_CCL_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_CCL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vdev/kernels/tensor.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

namespace vdev {
class CudaCommunicator;
}  // namespace vdev

namespace vdev::internal {

struct CclRequest {
  std::string kind;  // "host", "vdev" or "nccl"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int device = -1;  // CUDA kinds
  std::string rendezvous_dir;
  std::string session_id;
  absl::Duration timeout;
};

// Members are destroyed bottom-up: the all-reduce (it holds workspace), the communicator, the
// allocator, and the session they all use last.
struct CclState {
  std::string kind;
  int device = -1;
  std::unique_ptr<PeerGroup> session;
  std::unique_ptr<IPCAllocator> allocator;
  std::shared_ptr<CudaCommunicator> communicator;
  // Sum over all workers of `in` (same dtype and shape everywhere) into `*out`.
  std::function<absl::Status(const HostTensor& in, HostTensor* out)> all_reduce;
};

// Collective: every worker calls it with the same kind, directory and id.
absl::StatusOr<std::unique_ptr<CclState>> CreateCcl(const CclRequest& request);

// True in builds with the CUDA runtime (vdev::runtime_cuda).
bool CudaCclBuilt();

// The CUDA kinds; defined in cuda_ccl.cc (CUDA builds) or below them as Unimplemented.
absl::Status AddCudaCcl(const CclRequest& request, CclState* state);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_CCL_H_
