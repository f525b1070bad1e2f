// The CUDA op wrappers of the layout ops (transpose, concatenate/concat, split, take) and of
// attention: argument checks as the CPU kernels make them, then launches of layout.cu and
// attention.cu. Layout ops move bytes, so they take any dtype.
#include "internal/op_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::cuda_internal {
namespace {

absl::Status Transpose(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("transpose");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::Permutation p, kernels_internal::CheckTranspose(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const int rank = static_cast<int>(p.shape.size());
  if (rank > cuda_ops::kMaxRank) return Invalid(op, "rank ", rank, " is over ", cuda_ops::kMaxRank);
  return Launched(op, cuda_ops::LaunchPermute(static_cast<int>(DTypeBytes(x.dtype)), x.data, out.data, rank,
                                              p.shape.data(), p.in_strides.data(), StreamOf(call)));
}

// Launches one row copy per piece of `whole` along `axis` (checked), into the whole (concatenate)
// or out of it (split).
absl::Status MovePieces(const KernelOp& op, const KernelCall& call, const TensorRef& whole,
                        absl::Span<const TensorRef> pieces, int64_t axis, bool into_whole) {
  const AroundAxis view = ViewAround(whole.shape, axis, static_cast<int64_t>(DTypeBytes(whole.dtype)));
  const int64_t whole_pitch = view.extent * view.inner;
  int64_t offset = 0;
  for (const TensorRef& p : pieces) {
    const int64_t bytes = p.shape[axis] * view.inner;
    char* at = static_cast<char*>(whole.data) + offset;
    VDEV_RETURN_IF_ERROR(Launched(
        op, into_whole ? cuda_ops::LaunchCopyRows(p.data, bytes, at, whole_pitch, view.outer, bytes, StreamOf(call))
                       : cuda_ops::LaunchCopyRows(at, whole_pitch, p.data, bytes, view.outer, bytes, StreamOf(call))));
    offset += bytes;
  }
  return absl::OkStatus();
}

absl::Status Concatenate(absl::string_view name, const KernelCall& call) {
  const KernelOp op = KernelOp::Cuda(name);
  VDEV_ASSIGN_OR_RETURN(int64_t axis, kernels_internal::CheckConcatenate(op, call));
  return MovePieces(op, call, call.outputs[0], call.inputs, axis, /*into_whole=*/true);
}

absl::Status Split(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("split");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, kernels_internal::CheckSplit(op, call));
  return MovePieces(op, call, call.inputs[0], call.outputs, axis, /*into_whole=*/false);
}

absl::Status Take(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("take");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, kernels_internal::CheckTake(op, call));
  const TensorRef &table = call.inputs[0], &indices = call.inputs[1], &out = call.outputs[0];
  VDEV_ASSIGN_OR_RETURN(CudaKernelBackend * backend, BackendOf(op, call));
  const AroundAxis view = ViewAround(table.shape, axis, static_cast<int64_t>(DTypeBytes(table.dtype)));
  return Launched(op, cuda_ops::LaunchTake(table.data, indices.data, indices.dtype == ir::DType::kI64, out.data,
                                           view.outer, view.extent, indices.NumElements(), view.inner,
                                           static_cast<cuda_ops::DeviceError*>(backend->error_word()), StreamOf(call)));
}

absl::Status Attention(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cuda("attention");
  VDEV_ASSIGN_OR_RETURN(kernels_internal::AttentionShape shape, kernels_internal::CheckAttention(op, call));
  const TensorRef &qkv = call.inputs[0], &out = call.outputs[0];
  if (shape.head_dim > cuda_ops::kMaxHeadDim)
    return Invalid(op, "head size ", shape.head_dim, " is over ", cuda_ops::kMaxHeadDim);
  VDEV_ASSIGN_OR_RETURN(cuda_ops::Elem t, ElemOf(op, qkv.dtype));
  return Launched(op, cuda_ops::LaunchAttention(t, qkv.data, out.data, shape.tokens, shape.heads, shape.head_dim,
                                                shape.causal, StreamOf(call)));
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
