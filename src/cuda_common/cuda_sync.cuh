// The system-scope flag accesses, LL packet lines, clock and launch ordering that the all-reduce
// kernels (cuda_kernel_device.cuh) and the channel plan executor (src/channels/cuda_executor.cu)
// build on.
#ifndef VDEV_SRC_CUDA_COMMON_CUDA_SYNC_CUH_
#define VDEV_SRC_CUDA_COMMON_CUDA_SYNC_CUH_

#include <cstdint>

namespace vdev::internal {

__device__ __forceinline__ void StoreRelease(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t LoadAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// A low-latency line: 16 bytes written and read whole, two 4-byte data words each followed by the
// flag of its execution (layout {d.x, flag, d.y, flag}), so a reader that sees both flags has both
// words. Volatile: a poll must reload it.
__device__ __forceinline__ void StoreLine(char* p, uint2 d, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(flag), "r"(d.y), "r"(flag)
               : "memory");
}
__device__ __forceinline__ uint4 LoadLine(const char* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ uint64_t GlobalTimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Programmatic dependent launch: when the launch allows it, this grid starts while the previous one
// on the stream drains, and the next one may start while this one runs. Nothing is read or written
// before the previous grid has finished and flushed (`griddepcontrol.wait`); the next grid may be
// scheduled as soon as every block of this one is resident, so blocks waiting on each other across
// GPUs never wait for SM space. Both are no-ops for an ordinary launch.
__device__ __forceinline__ void FollowPreviousGrid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace vdev::internal

#endif  // VDEV_SRC_CUDA_COMMON_CUDA_SYNC_CUH_
