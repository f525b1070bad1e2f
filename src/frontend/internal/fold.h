// Constant folding at import: the shape computations of an exported graph (Shape → Gather →
// Unsqueeze → Concat → Reshape, ConstantOfShape → Expand, …) run here on host tensors, so the
// module gets static shapes. Values are computed in double, or exactly in int64 for integer
// dtypes (indices and shapes need all 64 bits).
#ifndef VDEV_SRC_FRONTEND_INTERNAL_FOLD_H_
#define VDEV_SRC_FRONTEND_INTERNAL_FOLD_H_

#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "internal/graph.h"

namespace vdev::frontend::internal {

// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Dims> BroadcastDims(const Dims& a, const Dims& b);

// The flat index into a tensor of shape `in` (broadcast to `out`) of output element `o`.
int64_t BroadcastIndex(const Dims& out, const Dims& in, int64_t o);

struct ElementwiseFn {
  std::function<double(absl::Span<const double>)> real;
  std::function<int64_t(absl::Span<const int64_t>)> integer;  // empty: compute integers in double too
};

// out[i] = fn(inputs broadcast to their common shape); the result has dtype `dtype`. nullopt when
// the shapes do not broadcast.
std::optional<HostTensor> FoldElementwise(absl::Span<const HostTensor* const> inputs, ir::DType dtype,
                                          const ElementwiseFn& fn);

// `t` with its data unchanged and shape `dims` (Reshape, Squeeze, Unsqueeze, Flatten).
HostTensor WithShape(const HostTensor& t, const Dims& dims);
// `t` broadcast to `dims`.
HostTensor BroadcastTo(const HostTensor& t, const Dims& dims);
// out[o] = t[index(o)] for every element of a tensor of shape `dims` (Gather, Slice, Concat).
HostTensor Remap(const HostTensor& t, const Dims& dims, const std::function<int64_t(const Dims& index)>& index);
// `t` converted to `dtype` (integers exactly, floats through double).
HostTensor Convert(const HostTensor& t, ir::DType dtype);

int64_t NumElements(const Dims& dims);

}  // namespace vdev::frontend::internal

#endif  // VDEV_SRC_FRONTEND_INTERNAL_FOLD_H_
