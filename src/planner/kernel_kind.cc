// KernelKind (vdev/planner/machine.h): the kind of kernel an op runs, whose fixed time the machine
// file may give apart from the others.
#include <optional>

#include "absl/strings/string_view.h"
#include "vdev/planner/machine.h"

namespace vdev {

absl::string_view KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMatmul: return "matmul";
    case KernelKind::kNorm: return "norm";
    case KernelKind::kElementwise: return "elementwise";
  }
  return "elementwise";
}

std::optional<KernelKind> KernelKindFromName(absl::string_view name) {
  for (KernelKind kind : kKernelKinds) {
    if (KernelKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

KernelKind KernelKindOf(absl::string_view op) {
  // Library calls (cuBLASLt) and the attention kernel: the largest fixed times.
  static constexpr absl::string_view kMatmul[] = {"matmul",    "nn.dense", "nn.batch_matmul", "nn.matmul",
                                                  "attention", "conv2d",   "nn.conv2d"};
  // A block per row that reduces it (and, for norms, rescales it).
  static constexpr absl::string_view kNorm[] = {"rms_norm", "layer_norm", "softmax", "nn.softmax", "log_softmax",
                                                "sum",      "mean",       "max",     "min",        "prod",
                                                "argmax",   "argmin",     "topk",    "nn.topk"};
  for (absl::string_view name : kMatmul) {
    if (op == name) return KernelKind::kMatmul;
  }
  for (absl::string_view name : kNorm) {
    if (op == name) return KernelKind::kNorm;
  }
  return KernelKind::kElementwise;
}

}  // namespace vdev
