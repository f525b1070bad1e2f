// The CUDA op wrappers of the ops the ONNX frontend maps onto: comparisons, where, broadcast_to,
// strided_slice, the reductions and log_softmax. Checks as the CPU kernels (src/kernels/cpu/select.cc)
// make them, then one launch of select.cu (or layout.cu's strided copy).
#include <cstddef>
#include <vector>

#include "internal/op_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::cuda_internal {
namespace {

// The launchers index at most kMaxRank dims.
absl::Status CheckRank(const KernelOp& op, const Shape& shape) {
  if (shape.size() > static_cast<size_t>(cuda_ops::kMaxRank)) return Invalid(op, "rank above ", cuda_ops::kMaxRank);
  return absl::OkStatus();
}

absl::Status Compare(absl::string_view name, int kind, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_RETURN_IF_ERROR(kernels_internal::CheckCompare(op, call).status());
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, a.dtype, /*integers=*/true));
  VDEV_ASSIGN_OR_RETURN(std::optional<cuda_ops::Strided> shape, BroadcastOf(op, out, a, b));
  return Launched(op, cuda_ops::LaunchCompare(kind, t, a.data, b.data, static_cast<uint8_t*>(out.data),
                                              out.NumElements(), shape ? &*shape : nullptr, StreamOf(call)));
}

absl::Status Where(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("where");
  VDEV_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> strides, kernels_internal::CheckWhere(op, call));
  const TensorRef &c = call.inputs[0], &x = call.inputs[1], &z = call.inputs[2], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckRank(op, out.shape));
  const int64_t* s[3] = {strides[0].data(), strides[1].data(), strides[2].data()};
  return Launched(op, cuda_ops::LaunchWhere(static_cast<int>(DTypeBytes(x.dtype)), static_cast<const uint8_t*>(c.data),
                                            x.data, z.data, out.data, static_cast<int>(out.shape.size()),
                                            out.shape.data(), s, StreamOf(call)));
}

// broadcast_to and strided_slice: a strided copy from `base` elements into x.
absl::Status StridedCopy(const KernelOp& op, const KernelCall& call, int64_t base,
                         const std::vector<int64_t>& strides) {
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckRank(op, out.shape));
  const int bytes = static_cast<int>(DTypeBytes(x.dtype));
  return Launched(op, cuda_ops::LaunchPermute(bytes, static_cast<const std::byte*>(x.data) + base * bytes, out.data,
                                              static_cast<int>(out.shape.size()), out.shape.data(), strides.data(),
                                              StreamOf(call)));
}

absl::Status BroadcastTo(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("broadcast_to");
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> strides, kernels_internal::CheckBroadcastTo(op, call));
  return StridedCopy(op, call, 0, strides);
}

absl::Status StridedSlice(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("strided_slice");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::SliceView view, kernels_internal::CheckStridedSlice(op, call));
  return StridedCopy(op, call, view.base, view.strides);
}

absl::Status Reduce(absl::string_view name, int kind, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_ASSIGN_OR_RETURN(std::vector<bool> reduced, kernels_internal::CheckReduce(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype, /*integers=*/true));
  VDEV_RETURN_IF_ERROR(CheckRank(op, x.shape));
  const Shape strides = Strides(x.shape);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    (reduced[d] ? red_dims : kept_dims).push_back(x.shape[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(strides[d]);
  }
  return Launched(op, cuda_ops::LaunchReduce(kind, t, x.data, out.data, static_cast<int>(kept_dims.size()),
                                             kept_dims.data(), kept_strides.data(), static_cast<int>(red_dims.size()),
                                             red_dims.data(), red_strides.data(), StreamOf(call)));
}

absl::Status LogSoftmax(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("log_softmax");
  VDEV_ASSIGN_OR_RETURN(AroundAxis view, kernels_internal::CheckSoftmax(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype));
  return Launched(op,
                  cuda_ops::LaunchLogSoftmax(t, x.data, out.data, view.outer, view.extent, view.inner, StreamOf(call)));
}

}  // namespace

void RegisterSelectOps(KernelRegistry& r) {
  Add(r, "equal", [](const KernelCall& c) { return Compare("equal", 0, c); });
  Add(r, "not_equal", [](const KernelCall& c) { return Compare("not_equal", 1, c); });
  Add(r, "less", [](const KernelCall& c) { return Compare("less", 2, c); });
  Add(r, "less_equal", [](const KernelCall& c) { return Compare("less_equal", 3, c); });
  Add(r, "greater", [](const KernelCall& c) { return Compare("greater", 4, c); });
  Add(r, "greater_equal", [](const KernelCall& c) { return Compare("greater_equal", 5, c); });
  Add(r, "where", Where);
  Add(r, "broadcast_to", BroadcastTo);
  Add(r, "strided_slice", StridedSlice);
  Add(r, "sum", [](const KernelCall& c) { return Reduce("sum", 0, c); });
  Add(r, "mean", [](const KernelCall& c) { return Reduce("mean", 1, c); });
  Add(r, "max", [](const KernelCall& c) { return Reduce("max", 2, c); });
  Add(r, "min", [](const KernelCall& c) { return Reduce("min", 3, c); });
  Add(r, "prod", [](const KernelCall& c) { return Reduce("prod", 4, c); });
  Add(r, "log_softmax", LogSoftmax);
}

}  // namespace vdev::cuda_internal
