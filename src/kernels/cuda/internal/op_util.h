// What the CUDA op wrappers share: argument checks with messages naming the op, the dtype mapping
// to cuda_ops::Elem, the stream and backend of a call, and the registration of one op.
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
#include "vdev/cuda_kernels.h"
#include "vdev/kernels.h"

namespace vdev::cuda_internal {

template <typename... Args>
absl::Status Invalid(absl::string_view op, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(op, " (cuda): ", args...));
}

std::string ShapeString(const Shape& shape);
Shape Strides(const Shape& shape);  // row-major, in elements

// `inputs` of -1: at least one.
absl::Status CheckArity(absl::string_view op, const KernelCall& call, int inputs, int outputs);
absl::Status CheckDType(absl::string_view op, const TensorRef& t, ir::DType want, absl::string_view what);
absl::Status CheckShape(absl::string_view op, const TensorRef& t, const Shape& want, absl::string_view what);
// f32, f16, bf16 (and i32, i64 with `integers`), else InvalidArgument naming the op.
absl::StatusOr<cuda_ops::Elem> ElemOf(absl::string_view op, ir::DType dtype, bool integers = false);
absl::StatusOr<int64_t> NormalizeAxis(absl::string_view op, int64_t axis, size_t rank);

const KernelAttrs& AttrsOf(const KernelCall& call);
cudaStream_t StreamOf(const KernelCall& call);
// The call's backend; InvalidArgument when the context has none.
absl::StatusOr<CudaKernelBackend*> BackendOf(absl::string_view op, const KernelCall& call);
// Internal naming the op when a launch failed.
absl::Status Launched(absl::string_view op, cudaError_t e);

// Registers fn for (op, kCUDA) unless the op has a CUDA kernel already.
void Add(KernelRegistry& registry, absl::string_view op, KernelFn fn);

void RegisterElementwiseOps(KernelRegistry& registry);
void RegisterLayoutOps(KernelRegistry& registry);
void RegisterMatmulOps(KernelRegistry& registry);

}  // namespace vdev::cuda_internal

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_OP_UTIL_H_
