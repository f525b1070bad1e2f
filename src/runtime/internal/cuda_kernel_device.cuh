// Device code shared by the all-reduce kernel families: element conversions, release/acquire flags,
// the per-block epoch barrier, 16-byte pack copies and rank-order sums, and the flagged-line helpers
// of the low-latency kernels.
//
// Block b of every worker handles the same element range and raises/awaits flags in slot b only,
// so blocks never wait for each other inside one GPU. Flags are written with st.release.sys after a
// __syncthreads (so they publish the whole block's stores) and read with ld.acquire.sys before one
// (so the whole block may read what they guard). Data goes out as 16-byte stores into the peers'
// slots; the partial last pack of a range is handled element by element.
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_DEVICE_CUH_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_DEVICE_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_common/cuda_elem.cuh"
#include "cuda_common/cuda_sync.cuh"
#include "internal/allreduce_layout.h"
#include "internal/cuda_kernel_families.h"
#include "internal/cuda_kernels.h"
#include "vdev/runtime/ipc_memory.h"

#define VDEV_KERNELS(name) \
  Kernels { name<float>, name<__half>, name<__nv_bfloat16> }
#define VDEV_KERNELS_2(name, arg, arg2) \
  Kernels { name<float, arg, arg2>, name<__half, arg, arg2>, name<__nv_bfloat16, arg, arg2> }
// A one-shot LL, LL128 or sentinel kernel's instances for `world` workers. With one peer, lines are
// loaded one at a time (loading them together only added instructions: +0.03 to +0.1 us on 2 H200s).
// `one_round`: the grid gives each thread (LL128: each warp) at most one unit, so the kernel keeps
// the own input it sent in registers for its sum instead of loading it again after sending (2 H200s,
// interleaved calls: LL128 1 KB 2.36 vs 2.42 us, 256 KB 3.34 vs 3.36; sentinel 1 KB 2.29 vs 2.38,
// 512 KB 4.18 vs 4.26).
#define VDEV_ONE_SHOT_KERNELS(name, world, one_round)                                                                 \
  ((world) > 2 ? ((one_round) ? VDEV_KERNELS_2(name, kPeersAtOnce, true) : VDEV_KERNELS_2(name, kPeersAtOnce, false)) \
               : ((one_round) ? VDEV_KERNELS_2(name, 1, true) : VDEV_KERNELS_2(name, 1, false)))

namespace vdev::internal {
namespace {

// This call's epoch: one more than the last. Every block also advances the counters of the blocks
// congruent to it modulo the grid, so all kMaxBarrierBlocks counters stay equal whatever the grid.
__device__ uint64_t NextEpoch(uint64_t* epochs) {
  __shared__ uint64_t epoch;
  if (threadIdx.x == 0) epoch = epochs[blockIdx.x] + 1;
  __syncthreads();
  const uint64_t e = epoch;
  for (unsigned b = blockIdx.x + threadIdx.x * gridDim.x; b < kMaxBarrierBlocks; b += blockDim.x * gridDim.x) {
    epochs[b] = e;
  }
  return e;
}

// Raises this block's flag in every peer's array and waits for every peer's flag in ours; bounded.
__device__ void Barrier(const KernelArgs& a, uint64_t* const* flags, uint64_t epoch) {
  __syncthreads();
  const int t = threadIdx.x;
  if (t < a.world && t != a.rank) {
    StoreRelease(flags[t] + blockIdx.x * kMaxWorkers + a.rank, epoch);
    const uint64_t* mine = flags[a.rank] + blockIdx.x * kMaxWorkers + t;
    if (LoadAcquire(mine) < epoch) {
      const uint64_t start = GlobalTimer();
      for (uint32_t spins = 1; LoadAcquire(mine) < epoch; ++spins) {
        if ((spins & 1023) == 0 && GlobalTimer() - start > a.timeout_ns) {
          *reinterpret_cast<volatile int*>(a.error) = t + 1;
          break;
        }
      }
    }
  }
  __syncthreads();
}

// How a flag-barrier kernel starts: after the previous grid (programmatic launch), this call's
// epoch (NextEpoch) and the workspace half it uses.
struct FlagCall {
  uint64_t epoch;
  size_t parity;
};
__device__ __forceinline__ FlagCall StartFlagCall(const KernelArgs& a) {
  FollowPreviousGrid();
  const uint64_t epoch = NextEpoch(a.epochs);
  return {epoch, epoch & 1};
}

// How a low-latency kernel starts: after the previous grid, this call's number (its block's epoch
// + 1; FinishEpoch stores it at the end), the flag its lines carry and the workspace half it uses.
struct LLCall {
  uint64_t call;
  uint32_t flag;
  size_t parity;
};
__device__ __forceinline__ LLCall StartLLCall(const KernelArgs& a) {
  FollowPreviousGrid();
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  return {call, LLFlag(call), call & 1};
}

// This block's share [lo, hi) of `packs` 16-byte packs.
struct Range {
  size_t lo, hi;
};
__device__ __forceinline__ Range BlockRange(size_t packs) {
  const size_t per = (packs + gridDim.x - 1) / gridDim.x;
  const size_t lo = min(packs, blockIdx.x * per);
  return {lo, min(packs, lo + per)};
}

// Copies the elements of [0, len) that fall in this block's pack range r, from src to each dst
// (`ndst` destinations): whole packs as 16-byte accesses, the partial last pack element-wise.
template <typename T>
__device__ __forceinline__ void CopyRange(Range r, size_t len, const T* src, T* const* dst, int ndst) {
  constexpr int P = kPer<T>;
  const size_t full = min(r.hi, len / P);
  const uint4* s = reinterpret_cast<const uint4*>(src);
  for (size_t i = r.lo + threadIdx.x; i < full; i += kUnroll * blockDim.x) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t k = i + u * blockDim.x;
      if (k < full) v[u] = s[k];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t k = i + u * blockDim.x;
      if (k < full) {
#pragma unroll
        for (int d = 0; d < kMaxWorkers; ++d) {
          if (d < ndst) reinterpret_cast<uint4*>(dst[d])[k] = v[u];
        }
      }
    }
  }
  const size_t partial = len / P;
  if (len % P != 0 && partial >= r.lo && partial < r.hi && threadIdx.x < len % P) {
    const size_t k = partial * P + threadIdx.x;
    const T v = src[k];
#pragma unroll
    for (int d = 0; d < kMaxWorkers; ++d) {
      if (d < ndst) dst[d][k] = v;
    }
  }
}

