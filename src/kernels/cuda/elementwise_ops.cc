// The CUDA op wrappers of the element-wise and row-wise ops: argument checks, then one launch of
// src/kernels/cuda/{elementwise,norm}.cu. Broadcast shapes are reduced (size-1 dims dropped,
// adjacent dims that index both operands alike merged) before the launch.
#include <string>

#include "internal/op_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::cuda_internal {
namespace {

using cuda_ops::Binary;
using cuda_ops::Unary;

// The strided view of `out = a op b` under NumPy broadcasting; nullopt when a and b are both dense
// and of out's element count (the packed fast path).
}  // namespace

absl::StatusOr<std::optional<cuda_ops::Strided>> BroadcastOf(const KernelOp& op, const TensorRef& out,
                                                             const TensorRef& a, const TensorRef& b) {
  const int rank = static_cast<int>(out.shape.size());
  if (static_cast<int>(a.shape.size()) > rank || static_cast<int>(b.shape.size()) > rank)
    return Invalid(op, "operands ", ShapeString(a.shape), " and ", ShapeString(b.shape), " do not broadcast to ",
                   ShapeString(out.shape));
  if (a.shape == out.shape && b.shape == out.shape) return std::nullopt;
  std::vector<int64_t> dims, sa, sb;
  const Shape a_strides = Strides(a.shape), b_strides = Strides(b.shape);
  for (int d = 0; d < rank; ++d) {
    const int da = d - (rank - static_cast<int>(a.shape.size())), db = d - (rank - static_cast<int>(b.shape.size()));
    const int64_t extent_a = da >= 0 ? a.shape[da] : 1, extent_b = db >= 0 ? b.shape[db] : 1;
    if ((extent_a != 1 && extent_a != out.shape[d]) || (extent_b != 1 && extent_b != out.shape[d]))
      return Invalid(op, "operands ", ShapeString(a.shape), " and ", ShapeString(b.shape), " do not broadcast to ",
                     ShapeString(out.shape));
    if (out.shape[d] == 1) continue;
    const int64_t stride_a = extent_a == 1 ? 0 : a_strides[da], stride_b = extent_b == 1 ? 0 : b_strides[db];
    if (!dims.empty() && sa.back() == stride_a * out.shape[d] && sb.back() == stride_b * out.shape[d]) {
      dims.back() *= out.shape[d];
      sa.back() = stride_a;
      sb.back() = stride_b;
      continue;
    }
    dims.push_back(out.shape[d]);
    sa.push_back(stride_a);
    sb.push_back(stride_b);
  }
  if (dims.size() <= 1 && (dims.empty() || (sa[0] == 1 && sb[0] == 1))) return std::nullopt;
  if (dims.size() > static_cast<size_t>(cuda_ops::kMaxRank))
    return Invalid(op, "broadcasting over more than ", cuda_ops::kMaxRank, " separate dims is not supported");
  cuda_ops::Strided s;
  s.rank = static_cast<int>(dims.size());
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d] = dims[d];
    s.a_strides[d] = sa[d];
    s.b_strides[d] = sb[d];
  }
  return s;
}

namespace {

template <Binary kOp>
absl::Status BinaryOp(absl::string_view name, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 2, 1));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, b, a.dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, a.dtype, "the output"));
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ArithmeticElemOf(op, a.dtype));
  VDEV_ASSIGN_OR_RETURN(std::optional<cuda_ops::Strided> shape, BroadcastOf(op, out, a, b));
  return Launched(op, cuda_ops::LaunchBinary(kOp, t, a.data, b.data, out.data, out.NumElements(),
                                             shape ? &*shape : nullptr, StreamOf(call)));
}

absl::Status UnaryOp(absl::string_view name, Unary kind, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_RETURN_IF_ERROR(kernels_internal::CheckUnary(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype));
  return Launched(op, cuda_ops::LaunchUnary(kind, t, x.data, out.data, x.NumElements(), StreamOf(call)));
}

absl::Status Gelu(const KernelCall& call) {
  std::optional<std::string> approximate = AttrsOf(call).Text("approximate");
  if (!approximate || *approximate == "none") return UnaryOp("gelu", Unary::kGeluErf, call);
  if (*approximate == "tanh") return UnaryOp("gelu", Unary::kGeluTanh, call);
  return Invalid(KernelOp::Cuda("gelu"), "approximate must be \"none\" or \"tanh\", not \"", *approximate, "\"");
}

absl::Status SiluMul(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("silu_mul");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::Rows shape, kernels_internal::CheckSiluMul(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype));
  return Launched(op, cuda_ops::LaunchSiluMul(t, x.data, out.data, shape.rows, shape.len, StreamOf(call)));
}

