// TypeSizes (internal/type_sizes.h): byte sizes of interned types, overflow reported as -1.
#include "internal/type_sizes.h"

namespace vdev::ir::internal {
namespace {

constexpr int64_t kOverflow = -1;

int64_t Add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &sum)) return kOverflow;
  return sum;
}

int64_t TensorBytes(const TypeTable& types, TypeId t) {
  int64_t elements = 1;
  bool dynamic = false;
  for (int64_t d : types.dims(t)) {
    if (d < 0) {       // `?` (any other negative dimension is refused where it is made)
      dynamic = true;  // the known dimensions must still have a size
      continue;
    }
    if (__builtin_mul_overflow(elements, d, &elements)) return kOverflow;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(DTypeBytes(types.node(t).dtype)), &bytes)) return kOverflow;
  return dynamic ? 0 : bytes;
}

}  // namespace

int64_t TypeSizes::Bytes(const TypeTable& types, TypeId t) {
  if (t == kNoType || t >= types.size()) return 0;
  for (TypeId next = static_cast<TypeId>(bytes_.size()); next <= t; ++next) {
    int64_t bytes = 0;
    switch (types.kind(next)) {
      case TypeKind::kTensor: bytes = TensorBytes(types, next); break;
      case TypeKind::kTuple:
        for (TypeId field : types.fields(next)) bytes = Add(bytes, Known(field));
        break;
      case TypeKind::kFunc:
        for (TypeId param : types.func_params(next)) bytes = Known(param) < 0 ? kOverflow : bytes;
        if (Known(types.func_result(next)) < 0) bytes = kOverflow;
        break;
      case TypeKind::kStorage: break;
    }
    bytes_.push_back(bytes);
  }
  return bytes_[t];
}

}  // namespace vdev::ir::internal