// Sums element ranges of `world` sources in rank order into each dst (`ndst` destinations).
// sources[j] == nullptr is never passed; `local` marks sources in this GPU's own memory written by
// peers, which are read through L2 (.cg) so no stale L1 line survives from an earlier call.
template <typename T>
__device__ __forceinline__ void ReduceRange(Range r, size_t len, const T* const* sources, int world, int own,
                                            T* const* dst, int ndst) {
  constexpr int P = kPer<T>;
  const size_t full = min(r.hi, len / P);
  for (size_t i = r.lo + threadIdx.x; i < full; i += blockDim.x) {
    uint4 v[kMaxWorkers];
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j) {
      if (j < world) {
        const uint4* p = reinterpret_cast<const uint4*>(sources[j]) + i;
        v[j] = j == own ? *p : __ldcg(p);
      }
    }
    float acc[P];
    StartSums(acc);
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j) {
      if (j < world) AddPack<T>(acc, v[j]);
    }
    const uint4 out = ToPack<T>(acc);
#pragma unroll
    for (int d = 0; d < kMaxWorkers; ++d) {
      if (d < ndst) reinterpret_cast<uint4*>(dst[d])[i] = out;
    }
  }
  const size_t partial = len / P;
  if (len % P != 0 && partial >= r.lo && partial < r.hi && threadIdx.x < len % P) {
    const size_t k = partial * P + threadIdx.x;
    float acc = -0.0f;
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j) {
      if (j < world) {
        const T* p = sources[j] + k;
        acc += Elem<T>::ToF(j == own ? *p : __ldcg(p));
      }
    }
    const T out = Elem<T>::FromF(acc);
#pragma unroll
    for (int d = 0; d < kMaxWorkers; ++d) {
      if (d < ndst) dst[d][k] = out;
    }
  }
}

