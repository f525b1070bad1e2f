// The all-reduce every backend falls back on: the workers' bytes over the session's channel,
// reduced in rank order on each worker (for reductions and dtypes the backend's kernels lack).
#ifndef VDEV_SRC_EXECUTOR_SESSION_REDUCE_H_
#define VDEV_SRC_EXECUTOR_SESSION_REDUCE_H_

#include "vdev/executor/executor.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::internal {

// `host_in` and `host_out` are host memory of `count` elements of `dtype`; they may be the same.
absl::Status ReduceOverSession(PeerGroup& session, const void* host_in, void* host_out, int64_t count, ir::DType dtype,
                               ReduceOp op);

}  // namespace vdev::internal

#endif  // VDEV_SRC_EXECUTOR_SESSION_REDUCE_H_
