// The argument checks of the selection and reduction ops (internal/op_checks.h), shared by the CPU
// kernels (cpu/select.cc) and the CUDA op wrappers (cuda/select_ops.cc).
#include "internal/op_checks.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {

absl::StatusOr<std::vector<int64_t>> BroadcastStridesTo(const KernelOp& op, const Shape& out, const Shape& in) {
  if (in.size() > out.size()) return Invalid(op, ShapeString(in), " does not broadcast to ", ShapeString(out));
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    const size_t d = i + out.size() - in.size();
    if (in[i] != out[d] && in[i] != 1) return Invalid(op, ShapeString(in), " does not broadcast to ", ShapeString(out));
    strides[d] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

namespace {

absl::StatusOr<std::vector<std::vector<int64_t>>> StridesOfInputs(const KernelOp& op, const KernelCall& call) {
  std::vector<std::vector<int64_t>> strides;
  for (const TensorRef& in : call.inputs) {
    VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> s, BroadcastStridesTo(op, call.outputs[0].shape, in.shape));
    strides.push_back(std::move(s));
  }
  return strides;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int64_t>>> CheckCompare(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 2, 1));
  VDEV_RETURN_IF_ERROR(CheckDType(op, call.inputs[1], call.inputs[0].dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, call.outputs[0], ir::DType::kBool, "the output"));
  return StridesOfInputs(op, call);
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CheckWhere(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 3, 1));
  const TensorRef &c = call.inputs[0], &x = call.inputs[1], &y = call.inputs[2], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, c, ir::DType::kBool, "the condition"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, y, x.dtype, "operand 3"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  return StridesOfInputs(op, call);
}

absl::StatusOr<std::vector<int64_t>> CheckBroadcastTo(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  VDEV_RETURN_IF_ERROR(CheckDType(op, call.outputs[0], call.inputs[0].dtype, "the output"));
  return BroadcastStridesTo(op, call.outputs[0].shape, call.inputs[0].shape);
}

absl::StatusOr<SliceView> CheckStridedSlice(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  const size_t rank = x.shape.size();
  std::optional<std::vector<int64_t>> begin = AttrsOf(call).Ints("begin");
  const std::vector<int64_t> step = AttrsOf(call).Ints("strides").value_or(std::vector<int64_t>(rank, 1));
  if (!begin || begin->size() != rank || step.size() != rank || out.shape.size() != rank)
    return Invalid(op, "begin and strides need one entry per axis of ", ShapeString(x.shape));
  SliceView view{0, std::vector<int64_t>(rank)};
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t last = (*begin)[d] + (out.shape[d] - 1) * step[d];
    if (out.shape[d] > 0 && ((*begin)[d] < 0 || (*begin)[d] >= x.shape[d] || last < 0 || last >= x.shape[d]))
      return Invalid(op, "axis ", d, " reads outside [0, ", x.shape[d], ")");
    view.base += (*begin)[d] * stride;
    view.strides[d] = step[d] * stride;
    stride *= x.shape[d];
  }
  return view;
}

absl::StatusOr<std::vector<bool>> CheckReduce(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, x.dtype, /*integers=*/true));
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, !AttrsOf(call).Find("axis"));
  for (int64_t a : AttrsOf(call).Ints("axis").value_or(std::vector<int64_t>{})) {
    VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, a, rank));
    reduced[axis] = true;
  }
  int64_t kept = 1, count = 1;
  for (size_t d = 0; d < rank; ++d) (reduced[d] ? count : kept) *= x.shape[d];
  if (out.NumElements() != kept)
    return Invalid(op, "the output ", ShapeString(out.shape), " does not fit the reduction");
  if (count == 0 && (op.name() == "max" || op.name() == "min")) return Invalid(op, "reduces an empty axis");
  return reduced;
}

}  // namespace vdev::kernels_internal
