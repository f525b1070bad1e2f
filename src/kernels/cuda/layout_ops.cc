// The CUDA op wrappers of the layout ops (transpose, concatenate/concat, split, take) and of
// attention: argument checks as the CPU kernels make them, then launches of layout.cu and
// attention.cu. Layout ops move bytes, so they take any dtype.
#include <string>
#include <vector>

#include "internal/op_util.h"
#include "vdev/status_macros.h"

namespace vdev::cuda_internal {
namespace {

absl::Status Transpose(const KernelCall& call) {
  constexpr absl::string_view op = "transpose";
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  const int rank = static_cast<int>(x.shape.size());
  if (rank > cuda_ops::kMaxRank) return Invalid(op, "rank ", rank, " is over ", cuda_ops::kMaxRank);
  std::vector<int64_t> axes(rank);
  for (int i = 0; i < rank; ++i) axes[i] = rank - 1 - i;
  if (std::optional<std::vector<int64_t>> given = AttrsOf(call).Ints("axes")) axes = *given;
  if (static_cast<int>(axes.size()) != rank) return Invalid(op, "axes has ", axes.size(), " entries for rank ", rank);
  std::vector<bool> used(rank, false);
  Shape shape;
  const Shape strides = Strides(x.shape);
  int64_t in_strides[cuda_ops::kMaxRank];
  for (int i = 0; i < rank; ++i) {
    VDEV_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(op, axes[i], rank));
    if (used[a]) return Invalid(op, "axes is not a permutation");
    used[a] = true;
    shape.push_back(x.shape[a]);
    in_strides[i] = strides[a];
  }
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, shape, "the output"));
  return Launched(op, cuda_ops::LaunchPermute(static_cast<int>(DTypeBytes(x.dtype)), x.data, out.data, rank,
                                              shape.data(), in_strides, StreamOf(call)));
}

// Checks that `pieces` stack along `axis` into `whole`; launches one row copy per piece, into the
// whole (concatenate) or out of it (split).
absl::Status MovePieces(absl::string_view op, const KernelCall& call, const TensorRef& whole,
                        absl::Span<const TensorRef> pieces, int64_t axis, bool into_whole) {
  int64_t total = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const TensorRef& p = pieces[i];
    const std::string what = absl::StrCat(into_whole ? "operand " : "output ", i + 1);
    VDEV_RETURN_IF_ERROR(CheckDType(op, p, whole.dtype, what));
    Shape want = whole.shape;
    if (p.shape.size() == want.size()) want[axis] = p.shape[axis];
    VDEV_RETURN_IF_ERROR(CheckShape(op, p, want, what));
    total += p.shape[axis];
  }
  if (total != whole.shape[axis])
    return Invalid(op, "the parts' sizes along axis ", axis, " add up to ", total, ", not ", whole.shape[axis]);
  int64_t outer = 1, inner = static_cast<int64_t>(DTypeBytes(whole.dtype));
  for (int64_t d = 0; d < axis; ++d) outer *= whole.shape[d];
  for (size_t d = axis + 1; d < whole.shape.size(); ++d) inner *= whole.shape[d];
  const int64_t whole_pitch = whole.shape[axis] * inner;
  int64_t offset = 0;
  for (const TensorRef& p : pieces) {
    const int64_t bytes = p.shape[axis] * inner;
    char* at = static_cast<char*>(whole.data) + offset;
    VDEV_RETURN_IF_ERROR(Launched(op, into_whole ? cuda_ops::LaunchCopyRows(p.data, bytes, at, whole_pitch, outer,
                                                                            bytes, StreamOf(call))
                                                 : cuda_ops::LaunchCopyRows(at, whole_pitch, p.data, bytes, outer,
                                                                            bytes, StreamOf(call))));
    offset += bytes;
  }
  return absl::OkStatus();
}

absl::Status Concatenate(absl::string_view op, const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, -1, 1));
  const TensorRef& out = call.outputs[0];
  if (out.shape.empty()) return Invalid(op, "cannot concatenate 0-d tensors");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", 0), out.shape.size()));
  return MovePieces(op, call, out, call.inputs, axis, /*into_whole=*/true);
}

