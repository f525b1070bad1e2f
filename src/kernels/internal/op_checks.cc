// The kernels' argument checks (internal/op_checks.h).
#include "internal/op_checks.h"

#include <climits>
#include <optional>
#include <variant>

#include "absl/strings/str_join.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {

std::string ShapeString(const Shape& shape) { return absl::StrCat("[", absl::StrJoin(shape, ","), "]"); }

absl::Status CheckArity(const KernelOp& op, const KernelCall& call, int inputs, int outputs) {
  auto wrong = [](size_t have, int want) { return want < 0 ? have == 0 : have != static_cast<size_t>(want); };
  if (wrong(call.inputs.size(), inputs))
    return Invalid(op, "takes ", inputs < 0 ? "at least 1" : absl::StrCat(inputs), " input(s), not ",
                   call.inputs.size());
  if (wrong(call.outputs.size(), outputs))
    return Invalid(op, "writes ", outputs < 0 ? "at least 1" : absl::StrCat(outputs), " output(s), not ",
                   call.outputs.size());
  return absl::OkStatus();
}

absl::Status CheckDType(const KernelOp& op, const TensorRef& tensor, ir::DType dtype, absl::string_view what) {
  if (tensor.dtype == dtype) return absl::OkStatus();
  return Invalid(op, what, " has dtype ", ir::DTypeName(tensor.dtype), ", expected ", ir::DTypeName(dtype));
}

absl::Status CheckShape(const KernelOp& op, const TensorRef& tensor, const Shape& shape, absl::string_view what) {
  if (tensor.shape == shape) return absl::OkStatus();
  return Invalid(op, what, " has shape ", ShapeString(tensor.shape), ", expected ", ShapeString(shape));
}

absl::Status CheckNumeric(const KernelOp& op, ir::DType dtype, bool integers) {
  switch (dtype) {
    case ir::DType::kF32:
    case ir::DType::kF16:
    case ir::DType::kBF16: return absl::OkStatus();
    case ir::DType::kI32:
    case ir::DType::kI64:
      if (integers) return absl::OkStatus();
      break;
    default: break;
  }
  return Invalid(op, "dtype ", ir::DTypeName(dtype), " is not supported (f32, f16, bf16", integers ? ", i32, i64" : "",
                 ")");
}

absl::Status CheckArithmetic(const KernelOp& op, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF64:
    case ir::DType::kI8:
    case ir::DType::kU8: return absl::OkStatus();
    default: break;
  }
  if (CheckNumeric(op, dtype, /*integers=*/true).ok()) return absl::OkStatus();
  return Invalid(op, "dtype ", ir::DTypeName(dtype), " is not supported (f32, f16, bf16, f64, i8, u8, i32, i64)");
}

const KernelAttrs& AttrsOf(const KernelCall& call) {
  static const KernelAttrs* empty = new KernelAttrs();
  return call.attrs != nullptr ? *call.attrs : *empty;
}

absl::StatusOr<int64_t> NormalizeAxis(const KernelOp& op, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return Invalid(op, "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

AroundAxis ViewAround(const Shape& shape, int64_t axis, int64_t unit) {
  AroundAxis view{.extent = shape[axis], .inner = unit};
  for (int64_t d = 0; d < axis; ++d) view.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) view.inner *= shape[d];
  return view;
}

absl::StatusOr<Permutation> CheckTranspose(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  const size_t rank = x.shape.size();
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = AttrsOf(call).Ints("axes")) {
    axes = *given;
  } else {
    for (size_t i = rank; i-- > 0;) axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.size() != rank) return Invalid(op, "axes has ", axes.size(), " entries for rank ", rank);
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
  Permutation p;
  for (size_t i = 0; i < rank; ++i) {
    VDEV_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(op, axes[i], rank));
    if (seen[a]) return Invalid(op, "axes is not a permutation: ", axes[i], " repeats");
    seen[a] = true;
    p.shape.push_back(x.shape[a]);
    p.in_strides.push_back(strides[a]);
  }
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, p.shape, "the output"));
  return p;
}

