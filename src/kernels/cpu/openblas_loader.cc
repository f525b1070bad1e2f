// The OpenBLAS functions of the CPU kernels, forwarded to libopenblas loaded on first use
// (internal/openblas_loader.h). Linked at start, OpenBLAS and its Fortran runtime cost every vdev
// process a few milliseconds of dynamic linking and its thread pool, though most commands (`vdev
// plan`, `vdev join`, …) never multiply a matrix. Their declarations come from OpenBLAS's cblas.h,
// so a signature that drifted from the library's would not compile.
#include "internal/openblas_loader.h"

#include <cblas.h>

#include "dynload/dynamic_library.h"

namespace vdev::kernels_internal {
namespace {

struct OpenBlas {
  decltype(&::cblas_sgemm) cblas_sgemm = nullptr;
  decltype(&::openblas_set_num_threads) openblas_set_num_threads = nullptr;
  absl::Status status;
};

const OpenBlas& Library() {
  static const OpenBlas* const library = [] {
    auto* blas = new OpenBlas;
    dynload::DynamicLibrary so = dynload::DynamicLibrary::Open("libopenblas.so.0", VDEV_OPENBLAS_LIBRARY_DIR);
    so.Find("cblas_sgemm", blas->cblas_sgemm);
    so.Find("openblas_set_num_threads", blas->openblas_set_num_threads);
    blas->status = so.status();
    return blas;
  }();
  return *library;
}

}  // namespace

absl::Status LoadOpenBlas() { return Library().status; }

}  // namespace vdev::kernels_internal

// The forwarders: each calls the library's function once it is loaded. The kernels check
// LoadOpenBlas() before they multiply, so a missing library is their error, not a skipped product.
extern "C" {
void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE trans_a,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE trans_b, OPENBLAS_CONST blasint m, OPENBLAS_CONST blasint n,
                 OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha, OPENBLAS_CONST float* a,
                 OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b, OPENBLAS_CONST blasint ldb,
                 OPENBLAS_CONST float beta, float* c, OPENBLAS_CONST blasint ldc) {
  const vdev::kernels_internal::OpenBlas& blas = vdev::kernels_internal::Library();
  if (blas.status.ok()) blas.cblas_sgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void openblas_set_num_threads(int num_threads) {
  const vdev::kernels_internal::OpenBlas& blas = vdev::kernels_internal::Library();
  if (blas.status.ok()) blas.openblas_set_num_threads(num_threads);
}
}
