// IR helpers of the memory passes; see ir_walk.h.
#include "ir_walk.h"

namespace vdev {

std::vector<ir::Operand> NestedLocalOperands(const ir::Module& m, const ir::Expr& expr) {
  std::vector<ir::Operand> out;
  std::vector<ir::BlockId> stack;
  auto push_blocks = [&](const ir::Expr& e) {
    if (e.kind == ir::ExprKind::kIf) {
      stack.push_back(e.then_block);
      stack.push_back(e.else_block);
    } else if (e.kind == ir::ExprKind::kFn && m.functions[e.func].body != ir::kNoBlock) {
      stack.push_back(m.functions[e.func].body);
    }
  };
  push_blocks(expr);
  while (!stack.empty()) {
    const ir::Block& block = m.blocks[stack.back()];
    stack.pop_back();
    for (ir::BindingId inner : block.bindings) {
      const ir::Expr& e = m.bindings[inner].expr;
      ir::ForEachLocalRead(m, e, [&](const ir::Operand& o) { out.push_back(o); });
      push_blocks(e);
    }
    if (block.result.is_local()) out.push_back(block.result);
  }
  return out;
}

std::optional<int64_t> TensorBytes(const ir::TypeTable& types, ir::TypeId type, bool* overflow) {
  if (overflow != nullptr) *overflow = false;
  if (type == ir::kNoType || types.kind(type) != ir::TypeKind::kTensor) return std::nullopt;
  int64_t bytes = DTypeBytes(types.node(type).dtype);
  bool wrapped = false;
  for (int64_t dim : types.dims(type)) {
    if (dim == ir::kDynamicDim) return std::nullopt;
    wrapped |= __builtin_mul_overflow(bytes, dim, &bytes);
  }
  if (!wrapped) return bytes;
  if (overflow != nullptr) *overflow = true;
  return std::nullopt;
}

}  // namespace vdev
