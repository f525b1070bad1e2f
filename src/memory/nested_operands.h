// The operands read inside a binding's nested blocks, for passes that treat an `if` or a local `fn`
// as one use of everything it reads.
#ifndef VDEV_SRC_MEMORY_NESTED_OPERANDS_H_
#define VDEV_SRC_MEMORY_NESTED_OPERANDS_H_

#include <vector>

#include "vdev/ir.h"

namespace vdev {

// Every local operand read inside the nested blocks of `expr` (the arms of an `if`, the body of a
// local `fn`, at any depth): arguments, attribute values and block results, in no particular order.
// Empty for other expressions. Iterative: nesting depth costs no stack.
std::vector<ir::Operand> NestedLocalOperands(const ir::Module& m, const ir::Expr& expr);

}  // namespace vdev

#endif  // VDEV_SRC_MEMORY_NESTED_OPERANDS_H_
