// OpenBLAS, opened the first time a CPU kernel multiplies (cpu/openblas_loader.cc): the kernels
// call cblas.h's functions as usual, and check LoadOpenBlas() first so that a library that cannot be
// loaded is an error naming it.
#ifndef VDEV_SRC_KERNELS_INTERNAL_OPENBLAS_LOADER_H_
#define VDEV_SRC_KERNELS_INTERNAL_OPENBLAS_LOADER_H_

#include "absl/status/status.h"

namespace vdev::kernels_internal {

// Loads libopenblas.so.0 once (thread-safe); OK, or why it could not be loaded.
absl::Status LoadOpenBlas();

}  // namespace vdev::kernels_internal

#endif  // VDEV_SRC_KERNELS_INTERNAL_OPENBLAS_LOADER_H_
