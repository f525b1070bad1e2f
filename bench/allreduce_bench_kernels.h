// Fill and check kernels for allreduce_bench (bf16, integer-valued, exact sums).
#ifndef VDEV_BENCH_ALLREDUCE_BENCH_KERNELS_H_
#define VDEV_BENCH_ALLREDUCE_BENCH_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>

namespace vdev::bench {

void Fill(void* p, size_t n, int rank, int salt, cudaStream_t s);
// Adds to counters[0] the wrong outputs and to counters[1] the inputs that changed.
void Check(const void* in, const void* out, size_t n, int rank, int world, int salt, unsigned long long* counters,
           cudaStream_t s);

}  // namespace vdev::bench

#endif  // VDEV_BENCH_ALLREDUCE_BENCH_KERNELS_H_
