// Which ops a program compiled to run may call.
#ifndef VDEV_SRC_EXECUTOR_KNOWN_OPS_H_
#define VDEV_SRC_EXECUTOR_KNOWN_OPS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"

namespace vdev::internal {

// The verifier accepts any op name (the text's op set is open, docs/spec/ir-text.md); a program
// that is to run may only call ops of ir::OpRegistry::Global(), ops with a kernel on some device
// type, and the executor's own. The first other call is an error located in `source` (or naming
// its binding, for a built module) with the closest known name when one is near.
absl::Status CheckKnownOps(const ir::Module& module, absl::string_view file, absl::string_view source);

// ` (did you mean 'matmul'?)` for an op name one edit or so away from a known op; empty otherwise.
std::string DidYouMean(absl::string_view op);

}  // namespace vdev::internal

#endif  // VDEV_SRC_EXECUTOR_KNOWN_OPS_H_