absl::Status Cast(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("cast");
  VDEV_RETURN_IF_ERROR(kernels_internal::CheckCast(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem from, ArithmeticElemOf(op, x.dtype));
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem to, ArithmeticElemOf(op, out.dtype));
  return Launched(op, cuda_ops::LaunchCast(from, to, x.data, out.data, x.NumElements(), StreamOf(call)));
}

absl::Status Softmax(absl::string_view name, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_ASSIGN_OR_RETURN(AroundAxis view, kernels_internal::CheckSoftmax(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype));
  return Launched(op,
                  cuda_ops::LaunchSoftmax(t, x.data, out.data, view.outer, view.extent, view.inner, StreamOf(call)));
}

template <bool kRms>
absl::Status Norm(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda(kRms ? "rms_norm" : "layer_norm");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::NormRows norm, kernels_internal::CheckNorm(op, call, kRms));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, x.dtype));
  return Launched(op, cuda_ops::LaunchNorm(t, x.data, call.inputs[1].data, kRms ? nullptr : call.inputs[2].data,
                                           out.data, norm.rows, norm.len, norm.epsilon, StreamOf(call)));
}

absl::Status AddRmsNorm(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("vdev.add_rms_norm");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::NormRows norm, kernels_internal::CheckAddRmsNorm(op, call));
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, call.inputs[0].dtype));
  return Launched(op, cuda_ops::LaunchAddRmsNorm(t, call.inputs[0].data, call.inputs[1].data, call.inputs[2].data,
                                                 call.outputs[0].data, call.outputs[1].data, norm.rows, norm.len,
                                                 norm.epsilon, StreamOf(call)));
}

}  // namespace

void RegisterElementwiseOps(KernelRegistry& r) {
  Add(r, "add", [](const KernelCall& c) { return BinaryOp<Binary::kAdd>("add", c); });
  Add(r, "subtract", [](const KernelCall& c) { return BinaryOp<Binary::kSubtract>("subtract", c); });
  Add(r, "multiply", [](const KernelCall& c) { return BinaryOp<Binary::kMultiply>("multiply", c); });
  Add(r, "divide", [](const KernelCall& c) { return BinaryOp<Binary::kDivide>("divide", c); });
  Add(r, "power", [](const KernelCall& c) { return BinaryOp<Binary::kPower>("power", c); });
  Add(r, "maximum", [](const KernelCall& c) { return BinaryOp<Binary::kMaximum>("maximum", c); });
  Add(r, "minimum", [](const KernelCall& c) { return BinaryOp<Binary::kMinimum>("minimum", c); });
  Add(r, "log", [](const KernelCall& c) { return UnaryOp("log", Unary::kLog, c); });
  Add(r, "erf", [](const KernelCall& c) { return UnaryOp("erf", Unary::kErf, c); });
  Add(r, "abs", [](const KernelCall& c) { return UnaryOp("abs", Unary::kAbs, c); });
  Add(r, "reciprocal", [](const KernelCall& c) { return UnaryOp("reciprocal", Unary::kReciprocal, c); });
  Add(r, "relu", [](const KernelCall& c) { return UnaryOp("relu", Unary::kRelu, c); });
  Add(r, "nn.relu", [](const KernelCall& c) { return UnaryOp("nn.relu", Unary::kRelu, c); });
  Add(r, "gelu", Gelu);
  Add(r, "silu", [](const KernelCall& c) { return UnaryOp("silu", Unary::kSilu, c); });
  Add(r, "exp", [](const KernelCall& c) { return UnaryOp("exp", Unary::kExp, c); });
  Add(r, "tanh", [](const KernelCall& c) { return UnaryOp("tanh", Unary::kTanh, c); });
  Add(r, "sigmoid", [](const KernelCall& c) { return UnaryOp("sigmoid", Unary::kSigmoid, c); });
  Add(r, "negative", [](const KernelCall& c) { return UnaryOp("negative", Unary::kNegative, c); });
  Add(r, "sqrt", [](const KernelCall& c) { return UnaryOp("sqrt", Unary::kSqrt, c); });
  Add(r, "rsqrt", [](const KernelCall& c) { return UnaryOp("rsqrt", Unary::kRsqrt, c); });
  Add(r, "silu_mul", SiluMul);
  Add(r, "cast", Cast);
  Add(r, "softmax", [](const KernelCall& c) { return Softmax("softmax", c); });
  Add(r, "nn.softmax", [](const KernelCall& c) { return Softmax("nn.softmax", c); });
  Add(r, "layer_norm", Norm<false>);
  Add(r, "rms_norm", Norm<true>);
  Add(r, "vdev.add_rms_norm", AddRmsNorm);
}

}  // namespace vdev::cuda_internal
