// cuBLASLt, loaded on first use. cublaslt_loader.cc defines the cuBLASLt functions vdev calls as
// forwarders to libcublasLt.so, which it dlopens the first time one is called: linking the library
// would run its static initialisers (about 0.65 s and 200 MB) in every program that links the
// kernels, GPU or not. When the library cannot be loaded the forwarders return
// CUBLAS_STATUS_NOT_INITIALIZED and LoadCublasLt says why.
#ifndef VDEV_SRC_KERNELS_CUDA_INTERNAL_CUBLASLT_LOADER_H_
#define VDEV_SRC_KERNELS_CUDA_INTERNAL_CUBLASLT_LOADER_H_

#include "absl/status/status.h"

namespace vdev::cuda_ops {

// Loads cuBLASLt if it is not yet loaded; OK once its every function vdev uses was found.
absl::Status LoadCublasLt();

}  // namespace vdev::cuda_ops

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_CUBLASLT_LOADER_H_
