// The worker functions every controller session has ("vdev.*"; listed in docs/session.md).
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_BUILTINS_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_BUILTINS_H_

#include <functional>

#include "absl/status/status.h"
#include "vdev/controller/worker_function.h"

namespace vdev::internal {

void RegisterBuiltinWorkerFunctions(const std::function<absl::Status(absl::string_view, WorkerFunction)>& add);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_BUILTINS_H_
