// Failure handling of the GPU benchmark binaries: a failed CUDA call or Status ends the process
// with exit status 1 and a message naming it, since a benchmark has nothing to recover.
#ifndef VDEV_BENCH_BENCH_EXIT_H_
#define VDEV_BENCH_BENCH_EXIT_H_

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"

#define CUDA_OK(expr)                                                                             \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

namespace vdev::bench {

// Exits with status 1, printing `what` and the status, unless `s` is OK.
inline void Ok(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace vdev::bench

#endif  // VDEV_BENCH_BENCH_EXIT_H_
