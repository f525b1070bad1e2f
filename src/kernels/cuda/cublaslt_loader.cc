// The cuBLASLt functions of backend.cc, forwarded to libcublasLt.so loaded on first use
// (internal/cublaslt_loader.h). Their declarations come from cublasLt.h, so a signature that
// drifted from the library's would not compile.
#include "internal/cublaslt_loader.h"

#include <cublasLt.h>

#include "absl/strings/str_cat.h"
#include "dynload/dynamic_library.h"

namespace vdev::cuda_ops {
namespace {

// X(name) for every cuBLASLt function vdev calls.
// clang-format off: one function per line
#define VDEV_CUBLASLT_FUNCTIONS(X)        \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)
// clang-format on

struct CublasLt {
#define VDEV_POINTER(name) decltype(&::name) name = nullptr;
  VDEV_CUBLASLT_FUNCTIONS(VDEV_POINTER)
#undef VDEV_POINTER
  absl::Status status;
};

const CublasLt& Library() {
  static const CublasLt* const library = [] {
    auto* lt = new CublasLt;
    dynload::DynamicLibrary so =
        dynload::DynamicLibrary::Open(absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR), VDEV_CUDA_LIBRARY_DIR);
#define VDEV_FIND(name) so.Find(#name, lt->name);
    VDEV_CUBLASLT_FUNCTIONS(VDEV_FIND)
#undef VDEV_FIND
    lt->status = so.status();
    return lt;
  }();
  return *library;
}

}  // namespace

absl::Status LoadCublasLt() { return Library().status; }

}  // namespace vdev::cuda_ops

// The forwarders: each calls the library's function once it is loaded.
#define VDEV_FORWARD(name, params, args)                                  \
  cublasStatus_t CUBLASWINAPI name params {                               \
    const vdev::cuda_ops::CublasLt& lt = vdev::cuda_ops::Library();       \
    return lt.status.ok() ? lt.name args : CUBLAS_STATUS_NOT_INITIALIZED; \
  }

extern "C" {
VDEV_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
VDEV_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
VDEV_FORWARD(cublasLtMatmul,
             (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
              cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
              const void* c, cublasLtMatrixLayout_t c_desc, void* d, cublasLtMatrixLayout_t d_desc,
              const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes, cudaStream_t stream),
             (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_bytes,
              stream))
VDEV_FORWARD(cublasLtMatmulAlgoGetHeuristic,
             (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
              cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
              cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
              int* returned),
             (handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned))
VDEV_FORWARD(cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
             (desc, compute, scale))
VDEV_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
VDEV_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * preference), (preference))
VDEV_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t preference), (preference))
VDEV_FORWARD(cublasLtMatmulPreferenceSetAttribute,
             (cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
              size_t bytes),
             (preference, attr, buf, bytes))
VDEV_FORWARD(cublasLtMatrixLayoutCreate,
             (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
             (layout, type, rows, cols, ld))
VDEV_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
VDEV_FORWARD(cublasLtMatrixLayoutSetAttribute,
             (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t bytes),
             (layout, attr, buf, bytes))
}
