// What run.cc and run_workers.cc share.
#ifndef VDEV_SRC_EXECUTOR_RUN_INTERNAL_H_
#define VDEV_SRC_EXECUTOR_RUN_INTERNAL_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/executor/executor.h"

namespace vdev::internal {

// Worker processes (or threads) share this host's cores: BLAS gets an equal share each.
int CpuThreadsPerWorker(int workers);

// CompileForExecution of `text` with the all-reduce strategy named `strategy` (an error names the
// choices when it is not one) and, unless `fuse_allreduce` is false, the all-reduce fusion.
absl::StatusOr<LoweredProgram> CompileWithStrategy(absl::string_view text, absl::string_view file,
                                                   absl::string_view strategy, bool fuse_allreduce = true);

}  // namespace vdev::internal

#endif  // VDEV_SRC_EXECUTOR_RUN_INTERNAL_H_
