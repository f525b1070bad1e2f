// The standard ops' type rules, registered by family (OpRegistry::AddStandardOps calls the Add*Ops
// below), and the operand helpers the rules share.
#ifndef VDEV_SRC_IR_INTERNAL_TYPE_RULES_H_
#define VDEV_SRC_IR_INTERNAL_TYPE_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vdev/ir/op_registry.h"

namespace vdev::ir::internal {

using Dims = std::vector<int64_t>;

bool IsTensor(const TypeTable& t, TypeId id);
// The tensor operand `i`, or an error when its type is known and not a tensor. nullopt: unknown.
absl::StatusOr<std::optional<TypeId>> TensorArg(const OpCall& c, size_t i);
// Normalises a possibly negative axis against `rank`.
absl::StatusOr<int64_t> Axis(const OpCall& c, int64_t axis, size_t rank);
// Numpy broadcasting; a dynamic dim broadcasts against 1 and is assumed equal to a static one.
absl::StatusOr<Dims> Broadcast(const OpCall& c, absl::Span<const int64_t> a, absl::Span<const int64_t> b);

// The type of a unary element-wise op: its operand's (also `allreduce`'s, a built-in op).
absl::StatusOr<TypeId> Unary(const OpCall& c);

// Registers `def`; a second registration of a name keeps the first (OpRegistry::AddStandardOps
// called twice).
void AddOp(OpRegistry& r, OpDef def);

// The standard ops by family, with their type rules: element-wise, reductions, matmul and the nn
// ops (type_rules.cc); reshape, split, concat, layout_transform, transpose, take (shape_rules.cc).
void AddElementwiseAndNnOps(OpRegistry& r);
void AddShapeOps(OpRegistry& r);
// where, broadcast_to, strided_slice, reciprocal (select_rules.cc).
void AddSelectOps(OpRegistry& r);

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_IR_INTERNAL_TYPE_RULES_H_
