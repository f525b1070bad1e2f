// The plan kernel's view of one op and of its own block (cuda_executor.cu): ops resolved for this
// block, their operands in one execution, and the block's failure and timeout state. Device code,
// included by cuda_executor.cu and by compiled plans (internal/compiled_plan.h).
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_BLOCK_CUH_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_BLOCK_CUH_

#include <cuda_runtime.h>

#include "cuda_common/cuda_elem.cuh"
#include "cuda_common/cuda_sync.cuh"
#include "internal/cuda_plan_args.h"

namespace vdev::channels::internal {

// The runtime's device helpers that the plan kernel's block state and steps (cuda_plan_steps.cuh)
// build on, shared with the hand-written all-reduce kernels.
using ::vdev::internal::AddPack;
using ::vdev::internal::Elem;
using ::vdev::internal::GlobalTimer;
using ::vdev::internal::kPer;
using ::vdev::internal::LoadAcquire;
using ::vdev::internal::LoadLine;
using ::vdev::internal::StartSums;
using ::vdev::internal::StoreLine;
using ::vdev::internal::ToPack;

__device__ __forceinline__ uint64_t LoadRelaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// A maximum, not a store: signals of one semaphore that run in parallel (a batch) may land in any order.
__device__ __forceinline__ void RaiseRelease(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.global.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void RaiseRelaxed(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.sys.global.max.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The operands of one op in this execution: its resolved pointers with the scratch half applied.
template <int S>
struct Operands {
  char* dst;
  const char* src[S];
  uint64_t bytes;
  int nsrcs;
  unsigned packets;
  int peer;

  __device__ Operands(const ResolvedOp<S>& op, uint64_t shift) {
    const unsigned scratch = op.scratch;
    dst = op.dst + ((scratch & 1) ? shift : 0);
#pragma unroll
    for (int j = 0; j < S; ++j) src[j] = op.src[j] + ((scratch >> (j + 1) & 1) ? shift : 0);
    bytes = op.bytes;
    nsrcs = op.nsrcs;
    packets = op.packets;
    peer = op.peer;
  }
};

// What one block needs while it runs.
struct Block {
  const PlanLaunchArgs& a;
  uint32_t flag;
  mutable uint64_t start;  // %globaltimer at the first check of a timeout (0: none yet)
  int tb;
  int op;
  int* failed;                   // shared: some thread of this block gave up (read while polling)
  mutable bool gave_up = false;  // this thread knows the block gave up: it skips the remaining ops

  // Records the first timeout of the launch; every thread of this block then skips its work: the
  // block's other threads learn it at their next data sync (__syncthreads_or) or poll.
  // `seen` and `want`: the value the wait last read and the one it waits for.
  __device__ void Fail(int peer, int index, uint64_t seen, uint64_t want) const {
    // Host-mapped: plain stores (a racing second failure may overwrite the first; both are real).
    volatile ChannelError* e = a.error;
    if (e->code == 0) {
      e->rank = a.rank;
      e->tb = tb;
      e->op = index;
      e->peer = peer;
      e->seen = seen;
      e->want = want;
      __threadfence_system();
      e->code = 1;
    }
    atomicExch(failed, 1);
    gave_up = true;
  }
  // Whether some thread of the block gave up: one shared atomic per warp (a shared atomic that every
  // lane issues on one word is serialised lane by lane), its result shared with the lanes.
  __device__ bool Failed() const {
    const unsigned lanes = __activemask();
    const int leader = __ffs(lanes) - 1;
    int f = 0;
    if (static_cast<int>(threadIdx.x & 31) == leader) f = atomicAdd(failed, 0);
    gave_up = gave_up || __shfl_sync(lanes, f, leader) != 0;
    return gave_up;
  }
  // A data sync, which also tells every thread whether one gave up.
  __device__ void Sync() const { gave_up = __syncthreads_or(gave_up) != 0; }
  // Read lazily: a poll that succeeds soon never reads the timer.
  __device__ bool TimedOut() const {
    const uint64_t now = GlobalTimer();
    if (start == 0) start = now;
    return now - start > a.timeout_ns;
  }
  __device__ bool Complete(const uint4& v) const { return v.y == flag && v.w == flag; }

  // Waits until every lane that arrives here with this one holds a complete packet line in *v
  // (reloading `line` while its own is not): the lanes poll as one, a vote per reload, as the
  // hand-written LL kernels do. False when the wait timed out (recorded) or the block gave up.
  __device__ __forceinline__ bool AwaitLine(const char* line, int peer, uint4* v) const {
    const unsigned lanes = __activemask();
    bool ok = Complete(*v);
    if (__all_sync(lanes, ok)) return true;
    for (uint32_t spins = 1;; ++spins) {
      if (!ok) {
        *v = LoadLine(line);
        ok = Complete(*v);
      }
      if (__all_sync(lanes, ok)) return true;
      if ((spins & 1023) == 0) {
        const bool give_up = __any_sync(lanes, TimedOut());
        if (give_up || Failed()) {
          if (give_up && static_cast<int>(threadIdx.x & 31) == __ffs(lanes) - 1) Fail(peer, op, v->y, flag);
          gave_up = true;
          return false;
        }
      }
    }
  }
};

// Up to 8 bytes at p (fewer at a chunk's end), as two words.
__device__ __forceinline__ uint2 Load8(const char* p, uint64_t n) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) return *reinterpret_cast<const uint2*>(p);
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    return make_uint2(*reinterpret_cast<const uint32_t*>(p), *reinterpret_cast<const uint32_t*>(p + 4));
  }
  uint32_t w[2] = {0, 0};
  for (uint64_t k = 0; k < n; ++k) reinterpret_cast<char*>(w)[k] = p[k];
  return make_uint2(w[0], w[1]);
}
__device__ __forceinline__ void Store8(char* p, uint64_t n, uint2 d) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    *reinterpret_cast<uint2*>(p) = d;
    return;
  }
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    *reinterpret_cast<uint32_t*>(p) = d.x;
    *reinterpret_cast<uint32_t*>(p + 4) = d.y;
    return;
  }
  const uint32_t w[2] = {d.x, d.y};
  for (uint64_t k = 0; k < n; ++k) p[k] = reinterpret_cast<const char*>(w)[k];
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_BLOCK_CUH_
