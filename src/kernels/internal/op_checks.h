// The argument checks of the kernels, shared by the CPU kernels (src/kernels/cpu) and the CUDA op
// wrappers (src/kernels/cuda/*_ops.cc), so that both refuse the same calls in the same words before
// touching any data. Each op's check returns what its kernels compute from the checked arguments
// (an axis, the rows of a row-wise op, a permutation's strides).
#ifndef VDEV_SRC_KERNELS_INTERNAL_OP_CHECKS_H_
#define VDEV_SRC_KERNELS_INTERNAL_OP_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "vdev/kernels/kernels.h"
#include "vdev/kernels/tensor.h"

namespace vdev::kernels_internal {

// An op as its kernel's errors name it: "'add': …" from a CPU kernel, "add (cuda): …" from a CUDA
// one (the forms their callers and tests look for).
class KernelOp {
 public:
  static constexpr KernelOp Cpu(absl::string_view name) { return KernelOp(name, false); }
  static constexpr KernelOp Cuda(absl::string_view name) { return KernelOp(name, true); }

  constexpr absl::string_view name() const { return name_; }
  std::string ErrorPrefix() const { return cuda_ ? absl::StrCat(name_, " (cuda): ") : absl::StrCat("'", name_, "': "); }

 private:
  constexpr KernelOp(absl::string_view name, bool cuda) : name_(name), cuda_(cuda) {}

  absl::string_view name_;
  bool cuda_;
};

// InvalidArgument naming the op, the form every kernel error takes.
template <typename... Args>
absl::Status Invalid(const KernelOp& op, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(op.ErrorPrefix(), args...));
}

std::string ShapeString(const Shape& shape);

// InvalidArgument unless the call has `inputs` inputs and `outputs` outputs (-1: any number >= 1).
absl::Status CheckArity(const KernelOp& op, const KernelCall& call, int inputs, int outputs);
// InvalidArgument unless `tensor` has `dtype`; `what` names it ("operand 2", "the output").
absl::Status CheckDType(const KernelOp& op, const TensorRef& tensor, ir::DType dtype, absl::string_view what);
// InvalidArgument unless `tensor` has `shape`.
absl::Status CheckShape(const KernelOp& op, const TensorRef& tensor, const Shape& shape, absl::string_view what);
// InvalidArgument unless `dtype` is f32, f16 or bf16 (or, with `integers`, also i32 or i64).
absl::Status CheckNumeric(const KernelOp& op, ir::DType dtype, bool integers);
// InvalidArgument unless `dtype` is one that the element-wise arithmetic and cast kernels take:
// f32, f16, bf16, f64, i8, u8, i32 or i64.
absl::Status CheckArithmetic(const KernelOp& op, ir::DType dtype);

// The call's attributes; an empty set when it has none.
const KernelAttrs& AttrsOf(const KernelCall& call);
// Normalises a possibly negative axis against `rank`; InvalidArgument when out of range.
absl::StatusOr<int64_t> NormalizeAxis(const KernelOp& op, int64_t axis, size_t rank);

// A tensor seen around one axis: `outer` blocks of `extent` rows of `inner` units each.
struct AroundAxis {
  int64_t outer = 1, extent = 1, inner = 1;
};
// `unit`: the size of one element in the units `inner` counts (1: elements; DTypeBytes: bytes).
AroundAxis ViewAround(const Shape& shape, int64_t axis, int64_t unit = 1);

// The ops' checks, each after kernels.h's description of the op.

// transpose(x, axes=[...]): the output's shape and, per output dim, the input's stride (elements).
struct Permutation {
  Shape shape;
  std::vector<int64_t> in_strides;
};
absl::StatusOr<Permutation> CheckTranspose(const KernelOp& op, const KernelCall& call);
// concatenate(parts..., axis): the axis.
absl::StatusOr<int64_t> CheckConcatenate(const KernelOp& op, const KernelCall& call);
// split(x, indices_or_sections, axis): the axis.
absl::StatusOr<int64_t> CheckSplit(const KernelOp& op, const KernelCall& call);
// take(table, indices, axis): the axis.
absl::StatusOr<int64_t> CheckTake(const KernelOp& op, const KernelCall& call);
// cast(x, dtype): shapes and the dtype attribute (the element types are the kernel's to refuse).
absl::Status CheckCast(const KernelOp& op, const KernelCall& call);
// y = op(x) element-wise, float dtypes.
absl::Status CheckUnary(const KernelOp& op, const KernelCall& call);
// softmax(x, axis=-1), float dtypes: x around the axis.
absl::StatusOr<AroundAxis> CheckSoftmax(const KernelOp& op, const KernelCall& call);

// A row-wise op's rows: `rows` rows of `len` elements each.
struct Rows {
  int64_t rows = 0, len = 0;
};
// silu_mul(x[..., 2F]) -> [..., F], float dtypes: rows of F.
absl::StatusOr<Rows> CheckSiluMul(const KernelOp& op, const KernelCall& call);
// layer_norm(x, gamma, beta) (rms: rms_norm(x, gamma)) over the last axis, float dtypes; `epsilon`
// is the attribute or the op's default.
struct NormRows : Rows {
  float epsilon = 0;
};
absl::StatusOr<NormRows> CheckNorm(const KernelOp& op, const KernelCall& call, bool rms);

// vdev.add_rms_norm(residual, sum, gamma) -> (h, n): h = residual + sum (sum of residual's dtype and
// element count), n = rms_norm(h, gamma); h may be the sum's own memory.
absl::StatusOr<NormRows> CheckAddRmsNorm(const KernelOp& op, const KernelCall& call);

// attention(qkv[T,3,H,D], causal) -> [T,H,D], float dtypes, at most 2^31-1 elements.
struct AttentionShape {
  int64_t tokens = 0, heads = 0, head_dim = 0;
  bool causal = false;
};
absl::StatusOr<AttentionShape> CheckAttention(const KernelOp& op, const KernelCall& call);

// The checks of the ops in src/kernels/cpu/select.cc (and cuda/select_ops.cc), select_checks.cc.

// Strides (elements) of `in` broadcast (NumPy) to `out`, 0 along broadcast dims.
absl::StatusOr<std::vector<int64_t>> BroadcastStridesTo(const KernelOp& op, const Shape& out, const Shape& in);
// equal/less/…(a, b) -> bool: a and b of one dtype, the output bool; each operand's strides.
absl::StatusOr<std::vector<std::vector<int64_t>>> CheckCompare(const KernelOp& op, const KernelCall& call);
// where(cond, x, y): cond bool, x, y and the output of one dtype; each operand's strides.
absl::StatusOr<std::vector<std::vector<int64_t>>> CheckWhere(const KernelOp& op, const KernelCall& call);
// broadcast_to(x, shape): x's strides against the output.
absl::StatusOr<std::vector<int64_t>> CheckBroadcastTo(const KernelOp& op, const KernelCall& call);
// strided_slice(x, begin, strides): the first element read and each output dim's stride into x.
struct SliceView {
  int64_t base = 0;
  std::vector<int64_t> strides;
};
absl::StatusOr<SliceView> CheckStridedSlice(const KernelOp& op, const KernelCall& call);
// sum/mean/…(x, axis, keepdims): which axes of x are reduced (all without `axis`).
absl::StatusOr<std::vector<bool>> CheckReduce(const KernelOp& op, const KernelCall& call);

}  // namespace vdev::kernels_internal

#endif  // VDEV_SRC_KERNELS_INTERNAL_OP_CHECKS_H_
