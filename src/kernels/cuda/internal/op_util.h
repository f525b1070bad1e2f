// What the CUDA op wrappers share: the argument checks (those of the CPU kernels), the dtype
// mapping to cuda_ops::Elem, the stream and backend of a call, and the registration of one op.
#ifndef VDEV_SRC_KERNELS_CUDA_INTERNAL_OP_UTIL_H_
#define VDEV_SRC_KERNELS_CUDA_INTERNAL_OP_UTIL_H_

#include <cuda_runtime_api.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "internal/cuda_ops.h"
#include "src/kernels/internal/op_checks.h"
#include "vdev/kernels/cuda_kernels.h"
#include "vdev/kernels/kernels.h"

namespace vdev::cuda_internal {

// The argument checks the CPU kernels make too (src/kernels/internal/op_checks.h); a CUDA op names
// itself with KernelOp::Cuda.
using kernels_internal::AroundAxis;
using kernels_internal::AttrsOf;
using kernels_internal::CheckArity;
using kernels_internal::CheckDType;
using kernels_internal::CheckShape;
using kernels_internal::Invalid;
using kernels_internal::KernelOp;
using kernels_internal::NormalizeAxis;
using kernels_internal::ShapeString;
using kernels_internal::ViewAround;

Shape Strides(const Shape& shape);  // row-major, in elements

// f32, f16, bf16 (and i32, i64 with `integers`), else InvalidArgument naming the op.
absl::StatusOr<cuda_ops::Elem> ElemOf(const KernelOp& op, ir::DType dtype, bool integers = false);
// The dtypes of the element-wise arithmetic and cast (kernels_internal::CheckArithmetic): also f64,
// i8 and u8.
absl::StatusOr<cuda_ops::Elem> ArithmeticElemOf(const KernelOp& op, ir::DType dtype);

cudaStream_t StreamOf(const KernelCall& call);
// The call's backend; InvalidArgument when the context has none.
absl::StatusOr<CudaKernelBackend*> BackendOf(const KernelOp& op, const KernelCall& call);
// Internal naming the op when a launch failed.
absl::Status Launched(const KernelOp& op, cudaError_t e);

// Registers fn for (op, kCUDA) unless the op has a CUDA kernel already.
void Add(KernelRegistry& registry, absl::string_view op, KernelFn fn);

// The strided view of `out = a op b` under NumPy broadcasting (dims of size 1 dropped, adjacent dims
// merged); nullopt when a and b are both dense with out's element count (elementwise_ops.cc).
absl::StatusOr<std::optional<cuda_ops::Strided>> BroadcastOf(const KernelOp& op, const TensorRef& out,
                                                             const TensorRef& a, const TensorRef& b);

void RegisterElementwiseOps(KernelRegistry& registry);
void RegisterSelectOps(KernelRegistry& registry);  // select_ops.cc
void RegisterLayoutOps(KernelRegistry& registry);
void RegisterMatmulOps(KernelRegistry& registry);

}  // namespace vdev::cuda_internal

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_OP_UTIL_H_
