// How the placement cost model sees an op by name: the kind of kernel it runs (whose fixed time it
// pays, KernelKindOf) and how its flops follow from its shapes. One table (kernel_kind.cc) gives both,
// so a new matmul-like op is classified and counted in one place.
#ifndef VDEV_SRC_PLANNER_INTERNAL_OP_WORK_H_
#define VDEV_SRC_PLANNER_INTERNAL_OP_WORK_H_

#include "absl/strings/string_view.h"
#include "vdev/planner/machine.h"

namespace vdev::planner_internal {

enum class FlopRule {
  kNone,         // memory-bound: its bytes, not its flops, set its time
  kContraction,  // 2·out·K, K the first operand's last dimension (matmul, dense)
  kAttention,    // 4·out·S, S the first operand's third-last dimension (scores, then the weighted sum)
  kPerElement,   // a few (5) per output element: norms, softmax, transcendental activations
};

struct OpWork {
  KernelKind kind = KernelKind::kElementwise;
  FlopRule flops = FlopRule::kNone;
};

// An op vdev does not list is elementwise and memory-bound.
OpWork OpWorkOf(absl::string_view op);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_OP_WORK_H_
