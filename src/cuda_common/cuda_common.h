// What the CUDA code of the runtime and of the libraries above it (channels, executor, controller)
// shares: a CUDA runtime call's error as a Status, and the element types the CUDA all-reduce's
// own kernels reduce. Header-only, so a library that includes it links nothing more.
#ifndef VDEV_SRC_CUDA_COMMON_CUDA_COMMON_H_
#define VDEV_SRC_CUDA_COMMON_CUDA_COMMON_H_

#include <cuda_runtime_api.h>

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/runtime/allreduce.h"

namespace vdev::internal {

// OK, or Internal "what: CUDA's message" when the call failed.
inline absl::Status CudaStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

// The all-reduce element type of a tensor dtype that CudaCommunicator's own kernels reduce (f32,
// f16, bf16); nullopt for any other.
inline std::optional<DataType> CudaKernelDataType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return DataType::kF32;
    case ir::DType::kF16: return DataType::kF16;
    case ir::DType::kBF16: return DataType::kBF16;
    default: return std::nullopt;
  }
}

}  // namespace vdev::internal

#endif  // VDEV_SRC_CUDA_COMMON_CUDA_COMMON_H_