// Bytes [8i, 8i + 8) of an input of `bytes` bytes, zero past its end.
__device__ __forceinline__ uint2 LoadPayload(const char* in, size_t i, size_t bytes) {
  if (8 * i + 8 <= bytes) return *reinterpret_cast<const uint2*>(in + 8 * i);
  uint64_t v = 0;
  for (size_t k = 8 * i; k < bytes; ++k) v |= uint64_t{static_cast<uint8_t>(in[k])} << (8 * (k - 8 * i));
  return make_uint2(static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
}

// Waits (bounded) until every lane that arrives here with this one holds a complete(unit) 16-byte
// unit at its `p`, and returns this lane's: the lanes wait as one, one vote per reload. (Lanes that
// reach the call apart form groups of their own, each still waiting for all of its own units.)
// Against each lane polling alone, measured with the sentinel kernel on 2 H200s: 64 KB 2.69 vs
// 2.80 us, 256 KB 3.27 vs 3.48, 1 MB 5.48 vs 5.76.
template <typename Complete>
__device__ __forceinline__ uint4 PollTogether(const KernelArgs& a, const char* p, int source, Complete complete) {
  const unsigned lanes = __activemask();
  uint4 v = LoadLine(p);
  if (!__all_sync(lanes, complete(v))) {
    const uint64_t start = GlobalTimer();
    for (uint32_t spins = 1;; ++spins) {
      v = LoadLine(p);
      if (__all_sync(lanes, complete(v))) break;
      if ((spins & 1023) == 0 && __any_sync(lanes, GlobalTimer() - start > a.timeout_ns)) {
        *reinterpret_cast<volatile int*>(a.error) = source + 1;
        break;
      }
    }
  }
  return v;
}

// Waits (bounded) until `line` carries `flag` in both halves; returns its 8 bytes of data. The lanes
// wait together (PollTogether): one-shot LL on 2 H200s 64 KB 2.53 vs 2.60 us, 1 MB 9.70 vs 10.28;
// two-shot LL 64 KB 3.87 vs 4.30; unchanged at 1 KB.
__device__ __forceinline__ uint2 PollLine(const KernelArgs& a, const char* line, uint32_t flag, int source) {
  const uint4 v = PollTogether(a, line, source, [flag](uint4 w) { return w.y == flag && w.w == flag; });
  return make_uint2(v.x, v.z);
}

// Writes bytes [8i, 8i + 8) of an output of `bytes` bytes.
__device__ __forceinline__ void StorePayload(char* out, size_t i, size_t bytes, uint2 d) {
  if (8 * i + 8 <= bytes) {
    *reinterpret_cast<uint2*>(out + 8 * i) = d;
    return;
  }
  const uint64_t v = d.x | (uint64_t{d.y} << 32);
  for (size_t k = 8 * i; k < bytes; ++k) out[k] = static_cast<char>(v >> (8 * (k - 8 * i)));
}

template <typename T>
__device__ __forceinline__ uint2 ToPayload(const float (&acc)[8 / sizeof(T)]) {
  uint2 d;
  T* e = reinterpret_cast<T*>(&d);
#pragma unroll
  for (int k = 0; k < static_cast<int>(8 / sizeof(T)); ++k) e[k] = Elem<T>::FromF(acc[k]);
  return d;
}

// Advances every epoch counter congruent to this block (see NextEpoch), once all threads read it.
__device__ __forceinline__ void FinishEpoch(uint64_t* epochs, uint64_t epoch) {
  __syncthreads();
  for (unsigned b = blockIdx.x + threadIdx.x * gridDim.x; b < kMaxBarrierBlocks; b += blockDim.x * gridDim.x) {
    epochs[b] = epoch;
  }
}

template <typename T>
__device__ __forceinline__ void AddPayload(float (&acc)[8 / sizeof(T)], uint2 d) {
  const T* e = reinterpret_cast<const T*>(&d);
#pragma unroll
  for (int k = 0; k < static_cast<int>(8 / sizeof(T)); ++k) acc[k] += Elem<T>::ToF(e[k]);
}

// Zeroes this call's sweep slice of this worker's receive half (see LLSweepSlice), except the lines
// `written_by_peers(line)`, which carry this call's flag. No one else touches the other lines of the
// half during the call (peers write only those lines; the next call on this half starts after this
// one has finished everywhere), so this may run at any point of the call.
template <typename WrittenByPeers>
__device__ __forceinline__ void SweepStaleLines(const KernelArgs& a, uint64_t call, WrittenByPeers written_by_peers) {
  const LineSpan s = LLSweepSlice(call, a.half_bytes / 16);
  char* half = a.data[a.rank] + (call & 1) * a.half_bytes;
  for (size_t line = s.lo + blockIdx.x * blockDim.x + threadIdx.x; line < s.hi; line += gridDim.x * blockDim.x) {
    if (!written_by_peers(line)) *reinterpret_cast<uint4*>(half + 16 * line) = make_uint4(0, 0, 0, 0);
  }
}

// A one-shot reader's sum of one 16-byte unit, in rank order: this worker's own (add_own()), then
// each peer j's unit at at + j * slot_bytes, added by add_peer(unit). The first loads of kBatch
// workers go out together; a unit that arrived(unit) rejects is awaited with wait(address, j).
template <int kBatch, typename IsComplete, typename Wait, typename AddOwn, typename AddPeer>
__device__ __forceinline__ void SumInRankOrder(const KernelArgs& a, const char* at, IsComplete arrived, Wait wait,
                                               AddOwn add_own, AddPeer add_peer) {
  for (int g = 0; g < a.world; g += kBatch) {
    uint4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = g + u;
      if (j < a.world && j != a.rank) v[u] = LoadLine(at + j * a.slot_bytes);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = g + u;
      if (j >= a.world) break;
      if (j == a.rank) {
        add_own();
      } else {
        add_peer(arrived(v[u]) ? v[u] : wait(at + j * a.slot_bytes, j));
      }
    }
  }
}

// LL128 lines (see cuda_ll128_kernel.cu), also stored by the sentinel kernel.
__device__ __forceinline__ void StoreLine128(char* p, uint64_t lo, uint64_t hi) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
}
__device__ __forceinline__ ulonglong2 LoadLine128(const char* p) {
  ulonglong2 v;
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t Word(uint2 d) { return d.x | (uint64_t{d.y} << 32); }
__device__ __forceinline__ uint2 Halves(uint64_t w) {
  return make_uint2(static_cast<uint32_t>(w), static_cast<uint32_t>(w >> 32));
}

}  // namespace
}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_DEVICE_CUH_
