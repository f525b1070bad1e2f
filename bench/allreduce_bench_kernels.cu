// Fill and check kernels for allreduce_bench: integer-valued bf16 inputs whose sums are exact.
#include <cuda_bf16.h>

#include "allreduce_bench_kernels.h"

namespace vdev::bench {
namespace {

// Worker r's element i: an integer in 0..16, so a sum over 8 workers (<= 128) is exact in bf16.
__device__ __forceinline__ int Value(size_t i, int rank, int salt) {
  return static_cast<int>((i * 7 + rank * 3 + salt) % 17);
}

__global__ void FillKernel(__nv_bfloat16* p, size_t n, int rank, int salt) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = __int2bfloat16_rn(Value(i, rank, salt));
  }
}

__global__ void CheckKernel(const __nv_bfloat16* in, const __nv_bfloat16* out, size_t n, int rank, int world, int salt,
                            unsigned long long* bad_out, unsigned long long* bad_in) {
  unsigned long long bo = 0, bi = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int want = 0;
    for (int r = 0; r < world; ++r) want += Value(i, r, salt);
    if (__bfloat162float(out[i]) != static_cast<float>(want)) ++bo;
    if (in != out && __bfloat162float(in[i]) != static_cast<float>(Value(i, rank, salt))) ++bi;
  }
  if (bo) atomicAdd(bad_out, bo);
  if (bi) atomicAdd(bad_in, bi);
}

}  // namespace

void Fill(void* p, size_t n, int rank, int salt, cudaStream_t s) {
  FillKernel<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, rank, salt);
}

void Check(const void* in, const void* out, size_t n, int rank, int world, int salt, unsigned long long* counters,
           cudaStream_t s) {
  CheckKernel<<<1024, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(in), static_cast<const __nv_bfloat16*>(out), n,
                                   rank, world, salt, counters, counters + 1);
}

}  // namespace vdev::bench
