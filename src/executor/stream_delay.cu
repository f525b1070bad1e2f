// The spin kernel of stream_delay.h.
#include <cstdint>

#include "stream_delay.h"

namespace vdev::internal {
namespace {

__device__ uint64_t GlobalNanoseconds() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void SpinKernel(uint64_t nanoseconds) {
  const uint64_t start = GlobalNanoseconds();
  while (GlobalNanoseconds() - start < nanoseconds) __nanosleep(1000);
}

}  // namespace

cudaError_t LaunchStreamDelay(cudaStream_t stream, int microseconds) {
  SpinKernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(microseconds) * 1000);
  return cudaGetLastError();
}

}  // namespace vdev::internal