namespace {

// Checks that `pieces` joined along `axis` make `whole` (same dtype and rank, other dims equal).
absl::Status CheckPieces(const KernelOp& op, const TensorRef& whole, absl::Span<const TensorRef> pieces, int64_t axis,
                         absl::string_view piece_name) {
  int64_t extent = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const TensorRef& p = pieces[i];
    const std::string what = absl::StrCat(piece_name, " ", i + 1);
    VDEV_RETURN_IF_ERROR(CheckDType(op, p, whole.dtype, what));
    Shape expected = whole.shape;
    if (p.shape.size() == expected.size()) expected[axis] = p.shape[axis];
    VDEV_RETURN_IF_ERROR(CheckShape(op, p, expected, what));
    extent += p.shape[axis];
  }
  if (extent != whole.shape[axis])
    return Invalid(op, "the parts' sizes along axis ", axis, " add up to ", extent, ", not ", whole.shape[axis]);
  return absl::OkStatus();
}

// The outputs of split(x) against its indices_or_sections attribute, when it is given.
absl::Status CheckSections(const KernelOp& op, const KernelCall& call, int64_t axis) {
  const TensorRef& x = call.inputs[0];
  const KernelAttr* sections = AttrsOf(call).Find("indices_or_sections");
  if (sections != nullptr && std::holds_alternative<int64_t>(*sections)) {
    const int64_t n = std::get<int64_t>(*sections);
    if (static_cast<int64_t>(call.outputs.size()) != n || x.shape[axis] % n != 0)
      return Invalid(op, "an axis of ", x.shape[axis], " does not split into ", call.outputs.size(), " outputs of ", n,
                     " equal sections");
    for (const TensorRef& p : call.outputs)
      if (p.shape[axis] != x.shape[axis] / n) return Invalid(op, "the sections are not equal");
  } else if (sections != nullptr && std::holds_alternative<std::vector<int64_t>>(*sections)) {
    const std::vector<int64_t>& at = std::get<std::vector<int64_t>>(*sections);
    if (call.outputs.size() != at.size() + 1)
      return Invalid(op, at.size(), " indices need ", at.size() + 1, " outputs");
    int64_t start = 0;
    for (size_t i = 0; i < at.size(); ++i) {
      if (call.outputs[i].shape[axis] != at[i] - start)
        return Invalid(op, "output ", i + 1, " does not end at index ", at[i]);
      start = at[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> CheckConcatenate(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, -1, 1));
  const TensorRef& out = call.outputs[0];
  if (out.shape.empty()) return Invalid(op, "cannot concatenate 0-d tensors");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", 0), out.shape.size()));
  VDEV_RETURN_IF_ERROR(CheckPieces(op, out, call.inputs, axis, "operand"));
  return axis;
}

absl::StatusOr<int64_t> CheckSplit(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, -1));
  const TensorRef& x = call.inputs[0];
  if (x.shape.empty()) return Invalid(op, "cannot split a 0-d tensor");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", 0), x.shape.size()));
  VDEV_RETURN_IF_ERROR(CheckPieces(op, x, call.outputs, axis, "output"));
  VDEV_RETURN_IF_ERROR(CheckSections(op, call, axis));
  return axis;
}

absl::StatusOr<int64_t> CheckTake(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 2, 1));
  const TensorRef &table = call.inputs[0], &indices = call.inputs[1], &out = call.outputs[0];
  if (indices.dtype != ir::DType::kI32 && indices.dtype != ir::DType::kI64)
    return Invalid(op, "indices must be i32 or i64, not ", ir::DTypeName(indices.dtype));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, table.dtype, "the output"));
  if (table.shape.empty()) return Invalid(op, "cannot take from a 0-d table");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", 0), table.shape.size()));
  Shape shape(table.shape.begin(), table.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), table.shape.begin() + axis + 1, table.shape.end());
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, shape, "the output"));
  return axis;
}

absl::Status CheckCast(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, x.shape, "the output"));
  if (std::optional<std::string> name = AttrsOf(call).Text("dtype"); name && *name != ir::DTypeName(out.dtype))
    return Invalid(op, "dtype=", *name, " but the output has dtype ", ir::DTypeName(out.dtype));
  return absl::OkStatus();
}

