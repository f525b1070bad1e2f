// The byte size of every type of a module, computed once per interned type.
//
// Sizes are checked where types are made (the verifier), so that every later stage — memory
// planning, the optimiser's cost model, the executor's allocations — may add and multiply byte
// counts of verified programs without overflow checks of its own: a type of 2^63 bytes or more is
// an error at the parameter, binding or result that has it.
#ifndef VDEV_SRC_IR_INTERNAL_TYPE_SIZES_H_
#define VDEV_SRC_IR_INTERNAL_TYPE_SIZES_H_

#include <cstdint>
#include <vector>

#include "vdev/ir/ir.h"

namespace vdev::ir::internal {

class TypeSizes {
 public:
  // The bytes of a value of type `t`: a tensor's elements times their size (0 when a dimension is
  // `?`), a tuple's fields summed, 0 for a function or storage type whose parts all fit; -1 when
  // that count, or the count of any part, is over 2^63-1.
  int64_t Bytes(const TypeTable& types, TypeId t);

 private:
  // A part's size; 0 for kNoType or an id not interned before the type that names it (which the
  // verifier reports on its own).
  int64_t Known(TypeId part) const { return part < bytes_.size() ? bytes_[part] : 0; }

  // By TypeId. A type's parts are interned before it, so they have smaller ids: filling the cache
  // in id order needs no recursion however deeply types nest.
  std::vector<int64_t> bytes_;
};

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_IR_INTERNAL_TYPE_SIZES_H_
