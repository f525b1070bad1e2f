// InitCCL("vdev" | "nccl") on a worker: CUDA IPC memory and the CUDA all-reduce (vdev's kernels,
// or NCCL only for "nccl"). Host tensors are staged through device buffers kept between calls.
// Only compiled in builds with the CUDA runtime (VDEV_HAVE_CUDA_RUNTIME).
#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "cuda_common/cuda_common.h"
#include "internal/ccl.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

absl::StatusOr<DataType> CudaDataType(ir::DType dtype) {
  if (std::optional<DataType> type = CudaKernelDataType(dtype)) return *type;
  return absl::InvalidArgumentError(
      absl::StrCat("the CUDA all-reduce takes f32, f16 and bf16, not ", ir::DTypeName(dtype)));
}

// Device staging buffers for the all-reduce's input and output, grown on demand.
struct Staging {
  void* in = nullptr;
  void* out = nullptr;
  size_t bytes = 0;
  ~Staging() {
    cudaFree(in);
    cudaFree(out);
  }
};

}  // namespace

bool CudaCclBuilt() { return true; }

absl::Status AddCudaCcl(const CclRequest& request, CclState* state) {
  if (request.kind != "vdev" && request.kind != "nccl") {
    return absl::InvalidArgumentError(absl::StrCat("unknown collective library \"", request.kind, "\""));
  }
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(request.device), absl::StrCat("cudaSetDevice(", request.device, ")")));
  state->device = request.device;
  VDEV_ASSIGN_OR_RETURN(state->allocator, CreateCudaIPCAllocator(state->session.get(), request.device));
  CudaCommunicatorOptions options;
  options.device = request.device;
  options.force_nccl = request.kind == "nccl";
  options.kernel_timeout = request.timeout;
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> communicator,
                        CudaCommunicator::Create(state->session.get(), options));
  state->communicator = std::move(communicator);
  CudaCommunicator* comm = state->communicator.get();
  auto staging = std::make_shared<Staging>();
  state->all_reduce = [comm, staging](const HostTensor& in, HostTensor* out) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(DataType type, CudaDataType(in.dtype));
    const size_t bytes = in.bytes.size();
    if (bytes > staging->bytes) {
      cudaFree(staging->in);
      cudaFree(staging->out);
      staging->in = staging->out = nullptr;
      staging->bytes = 0;
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&staging->in, bytes), "cudaMalloc"));
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&staging->out, bytes), "cudaMalloc"));
      staging->bytes = bytes;
    }
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpy(staging->in, in.bytes.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(staging->in, staging->out, static_cast<size_t>(in.NumElements()), type,
                                         AllReduceAlgorithm::kAuto, nullptr));
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpy(out->bytes.data(), staging->out, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy"));
    return comm->CheckErrors();
  };
  return absl::OkStatus();
}

}  // namespace vdev::internal