absl::Status CheckUnary(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, x.shape, "the output"));
  return CheckNumeric(op, x.dtype, /*integers=*/false);
}

absl::StatusOr<AroundAxis> CheckSoftmax(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckUnary(op, call));
  const TensorRef& x = call.inputs[0];
  if (x.shape.empty()) return Invalid(op, "needs a tensor of rank >= 1");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", -1), x.shape.size()));
  return ViewAround(x.shape, axis);
}

absl::StatusOr<Rows> CheckSiluMul(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  if (x.shape.empty() || x.shape.back() % 2 != 0)
    return Invalid(op, "the last axis must have an even size, not shape ", ShapeString(x.shape));
  Shape shape = x.shape;
  const int64_t f = shape.back() / 2;
  shape.back() = f;
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, shape, "the output"));
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, x.dtype, /*integers=*/false));
  return Rows{.rows = f == 0 ? 0 : out.NumElements() / f, .len = f};
}

absl::StatusOr<NormRows> CheckNorm(const KernelOp& op, const KernelCall& call, bool rms) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, rms ? 2 : 3, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, x.shape, "the output"));
  if (x.shape.empty()) return Invalid(op, "needs a tensor of rank >= 1");
  const int64_t len = x.shape.back();
  for (size_t i = 1; i < call.inputs.size(); ++i) {
    const absl::string_view what = i == 1 ? "gamma" : "beta";
    VDEV_RETURN_IF_ERROR(CheckDType(op, call.inputs[i], x.dtype, what));
    VDEV_RETURN_IF_ERROR(CheckShape(op, call.inputs[i], Shape{len}, what));
  }
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, x.dtype, /*integers=*/false));
  NormRows norm;
  norm.rows = len == 0 ? 0 : x.NumElements() / len;
  norm.len = len;
  norm.epsilon = static_cast<float>(AttrsOf(call).FloatOr("epsilon", rms ? 1e-6 : 1e-5));
  return norm;
}

absl::StatusOr<NormRows> CheckAddRmsNorm(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 3, 2));
  const TensorRef &residual = call.inputs[0], &sum = call.inputs[1];
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, residual.dtype, /*integers=*/false));
  if (residual.shape.empty()) return Invalid(op, "needs a residual of rank >= 1");
  VDEV_RETURN_IF_ERROR(CheckDType(op, sum, residual.dtype, "the sum"));
  if (sum.NumElements() != residual.NumElements())
    return Invalid(op, "the sum has ", sum.NumElements(), " elements, the residual ", residual.NumElements());
  const int64_t len = residual.shape.back();
  VDEV_RETURN_IF_ERROR(CheckDType(op, call.inputs[2], residual.dtype, "gamma"));
  VDEV_RETURN_IF_ERROR(CheckShape(op, call.inputs[2], Shape{len}, "gamma"));
  for (const TensorRef& out : call.outputs) {
    VDEV_RETURN_IF_ERROR(CheckDType(op, out, residual.dtype, "an output"));
    VDEV_RETURN_IF_ERROR(CheckShape(op, out, residual.shape, "an output"));
  }
  NormRows norm;
  norm.rows = len == 0 ? 0 : residual.NumElements() / len;
  norm.len = len;
  norm.epsilon = static_cast<float>(AttrsOf(call).FloatOr("epsilon", 1e-6));
  return norm;
}

absl::StatusOr<AttentionShape> CheckAttention(const KernelOp& op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &qkv = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, qkv.dtype, /*integers=*/false));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, qkv.dtype, "the output"));
  if (qkv.shape.size() != 4 || qkv.shape[1] != 3)
    return Invalid(op, "qkv must have shape [T,3,H,D], not ", ShapeString(qkv.shape));
  const AttentionShape a{.tokens = qkv.shape[0],
                         .heads = qkv.shape[2],
                         .head_dim = qkv.shape[3],
                         .causal = AttrsOf(call).BoolOr("causal", false)};
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, Shape{a.tokens, a.heads, a.head_dim}, "the output"));
  if (qkv.NumElements() > INT32_MAX) return Invalid(op, "qkv has more than 2^31-1 elements");
  return a;
}

}  // namespace vdev::kernels_internal
