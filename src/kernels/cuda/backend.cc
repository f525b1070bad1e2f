// CudaKernelBackend: the cuBLASLt handle, workspace and matmul plans of one GPU, and the device
// error word of take(); RegisterCudaKernels.
//
// matmul is row-major: C[m,n] = A[m,k] B[k,n] is, read column-major, C^T[n,m] = B^T[n,k] A^T[k,m],
// so cuBLASLt multiplies b by a with no transposes and every leading dimension is a row length.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "internal/cublaslt_loader.h"
#include "internal/op_util.h"
#include "vdev/kernels/cuda_kernels.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

// 32 MiB: what cuBLAS itself reserves per stream on Hopper.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

absl::Status Cuda(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

absl::Status Blas(cublasStatus_t s, absl::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": cuBLASLt status ", static_cast<int>(s)));
}

// One shape's descriptors and chosen algorithm.
struct MatmulSetup {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our b), B (our a), C
  cublasLtMatmulAlgo_t algo{};

  ~MatmulSetup() {
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

using PlanKey = std::tuple<ir::DType, int64_t, int64_t, int64_t, int64_t>;  // dtype, batch, m, n, k

absl::Status Layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch,
                    int64_t stride) {
  VDEV_RETURN_IF_ERROR(Blas(cublasLtMatrixLayoutCreate(layout, type, rows, cols, rows), "cublasLtMatrixLayoutCreate"));
  if (batch == 1) return absl::OkStatus();
  const int32_t count = static_cast<int32_t>(batch);
  VDEV_RETURN_IF_ERROR(
      Blas(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
           "batch count"));
  return Blas(
      cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
      "batch stride");
}

}  // namespace

struct CudaKernelBackend::State {
  int device = 0;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  cuda_ops::DeviceError* error = nullptr;
  mutable absl::Mutex mutex;
  absl::flat_hash_map<PlanKey, std::unique_ptr<MatmulSetup>> plans ABSL_GUARDED_BY(mutex);

  absl::StatusOr<const MatmulSetup*> PlanFor(ir::DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k) {
    absl::MutexLock lock(&mutex);
    const PlanKey key{dtype, batch, m, n, k};
    if (auto it = plans.find(key); it != plans.end()) return it->second.get();
    auto plan = std::make_unique<MatmulSetup>();
    const cudaDataType_t type = dtype == ir::DType::kF32   ? CUDA_R_32F
                                : dtype == ir::DType::kF16 ? CUDA_R_16F
                                                           : CUDA_R_16BF;
    VDEV_RETURN_IF_ERROR(
        Blas(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
    VDEV_RETURN_IF_ERROR(Layout(&plan->a, type, n, k, batch, k * n));
    VDEV_RETURN_IF_ERROR(Layout(&plan->b, type, k, m, batch, m * k));
    VDEV_RETURN_IF_ERROR(Layout(&plan->c, type, n, m, batch, m * n));
    cublasLtMatmulPreference_t preference = nullptr;
    VDEV_RETURN_IF_ERROR(Blas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate"));
    const uint64_t bytes = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->a, plan->b, plan->c, plan->c,
                                                            preference, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    VDEV_RETURN_IF_ERROR(Blas(s, "cublasLtMatmulAlgoGetHeuristic"));
    if (found == 0)
      return absl::InternalError(absl::StrCat("matmul (cuda): cuBLASLt has no algorithm for ", ir::DTypeName(dtype),
                                              " batch ", batch, " m ", m, " n ", n, " k ", k));
    plan->algo = result.algo;
    return plans.emplace(key, std::move(plan)).first->second.get();
  }

  ~State() {
    {
      absl::MutexLock lock(&mutex);
      plans.clear();
    }
    if (handle != nullptr) cublasLtDestroy(handle);
    if (workspace != nullptr) cudaFree(workspace);
    if (error != nullptr) cudaFree(error);
  }
};

CudaKernelBackend::CudaKernelBackend(std::unique_ptr<State> state) : state_(std::move(state)) {}
CudaKernelBackend::~CudaKernelBackend() = default;

absl::StatusOr<std::unique_ptr<CudaKernelBackend>> CudaKernelBackend::Create(int device) {
  auto state = std::make_unique<State>();
  state->device = device;
  VDEV_RETURN_IF_ERROR(Cuda(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")")));
  VDEV_RETURN_IF_ERROR(cuda_ops::LoadCublasLt());
  VDEV_RETURN_IF_ERROR(Blas(cublasLtCreate(&state->handle), "cublasLtCreate"));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(&state->workspace, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)"));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&state->error), sizeof(cuda_ops::DeviceError)),
                            "cudaMalloc (error word)"));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(state->error, 0, sizeof(cuda_ops::DeviceError)), "cudaMemset (error word)"));
  VDEV_RETURN_IF_ERROR(Cuda(cuda_ops::Prepare(), "shared-memory limits of the CUDA kernels"));
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  RegisterCudaKernels(KernelRegistry::Global());
  return std::unique_ptr<CudaKernelBackend>(new CudaKernelBackend(std::move(state)));
}

int CudaKernelBackend::device() const { return state_->device; }
void* CudaKernelBackend::error_word() const { return state_->error; }

int64_t CudaKernelBackend::matmul_plans() const {
  absl::MutexLock lock(&state_->mutex);
  return static_cast<int64_t>(state_->plans.size());
}

absl::Status CudaKernelBackend::CheckErrors() {
  cuda_ops::DeviceError error{};
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(&error, state_->error, sizeof error, cudaMemcpyDeviceToHost), "error word"));
  if (error.flag == 0) return absl::OkStatus();
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(state_->error, 0, sizeof error), "error word"));
  return absl::InvalidArgumentError(absl::StrCat("take (cuda): index ", error.index, " (element ", error.position,
                                                 " of the indices) is out of range [0, ", error.size, ")"));
}

absl::Status CudaKernelBackend::Matmul(ir::DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m,
                                       int64_t n, int64_t k, void* stream) {
  if (dtype != ir::DType::kF32 && dtype != ir::DType::kF16 && dtype != ir::DType::kBF16)
    return absl::InvalidArgumentError(
        absl::StrCat("matmul (cuda): dtype ", ir::DTypeName(dtype), " is not supported (f32, f16, bf16)"));
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batch > INT32_MAX)
    return absl::InvalidArgumentError(absl::StrCat("matmul (cuda): a dimension is over 2^31-1"));
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (batch == 0 || m == 0 || n == 0) return absl::OkStatus();
  if (k == 0)  // an empty sum: cuBLASLt is not asked about a zero inner dimension
    return Cuda(cudaMemsetAsync(c, 0, static_cast<size_t>(batch * m * n) * DTypeBytes(dtype), s), "matmul (cuda)");
  VDEV_ASSIGN_OR_RETURN(const MatmulSetup* plan, state_->PlanFor(dtype, batch, m, n, k));
  const float alpha = 1.0f, beta = 0.0f;
  return Blas(cublasLtMatmul(state_->handle, plan->desc, &alpha, b, plan->a, a, plan->b, &beta, c, plan->c, c, plan->c,
                             &plan->algo, state_->workspace, kWorkspaceBytes, s),
              "matmul (cuda): cublasLtMatmul");
}

void RegisterCudaKernels(KernelRegistry& registry) {
  cuda_internal::RegisterElementwiseOps(registry);
  cuda_internal::RegisterLayoutOps(registry);
  cuda_internal::RegisterSelectOps(registry);
  cuda_internal::RegisterMatmulOps(registry);
}

}  // namespace vdev
