// The argument checks and helpers of internal/op_util.h.
#include "internal/op_util.h"

#include "absl/strings/str_join.h"

namespace vdev::cuda_internal {

std::string ShapeString(const Shape& shape) { return absl::StrCat("[", absl::StrJoin(shape, ","), "]"); }

Shape Strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

absl::Status CheckArity(absl::string_view op, const KernelCall& call, int inputs, int outputs) {
  if (inputs >= 0 ? static_cast<int>(call.inputs.size()) != inputs : call.inputs.empty())
    return Invalid(op, "takes ", inputs >= 0 ? absl::StrCat(inputs) : "at least 1", " inputs, not ", call.inputs.size());
  if (outputs >= 0 ? static_cast<int>(call.outputs.size()) != outputs : call.outputs.empty())
    return Invalid(op, "has ", outputs >= 0 ? absl::StrCat(outputs) : "at least 1", " outputs, not ",
                   call.outputs.size());
  return absl::OkStatus();
}

absl::Status CheckDType(absl::string_view op, const TensorRef& t, ir::DType want, absl::string_view what) {
  if (t.dtype == want) return absl::OkStatus();
  return Invalid(op, what, " has dtype ", ir::DTypeName(t.dtype), ", not ", ir::DTypeName(want));
}

absl::Status CheckShape(absl::string_view op, const TensorRef& t, const Shape& want, absl::string_view what) {
  if (t.shape == want) return absl::OkStatus();
  return Invalid(op, what, " has shape ", ShapeString(t.shape), ", not ", ShapeString(want));
}

absl::StatusOr<cuda_ops::Elem> ElemOf(absl::string_view op, ir::DType dtype, bool integers) {
  switch (dtype) {
    case ir::DType::kF32: return cuda_ops::Elem::kF32;
    case ir::DType::kF16: return cuda_ops::Elem::kF16;
    case ir::DType::kBF16: return cuda_ops::Elem::kBF16;
    case ir::DType::kI32:
      if (integers) return cuda_ops::Elem::kI32;
      break;
    case ir::DType::kI64:
      if (integers) return cuda_ops::Elem::kI64;
      break;
    default: break;
  }
  return Invalid(op, "dtype ", ir::DTypeName(dtype), " is not supported (f32, f16, bf16", integers ? ", i32, i64" : "",
                 ")");
}

absl::StatusOr<int64_t> NormalizeAxis(absl::string_view op, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return Invalid(op, "axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

const KernelAttrs& AttrsOf(const KernelCall& call) {
  static const KernelAttrs* const kNone = new KernelAttrs();
  return call.attrs != nullptr ? *call.attrs : *kNone;
}

cudaStream_t StreamOf(const KernelCall& call) {
  return call.context != nullptr ? static_cast<cudaStream_t>(call.context->stream) : nullptr;
}

absl::StatusOr<CudaKernelBackend*> BackendOf(absl::string_view op, const KernelCall& call) {
  if (call.context == nullptr || call.context->backend == nullptr)
    return Invalid(op, "the kernel context has no CUDA backend");
  return static_cast<CudaKernelBackend*>(call.context->backend);
}

absl::Status Launched(absl::string_view op, cudaError_t e) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op, " (cuda): launch failed: ", cudaGetErrorString(e)));
}

void Add(KernelRegistry& registry, absl::string_view op, KernelFn fn) {
  (void)registry.Register(op, DeviceType::kCUDA, fn);  // AlreadyExists: keep the kernel registered first
}

}  // namespace vdev::cuda_internal
