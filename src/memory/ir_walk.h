// IR helpers shared by the memory passes: the operands read inside nested blocks (for passes that
// treat an `if` or a local `fn` as one use of everything it reads) and tensor byte sizes.
#ifndef VDEV_SRC_MEMORY_IR_WALK_H_
#define VDEV_SRC_MEMORY_IR_WALK_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "vdev/ir/ir.h"

namespace vdev {

// Every local operand read inside the nested blocks of `expr` (the arms of an `if`, the body of a
// local `fn`, at any depth): arguments, attribute values and block results, in no particular order.
// Empty for other expressions. Iterative: nesting depth costs no stack.
std::vector<ir::Operand> NestedLocalOperands(const ir::Module& m, const ir::Expr& expr);

// The byte size of a tensor type with a static shape; nullopt for other types, dynamic shapes and
// sizes past INT64_MAX (*overflow, when given, says which).
std::optional<int64_t> TensorBytes(const ir::TypeTable& types, ir::TypeId type, bool* overflow = nullptr);

}  // namespace vdev

#endif  // VDEV_SRC_MEMORY_IR_WALK_H_
