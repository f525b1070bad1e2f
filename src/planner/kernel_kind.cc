// KernelKind (vdev/planner/machine.h): the kind of kernel an op runs, whose fixed time the machine
// file may give apart from the others, and the op table behind it (internal/op_work.h).
#include <optional>

#include "absl/strings/string_view.h"
#include "src/planner/internal/op_work.h"
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

namespace planner_internal {

OpWork OpWorkOf(absl::string_view op) {
  struct Entry {
    absl::string_view op;
    OpWork work;
  };
  using enum KernelKind;
  using enum FlopRule;
  // Matmul kind: library calls (cuBLASLt) and the attention kernel, the largest fixed times. Norm
  // kind: a block per row that reduces it (and, for norms, rescales it).
  static constexpr Entry kOps[] = {
      {"matmul", {kMatmul, kContraction}},
      {"nn.dense", {kMatmul, kContraction}},
      {"nn.matmul", {kMatmul, kContraction}},
      {"nn.batch_matmul", {kMatmul, kContraction}},
      {"attention", {kMatmul, kAttention}},
      {"conv2d", {kMatmul, kNone}},
      {"nn.conv2d", {kMatmul, kNone}},
      {"rms_norm", {kNorm, kPerElement}},
      {"layer_norm", {kNorm, kPerElement}},
      {"softmax", {kNorm, kPerElement}},
      {"nn.softmax", {kNorm, kPerElement}},
      {"log_softmax", {kNorm, kNone}},
      {"sum", {kNorm, kNone}},
      {"mean", {kNorm, kNone}},
      {"max", {kNorm, kNone}},
      {"min", {kNorm, kNone}},
      {"prod", {kNorm, kNone}},
      {"argmax", {kNorm, kNone}},
      {"argmin", {kNorm, kNone}},
      {"topk", {kNorm, kNone}},
      {"nn.topk", {kNorm, kNone}},
      {"gelu", {kElementwise, kPerElement}},
      {"silu", {kElementwise, kPerElement}},
      {"silu_mul", {kElementwise, kPerElement}},
  };
  for (const Entry& e : kOps) {
    if (e.op == op) return e.work;
  }
  return {};
}

}  // namespace planner_internal

KernelKind KernelKindOf(absl::string_view op) { return planner_internal::OpWorkOf(op).kind; }

}  // namespace vdev
