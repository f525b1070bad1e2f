// The helpers of internal/op_util.h.
#include "internal/op_util.h"

#include "vdev/support/status_macros.h"

namespace vdev::cuda_internal {

Shape Strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

namespace {

// The element type of a dtype that CheckArithmetic admitted.
cuda_ops::Elem ElemFor(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return cuda_ops::Elem::kF32;
    case ir::DType::kF16: return cuda_ops::Elem::kF16;
    case ir::DType::kBF16: return cuda_ops::Elem::kBF16;
    case ir::DType::kF64: return cuda_ops::Elem::kF64;
    case ir::DType::kI8: return cuda_ops::Elem::kI8;
    case ir::DType::kU8: return cuda_ops::Elem::kU8;
    case ir::DType::kI32: return cuda_ops::Elem::kI32;
    default: return cuda_ops::Elem::kI64;
  }
}

}  // namespace

absl::StatusOr<cuda_ops::Elem> ElemOf(const KernelOp& op, ir::DType dtype, bool integers) {
  VDEV_RETURN_IF_ERROR(kernels_internal::CheckNumeric(op, dtype, integers));
  return ElemFor(dtype);
}

absl::StatusOr<cuda_ops::Elem> ArithmeticElemOf(const KernelOp& op, ir::DType dtype) {
  VDEV_RETURN_IF_ERROR(kernels_internal::CheckArithmetic(op, dtype));
  return ElemFor(dtype);
}

cudaStream_t StreamOf(const KernelCall& call) {
  return call.context != nullptr ? static_cast<cudaStream_t>(call.context->stream) : nullptr;
}

absl::StatusOr<CudaKernelBackend*> BackendOf(const KernelOp& op, const KernelCall& call) {
  if (call.context == nullptr || call.context->backend == nullptr)
    return Invalid(op, "the kernel context has no CUDA backend");
  return static_cast<CudaKernelBackend*>(call.context->backend);
}

absl::Status Launched(const KernelOp& op, cudaError_t e) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op.ErrorPrefix(), "launch failed: ", cudaGetErrorString(e)));
}

void Add(KernelRegistry& registry, absl::string_view op, KernelFn fn) {
  (void)registry.Register(op, DeviceType::kCUDA, fn);  // AlreadyExists: keep the kernel registered first
}

}  // namespace vdev::cuda_internal