absl::Status Split(const KernelCall& call) {
  constexpr absl::string_view op = "split";
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, -1));
  const TensorRef& x = call.inputs[0];
  if (x.shape.empty()) return Invalid(op, "cannot split a 0-d tensor");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, AttrsOf(call).IntOr("axis", 0), x.shape.size()));
  const KernelAttr* sections = AttrsOf(call).Find("indices_or_sections");
  if (sections != nullptr && std::holds_alternative<int64_t>(*sections)) {
    const int64_t n = std::get<int64_t>(*sections);
    if (static_cast<int64_t>(call.outputs.size()) != n || n <= 0 || x.shape[axis] % n != 0)
      return Invalid(op, "an axis of ", x.shape[axis], " does not split into ", call.outputs.size(), " outputs of ",
                     n, " equal sections");
  } else if (sections != nullptr && std::holds_alternative<std::vector<int64_t>>(*sections)) {
    const std::vector<int64_t>& at = std::get<std::vector<int64_t>>(*sections);
    if (call.outputs.size() != at.size() + 1) return Invalid(op, at.size(), " indices need ", at.size() + 1, " outputs");
    int64_t start = 0;
    for (size_t i = 0; i < at.size(); ++i) {
      if (call.outputs[i].shape.size() != x.shape.size() || call.outputs[i].shape[axis] != at[i] - start)
        return Invalid(op, "output ", i + 1, " does not end at index ", at[i]);
      start = at[i];
    }
  }
  return MovePieces(op, call, x, call.outputs, axis, /*into_whole=*/false);
}

absl::Status Take(const KernelCall& call) {
  constexpr absl::string_view op = "take";
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
  VDEV_ASSIGN_OR_RETURN(CudaKernelBackend * backend, BackendOf(op, call));
  int64_t outer = 1, row_bytes = static_cast<int64_t>(DTypeBytes(table.dtype));
  for (int64_t d = 0; d < axis; ++d) outer *= table.shape[d];
  for (size_t d = axis + 1; d < table.shape.size(); ++d) row_bytes *= table.shape[d];
  return Launched(op, cuda_ops::LaunchTake(table.data, indices.data, indices.dtype == ir::DType::kI64, out.data, outer,
                                           table.shape[axis], indices.NumElements(), row_bytes,
                                           static_cast<cuda_ops::DeviceError*>(backend->error_word()),
                                           StreamOf(call)));
}

absl::Status Attention(const KernelCall& call) {
  constexpr absl::string_view op = "attention";
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &qkv = call.inputs[0], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, qkv.dtype));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, qkv.dtype, "the output"));
  if (qkv.shape.size() != 4 || qkv.shape[1] != 3)
    return Invalid(op, "qkv must have shape [T,3,H,D], not ", ShapeString(qkv.shape));
  const int64_t tokens = qkv.shape[0], heads = qkv.shape[2], d = qkv.shape[3];
  VDEV_RETURN_IF_ERROR(CheckShape(op, out, Shape{tokens, heads, d}, "the output"));
  if (d > cuda_ops::kMaxHeadDim) return Invalid(op, "head size ", d, " is over ", cuda_ops::kMaxHeadDim);
  if (qkv.NumElements() > INT32_MAX) return Invalid(op, "qkv has more than 2^31-1 elements");
  const bool causal = AttrsOf(call).BoolOr("causal", false);
  return Launched(op, cuda_ops::LaunchAttention(t, qkv.data, out.data, tokens, heads, d, causal, StreamOf(call)));
}

}  // namespace

void RegisterLayoutOps(KernelRegistry& r) {
  Add(r, "transpose", Transpose);
  Add(r, "concatenate", [](const KernelCall& c) { return Concatenate("concatenate", c); });
  Add(r, "concat", [](const KernelCall& c) { return Concatenate("concat", c); });
  Add(r, "split", Split);
  Add(r, "take", Take);
  Add(r, "attention", Attention);
}

}  // namespace vdev::cuda_internal
