// The CUDA all-reduce kernels: one-shot and two-shot, with per-block epoch barriers across GPUs.
//
// Block b of every worker handles the same element range and raises/awaits flags in slot b only,
// so blocks never wait for each other inside one GPU. Flags are written with st.release.sys after a
// __syncthreads (so they publish the whole block's stores) and read with ld.acquire.sys before one
// (so the whole block may read what they guard). Data goes out as 16-byte stores into the peers'
// slots; the partial last pack of a range is handled element by element.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "internal/allreduce_layout.h"
#include "internal/cuda_kernels.h"
#include "vdev/ipc_memory.h"

namespace vdev::internal {
namespace {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;  // all co-resident on an H100/H200
// The one-shot LL kernels run smaller blocks, up to two per SM: they end sooner, and the next call's
// blocks fit beside them under programmatic launch. Measured on 2 and 4 H200s against 512-thread blocks:
// LL with 128 threads -0.07 to -0.1 us up to 256 KB (larger messages go to LL128 or two-shot); LL128
// with 256 threads -0.07 to -0.4 us up to 1 MB (128 threads was slower from 512 KB).
constexpr int kLLThreads = 128;
constexpr int kLL128Threads = 256;
// The sentinel kernel: one 16-byte pack per thread where the grid allows, so the larger sizes it
// serves take more threads per block rather than more rounds per thread: blocks of 64 to 512 threads,
// one per 128 packs, at most kMaxLLBlocks. Measured on 2 H200s against at most 128 and 256 threads
// (the same 128 packs per block): 1 MB 5.80 vs 6.83 and 5.79 us, 2 MB 9.01 vs 12.55 and 9.92, 4 MB
// 15.20 vs 19.31 and 16.53; 64 packs per block made no difference.
constexpr int kSentinelMaxThreads = 512;
constexpr size_t kSentinelPacksPerBlock = 128;
constexpr int kMaxLLBlocks = kMaxBarrierBlocks;
// A launch bound that caps a kernel at 64 registers per thread (an SM has 64K).
constexpr int MinBlocksFor64Registers(int threads) { return 65536 / (64 * threads); }
static_assert(kMaxBlocks <= kMaxBarrierBlocks, "a block past the epoch counters would read a stray epoch");
// The one-shot LL kernels' readers issue their first loads of up to this many workers' lines together
// and then wait on the missing ones one worker at a time: when lines are already there a warp waits
// one L2 round trip instead of one per peer (on 4 H200s: LL -0.2 us at 1-4 KB, LL128 -0.6 us at 1 MB).
// Still adding in rank order, so every worker's result is bitwise the same. (Loading the other missing
// lines together again after each wait was slower: LL128 +0.2 us from 1 KB to 256 KB.)
constexpr int kPeersAtOnce = 4;
constexpr int kUnroll = 4;       // independent 16-byte loads in flight per thread when copying

template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static __device__ __forceinline__ float ToF(float v) { return v; }
  static __device__ __forceinline__ float FromF(float v) { return v; }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ float ToF(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half FromF(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float ToF(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 FromF(float v) { return __float2bfloat16_rn(v); }
};

template <typename T>
constexpr int kPer = 16 / sizeof(T);

__device__ __forceinline__ void StoreRelease(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t LoadAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
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

// Sums start at -0.0, the identity of IEEE addition (-0 + x is x for every x, -0 and +0 included);
// a +0 start would turn a sum of negative zeros into +0.
template <int N>
__device__ __forceinline__ void StartSums(float (&acc)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) acc[k] = -0.0f;
}

template <typename T>
__device__ __forceinline__ void AddPack(float (&acc)[kPer<T>], uint4 v) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int k = 0; k < kPer<T>; ++k) acc[k] += Elem<T>::ToF(e[k]);
}

template <typename T>
__device__ __forceinline__ uint4 ToPack(const float (&acc)[kPer<T>]) {
  uint4 v;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int k = 0; k < kPer<T>; ++k) e[k] = Elem<T>::FromF(acc[k]);
  return v;
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

template <typename T>
__global__ void __launch_bounds__(kThreads) OneShotKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  const uint64_t epoch = NextEpoch(a.epochs);
  const size_t parity = epoch & 1;
  const Range r = BlockRange((a.count + P - 1) / P);
  const T* in = static_cast<const T*>(a.in);
  T* peers[kMaxWorkers];
#pragma unroll
  for (int k = 1; k < kMaxWorkers; ++k) {
    if (k < a.world) {
      peers[k - 1] = reinterpret_cast<T*>(a.data[(a.rank + k) % a.world] +
                                          OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank));
    }
  }
  CopyRange<T>(r, a.count, in, peers, a.world - 1);
  Barrier(a, a.flags_in, epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world) sources[j] = j == a.rank ? in
                             : reinterpret_cast<const T*>(a.data[a.rank] +
                                                          OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, j));
  }
  T* out = static_cast<T*>(a.out);
  ReduceRange<T>(r, a.count, sources, a.world, a.rank, &out, 1);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) TwoShotKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  const uint64_t epoch = NextEpoch(a.epochs);
  const size_t parity = epoch & 1;
  const size_t chunk = a.chunk_elems;
  const Range r = BlockRange(chunk / P);
  auto length = [&](int j) -> size_t {
    const size_t begin = min(a.count, j * chunk);
    return min(a.count, begin + chunk) - begin;
  };
  auto slot = [&](int owner, int stage, int source) {
    return reinterpret_cast<T*>(a.data[owner] +
                                TwoShotSlotOffset(a.half_bytes, a.slot_bytes, a.world, stage, parity, source));
  };
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  // Reduce-scatter: chunk q of this input goes to worker q.
  for (int k = 1; k < a.world; ++k) {
    const int q = (a.rank + k) % a.world;  // spread the first stores over all links
    T* dst = slot(q, 0, a.rank);
    CopyRange<T>(r, length(q), in + q * chunk, &dst, 1);
  }
  Barrier(a, a.flags_in, epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world) sources[j] = j == a.rank ? in + a.rank * chunk : slot(a.rank, 0, j);
  }
  T* dsts[kMaxWorkers];
  dsts[0] = out + a.rank * chunk;
#pragma unroll
  for (int k = 1; k < kMaxWorkers; ++k) {
    if (k < a.world) dsts[k] = slot((a.rank + k) % a.world, 1, a.rank);
  }
  ReduceRange<T>(r, length(a.rank), sources, a.world, a.rank, dsts, a.world);
  Barrier(a, a.flags_out, epoch);
  // All-gather: the sums the peers wrote into this worker's slots.
  for (int j = 0; j < a.world; ++j) {
    if (j == a.rank) continue;
    T* dst = out + j * chunk;
    CopyRange<T>(r, length(j), slot(a.rank, 1, j), &dst, 1);
  }
}

// Zero-copy one-shot: the inputs already lie in IPC memory (a.data[j] is worker j's input). Entry
// barrier: a peer's block b arrives only once its kernel runs, so its producer (earlier work on its
// stream) has finished writing the input. Exit barrier: block b leaves only when every peer's block b
// has finished reading range r of every input, so once the whole grid is done no peer reads this
// worker's input any more and the next producer on this stream may overwrite it.
template <typename T>
__global__ void __launch_bounds__(kThreads) ZeroCopyOneShotKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  const uint64_t epoch = NextEpoch(a.epochs);
  Barrier(a, a.flags_in, epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world) sources[j] = reinterpret_cast<const T*>(a.data[j]);
  }
  T* out = static_cast<T*>(a.out);
  ReduceRange<T>(BlockRange((a.count + P - 1) / P), a.count, sources, a.world, a.rank, &out, 1);
  Barrier(a, a.flags_out, epoch);
}

__device__ __forceinline__ void StoreLine(char* p, uint2 d, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(flag), "r"(d.y),
               "r"(flag)
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

// One-shot, low-latency form: no barrier. Each line a peer receives holds 8 bytes of data and the
// call's flag twice (each 8-byte half is written atomically), so a reader that sees the flag in
// both halves has the data. The two workspace halves alternate by call parity; a line in a half was
// written or zeroed within the last 2 * kLLSweepEvery * kLLSweepSlices calls, never with this call's
// flag, so a stale line is never taken for new. At most 64 registers (no spills): under programmatic
// launch the next call's blocks then fit beside this call's and wait on the SM, which took ~0.3 us
// off small messages. Workers' lines are read kBatch at a time (kPeersAtOnce).
template <typename T, int kBatch, bool kOneRound>
__global__ void __launch_bounds__(kLLThreads, MinBlocksFor64Registers(kLLThreads)) OneShotLLKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int E = 8 / sizeof(T);
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  const uint32_t flag = LLFlag(call);
  const size_t parity = call & 1;
  const size_t bytes = a.count * sizeof(T);
  const size_t lines = OneShotLLLines(a.count, sizeof(T));
  const Range r = BlockRange(lines);
  const char* in = static_cast<const char*>(a.in);
  auto send = [&](size_t i, uint2 d) {
#pragma unroll
    for (int k = 1; k < kMaxWorkers; ++k) {
      if (k < a.world) {
        StoreLine(a.data[(a.rank + k) % a.world] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank) + 16 * i,
                  d, flag);
      }
    }
  };
  // While the peers' lines travel. Slot j of the half holds lines [0, lines) from worker j != rank.
  auto sweep = [&] {
    SweepStaleLines(a, call, [&](size_t line) {
      for (int j = 0; j < a.world; ++j) {
        if (j != a.rank && line - j * (a.slot_bytes / 16) < lines) return true;  // unsigned: below the slot wraps
      }
      return false;
    });
  };
  const char* mine = a.data[a.rank] + parity * a.half_bytes;
  auto receive = [&](size_t i, uint2 own) {
    float acc[E];
    StartSums(acc);
    SumInRankOrder<kBatch>(
        a, mine + 16 * i, [&](uint4 v) { return v.y == flag && v.w == flag; },
        [&](const char* p, int j) {
          const uint2 d = PollLine(a, p, flag, j);
          return make_uint4(d.x, flag, d.y, flag);
        },
        [&] { AddPayload<T>(acc, own); }, [&](uint4 v) { AddPayload<T>(acc, make_uint2(v.x, v.z)); });
    StorePayload(static_cast<char*>(a.out), i, bytes, ToPayload<T>(acc));
  };
  if constexpr (kOneRound) {
    const size_t i = r.lo + threadIdx.x;
    const uint2 own = i < r.hi ? LoadPayload(in, i, bytes) : uint2{0, 0};
    if (i < r.hi) send(i, own);
    sweep();
    if (i < r.hi) receive(i, own);
  } else {
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) send(i, LoadPayload(in, i, bytes));
    sweep();
    // The own words are loaded before the polls, which the asm keeps in order.
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) receive(i, LoadPayload(in, i, bytes));
  }
  FinishEpoch(a.epochs, call);
}

// Two-shot in the low-latency form: chunk q of every input goes to worker q as flagged lines;
// worker q sums them in rank order and sends the sum to everyone as flagged lines again. A thread
// handles the same line index in every chunk and phase, so no barrier is needed anywhere.
template <typename T>
__global__ void __launch_bounds__(kThreads) TwoShotLLKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int E = 8 / sizeof(T);
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  const uint32_t flag = LLFlag(call);
  const size_t parity = call & 1;
  const size_t chunk_bytes = a.chunk_elems * sizeof(T);
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange(chunk_bytes / 8);
  auto length = [&](int j) -> size_t {  // bytes of chunk j
    const size_t begin = min(bytes, j * chunk_bytes);
    return min(bytes, begin + chunk_bytes) - begin;
  };
  auto slot = [&](int owner, int stage, int source) {
    return a.data[owner] + TwoShotSlotOffset(a.half_bytes, a.slot_bytes, a.world, stage, parity, source);
  };
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  const size_t mine = length(a.rank);
  // Stage 0 slot j: our chunk's lines from worker j; stage 1 slot j: worker j's chunk, summed.
  SweepStaleLines(a, call, [&](size_t line) {
    for (int j = 0; j < a.world; ++j) {
      if (j == a.rank) continue;
      const size_t reduce = line - j * (a.slot_bytes / 16), gather = reduce - a.world * (a.slot_bytes / 16);
      if (reduce < (mine + 7) / 8 || gather < (length(j) + 7) / 8) return true;  // unsigned: below a slot wraps
    }
    return false;
  });
  for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) {
    for (int k = 1; k < a.world; ++k) {
      const int q = (a.rank + k) % a.world;
      if (8 * i < length(q)) StoreLine(slot(q, 0, a.rank) + 16 * i, LoadPayload(in + q * chunk_bytes, i, length(q)), flag);
    }
    if (8 * i < mine) {
      float acc[E];
      StartSums(acc);
      for (int j = 0; j < a.world; ++j) {
        AddPayload<T>(acc, j == a.rank ? LoadPayload(in + a.rank * chunk_bytes, i, mine)
                                       : PollLine(a, slot(a.rank, 0, j) + 16 * i, flag, j));
      }
      const uint2 d = ToPayload<T>(acc);
      StorePayload(out + a.rank * chunk_bytes, i, mine, d);
      for (int k = 1; k < a.world; ++k) StoreLine(slot((a.rank + k) % a.world, 1, a.rank) + 16 * i, d, flag);
    }
    for (int k = 1; k < a.world; ++k) {
      const int j = (a.rank + k) % a.world;
      if (8 * i < length(j)) StorePayload(out + j * chunk_bytes, i, length(j), PollLine(a, slot(a.rank, 1, j) + 16 * i, flag, j));
    }
  }
  FinishEpoch(a.epochs, call);
}

// One-shot LL128: 8 consecutive lanes store one 128-byte line (15 data words and the epoch in
// lane 7's second word) with one 16-byte store each, so a warp's store instruction carries whole
// lines and NVLink delivers each line as one unit. A reader loads a line the same way (one warp
// load = one L2 access per line) and takes it only when the epoch word is this call's; otherwise
// the whole warp loads again. Stale lines carry older epochs (epochs only grow, and the epoch word
// is at the same place in every line), so they are never taken for new. 1/15 more bytes than the
// data instead of LL's 2x.
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

// Warp-wide: waits (bounded) until every active line of this warp's four carries `epoch`; returns
// this lane's 16 bytes. All 32 lanes call it together. (Polling one peer at a time: loading every
// peer's line at once was slower, measured — three times the polling traffic in the L2 that the
// peers' NVLink writes land in.)
__device__ __forceinline__ ulonglong2 PollLines128(const KernelArgs& a, const char* p, bool active, bool epoch_lane,
                                                  uint64_t epoch, int source) {
  constexpr unsigned kWarp = 0xffffffffu;
  ulonglong2 v = active ? LoadLine128(p) : ulonglong2{0, 0};
  if (!__all_sync(kWarp, !active || !epoch_lane || v.y == epoch)) {
    const uint64_t start = GlobalTimer();
    for (uint32_t spins = 1;; ++spins) {
      if (active) v = LoadLine128(p);
      if (__all_sync(kWarp, !active || !epoch_lane || v.y == epoch)) break;
      if ((spins & 1023) == 0 && __any_sync(kWarp, GlobalTimer() - start > a.timeout_ns)) {
        if ((threadIdx.x & 31) == 0) *reinterpret_cast<volatile int*>(a.error) = source + 1;
        break;
      }
    }
  }
  return v;
}

template <typename T, int kBatch, bool kOneRound>  // at most 64 registers, as OneShotLLKernel
__global__ void __launch_bounds__(kLL128Threads, MinBlocksFor64Registers(kLL128Threads)) OneShotLL128Kernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int E = 8 / sizeof(T);
  constexpr int kLinesPerWarp = 32 / 8;
  const uint64_t epoch = a.epochs[blockIdx.x] + 1;
  const size_t parity = epoch & 1;
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange(OneShotLL128Lines(a.count, sizeof(T)));
  const int lane = threadIdx.x & 31, part = lane & 7;
  const bool epoch_lane = part == 7;
  const size_t warp_lines = (blockDim.x / 32) * kLinesPerWarp;
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  // Words [w, w + 2) of the input (just w for the epoch lane), as in every loop below.
  auto first_word = [&](size_t line) { return kLL128DataWords * line + 2 * part; };
  struct Own {
    uint2 lo, hi;
  };
  auto load_own = [&](size_t line) {
    const size_t w = first_word(line);
    return Own{LoadPayload(in, w, bytes), epoch_lane ? uint2{0, 0} : LoadPayload(in, w + 1, bytes)};
  };
  auto send = [&](size_t line, Own own) {
    const uint64_t lo = Word(own.lo), hi = epoch_lane ? epoch : Word(own.hi);
#pragma unroll
    for (int k = 1; k < kMaxWorkers; ++k) {
      if (k < a.world) {
        StoreLine128(a.data[(a.rank + k) % a.world] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank) +
                         kLL128LineBytes * line + 16 * part,
                     lo, hi);
      }
    }
  };
  const char* mine = a.data[a.rank] + parity * a.half_bytes;
  // Warp-wide (all 32 lanes): sums this worker's `own` words and the peers' lines of `line`.
  auto receive = [&](size_t line, bool active, Own own) {
    const size_t w = first_word(line);
    float acc_lo[E], acc_hi[E];
    StartSums(acc_lo);
    StartSums(acc_hi);
    const char* at = mine + kLL128LineBytes * line + 16 * part;  // + j * slot_bytes: worker j's
    for (int g = 0; g < a.world; g += kBatch) {
      ulonglong2 v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int j = g + u;
        v[u] = active && j < a.world && j != a.rank ? LoadLine128(at + j * a.slot_bytes) : ulonglong2{0, 0};
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int j = g + u;
        if (j >= a.world) break;
        if (j == a.rank) {
          AddPayload<T>(acc_lo, own.lo);
          if (!epoch_lane) AddPayload<T>(acc_hi, own.hi);
          continue;
        }
        if (!__all_sync(0xffffffffu, !active || !epoch_lane || v[u].y == epoch)) {
          v[u] = PollLines128(a, at + j * a.slot_bytes, active, epoch_lane, epoch, j);
        }
        AddPayload<T>(acc_lo, Halves(v[u].x));
        if (!epoch_lane) AddPayload<T>(acc_hi, Halves(v[u].y));
      }
    }
    if (active && 8 * w < bytes) {
      StorePayload(out, w, bytes, ToPayload<T>(acc_lo));
      if (!epoch_lane && 8 * (w + 1) < bytes) StorePayload(out, w + 1, bytes, ToPayload<T>(acc_hi));
    }
  };
  const size_t first = r.lo + (threadIdx.x / 32) * kLinesPerWarp;
  if constexpr (kOneRound) {
    if (first < r.hi) {
      const size_t line = first + lane / 8;
      const bool active = line < r.hi;
      Own own{{0, 0}, {0, 0}};
      if (active) {
        own = load_own(line);
        send(line, own);
      }
      receive(line, active, own);
    }
  } else {
    for (size_t base = first; base < r.hi; base += warp_lines) {
      const size_t line = base + lane / 8;
      if (line < r.hi) send(line, load_own(line));
    }
    for (size_t base = first; base < r.hi; base += warp_lines) {
      const size_t line = base + lane / 8;
      const bool active = line < r.hi;
      // This worker's words, loaded before the polls (which the asm keeps in order).
      receive(line, active, active ? load_own(line) : Own{{0, 0}, {0, 0}});
    }
  }
  FinishEpoch(a.epochs, epoch);
}

// One-shot with sentinel-filled receive slots: every element of a slot holds the all-ones pattern
// (a NaN in f32, f16 and bf16) until a peer's data lands there, so the data is its own flag and no
// byte on the wire carries anything else (LL128 spends 1/15 of them on epochs, LL half). A reader
// polls a 16-byte pack until none of its elements is the sentinel; a torn store only delays it, as
// each element arrives whole. It then sums and puts the sentinel back, so after every call the
// whole workspace is sentinel again, whatever sizes came before. An input element with the sentinel
// pattern is sent as the same NaN with the sign cleared (every worker sums the same values, so the
// results stay bitwise equal; a NaN summand makes the sum NaN either way). Double buffering as the
// other kernels: the peers write call c + 2 into a half only after this worker's call c finished.
template <typename T>
__device__ __forceinline__ uint32_t SentinelElements(uint32_t w) {  // all ones where an element is all ones
  if constexpr (sizeof(T) == 2) return __vcmpeq2(w, 0xffffffffu);
  return w == 0xffffffffu ? 0xffffffffu : 0u;
}
template <typename T>
__device__ __forceinline__ bool Arrived(uint4 v) {
  return (SentinelElements<T>(v.x) | SentinelElements<T>(v.y) | SentinelElements<T>(v.z) |
          SentinelElements<T>(v.w)) == 0;
}
template <typename T>
__device__ __forceinline__ uint4 WithoutSentinel(uint4 v) {
  constexpr uint32_t kSigns = sizeof(T) == 2 ? 0x80008000u : 0x80000000u;
  return make_uint4(v.x & ~(SentinelElements<T>(v.x) & kSigns), v.y & ~(SentinelElements<T>(v.y) & kSigns),
                    v.z & ~(SentinelElements<T>(v.z) & kSigns), v.w & ~(SentinelElements<T>(v.w) & kSigns));
}
// Bytes [16i, 16i + 16) of an input of `bytes` bytes, zero past its end (zero is no sentinel).
__device__ __forceinline__ uint4 LoadPack(const char* in, size_t i, size_t bytes) {
  if (16 * i + 16 <= bytes) return *reinterpret_cast<const uint4*>(in + 16 * i);
  const uint2 lo = LoadPayload(in, 2 * i, bytes), hi = LoadPayload(in, 2 * i + 1, bytes);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}
__device__ __forceinline__ void StorePack(char* out, size_t i, size_t bytes, uint4 v) {
  if (16 * i + 16 <= bytes) {
    *reinterpret_cast<uint4*>(out + 16 * i) = v;
    return;
  }
  StorePayload(out, 2 * i, bytes, make_uint2(v.x, v.y));
  StorePayload(out, 2 * i + 1, bytes, make_uint2(v.z, v.w));
}
template <typename T>
__device__ __forceinline__ uint4 PollPack(const KernelArgs& a, const char* p, int source) {
  return PollTogether(a, p, source, [](uint4 v) { return Arrived<T>(v); });
}

template <typename T, int kBatch, bool kOneRound>  // at most 64 registers, as OneShotLLKernel
__global__ void __launch_bounds__(kSentinelMaxThreads, MinBlocksFor64Registers(kSentinelMaxThreads))
    OneShotSentinelKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  const size_t parity = call & 1;
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange((bytes + 15) / 16);
  const char* in = static_cast<const char*>(a.in);
  auto load_own = [&](size_t i) { return WithoutSentinel<T>(LoadPack(in, i, bytes)); };
  auto send = [&](size_t i, uint4 d) {
#pragma unroll
    for (int k = 1; k < kMaxWorkers; ++k) {
      if (k < a.world) {
        StoreLine128(a.data[(a.rank + k) % a.world] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank) +
                         16 * i,
                     Word(make_uint2(d.x, d.y)), Word(make_uint2(d.z, d.w)));
      }
    }
  };
  char* mine = a.data[a.rank] + parity * a.half_bytes;
  auto receive = [&](size_t i, uint4 own) {
    float acc[P];
    StartSums(acc);
    SumInRankOrder<kBatch>(
        a, mine + 16 * i, [](uint4 v) { return Arrived<T>(v); },
        [&](const char* p, int j) { return PollPack<T>(a, p, j); }, [&] { AddPack<T>(acc, own); },
        [&](uint4 v) { AddPack<T>(acc, v); });
    StorePack(static_cast<char*>(a.out), i, bytes, ToPack<T>(acc));
    for (int j = 0; j < a.world; ++j) {
      if (j != a.rank) *reinterpret_cast<uint4*>(mine + j * a.slot_bytes + 16 * i) = make_uint4(~0u, ~0u, ~0u, ~0u);
    }
  };
  if constexpr (kOneRound) {
    const size_t i = r.lo + threadIdx.x;
    if (i < r.hi) {
      const uint4 own = load_own(i);
      send(i, own);
      receive(i, own);
    }
  } else {
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) send(i, load_own(i));
    // This worker's pack loaded before the polls (which the asm keeps in order).
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) receive(i, load_own(i));
  }
  FinishEpoch(a.epochs, call);
}

// Blocks for `units` 16-byte packs or lines: one block per kUnitsPerBlock of them, so mid-sized
// messages spread over many SMs (one SM alone cannot keep NVLink busy), at most kMaxBlocks.
constexpr size_t kUnitsPerBlock = 128;
int BlocksFor(size_t units) {
  const size_t blocks = (units + kUnitsPerBlock - 1) / kUnitsPerBlock;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// The f32, f16 and bf16 instances of one kernel.
struct Kernels {
  KernelFn f32, f16, bf16;
};
#define VDEV_KERNELS(name) \
  Kernels { name<float>, name<__half>, name<__nv_bfloat16> }

// One block per `per_block` lines, at most kMaxLLBlocks.
int LLBlocks(size_t lines, size_t per_block) {
  const size_t blocks = (lines + per_block - 1) / per_block;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxLLBlocks ? kMaxLLBlocks : blocks));
}

#define VDEV_KERNELS_2(name, arg, arg2) \
  Kernels { name<float, arg, arg2>, name<__half, arg, arg2>, name<__nv_bfloat16, arg, arg2> }
// A one-shot LL, LL128 or sentinel kernel's instances for `world` workers. With one peer, lines are
// loaded one at a time (loading them together only added instructions: +0.03 to +0.1 us on 2 H200s).
// `one_round`: the grid gives each thread (LL128: each warp) at most one unit, so the kernel keeps
// the own input it sent in registers for its sum instead of loading it again after sending (2 H200s,
// interleaved calls: LL128 1 KB 2.36 vs 2.42 us, 256 KB 3.34 vs 3.36; sentinel 1 KB 2.29 vs 2.38,
// 512 KB 4.18 vs 4.26).
#define VDEV_ONE_SHOT_KERNELS(name, world, one_round)                                                   \
  ((world) > 2 ? ((one_round) ? VDEV_KERNELS_2(name, kPeersAtOnce, true) : VDEV_KERNELS_2(name, kPeersAtOnce, false)) \
               : ((one_round) ? VDEV_KERNELS_2(name, 1, true) : VDEV_KERNELS_2(name, 1, false)))

// The instance of `kernels` for `type`, or null for a type without one.
KernelFn ForType(const Kernels& kernels, DataType type) {
  return type == DataType::kF32    ? kernels.f32
         : type == DataType::kF16  ? kernels.f16
         : type == DataType::kBF16 ? kernels.bf16
                                   : nullptr;
}

cudaError_t Start(const KernelLaunch& launch, const KernelArgs& args, cudaStream_t stream, bool programmatic) {
  if (launch.kernel == nullptr) return cudaErrorInvalidValue;
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(launch.blocks);
  config.blockDim = dim3(launch.threads);
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, launch.kernel, args);
}

}  // namespace

KernelLaunch PlanAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs& a) {
  const size_t elem = DataTypeSize(type);
  const size_t n = a.count;
  switch (algorithm) {
    case AllReduceAlgorithm::kOneShot:
      a.slot_bytes = OneShotSlotBytes(n, elem);
      return {ForType(VDEV_KERNELS(OneShotKernel), type), BlocksFor((n * elem + 15) / 16), kThreads};
    case AllReduceAlgorithm::kOneShotLL: {
      a.slot_bytes = OneShotLLSlotBytes(n, elem);
      const size_t lines = OneShotLLLines(n, elem);
      const int blocks = LLBlocks(lines, kLLThreads);
      const bool one_round = (lines + blocks - 1) / blocks <= size_t{kLLThreads};
      return {ForType(VDEV_ONE_SHOT_KERNELS(OneShotLLKernel, a.world, one_round), type), blocks, kLLThreads};
    }
    case AllReduceAlgorithm::kOneShotLL128: {
      a.slot_bytes = OneShotLL128SlotBytes(n, elem);
      const size_t lines = OneShotLL128Lines(n, elem);
      const int blocks = LLBlocks(lines, 16);
      const bool one_round = (lines + blocks - 1) / blocks <= size_t{kLL128Threads / 32 * 4};  // 4 lines a warp
      return {ForType(VDEV_ONE_SHOT_KERNELS(OneShotLL128Kernel, a.world, one_round), type), blocks, kLL128Threads};
    }
    case AllReduceAlgorithm::kOneShotSentinel: {
      a.slot_bytes = OneShotSlotBytes(n, elem);
      const size_t packs = (n * elem + 15) / 16;
      const int blocks = LLBlocks(packs, kSentinelPacksPerBlock);
      const size_t per_block = RoundUpTo((packs + blocks - 1) / blocks, 32);
      const int threads = static_cast<int>(std::clamp<size_t>(per_block, 64, kSentinelMaxThreads));
      const bool one_round = (packs + blocks - 1) / blocks <= static_cast<size_t>(threads);
      return {ForType(VDEV_ONE_SHOT_KERNELS(OneShotSentinelKernel, a.world, one_round), type), blocks, threads};
    }
    case AllReduceAlgorithm::kTwoShot:
      a.slot_bytes = TwoShotSlotBytes(n, a.world, elem);
      a.chunk_elems = TwoShotChunkElems(n, a.world, elem);
      return {ForType(VDEV_KERNELS(TwoShotKernel), type), BlocksFor(a.chunk_elems * elem / 16), kThreads};
    case AllReduceAlgorithm::kTwoShotLL:
      a.slot_bytes = TwoShotLLSlotBytes(n, a.world, elem);
      a.chunk_elems = TwoShotChunkElems(n, a.world, elem);
      return {ForType(VDEV_KERNELS(TwoShotLLKernel), type), BlocksFor(a.chunk_elems * elem / 8), kThreads};
    default:
      return {};
  }
}

cudaError_t LaunchAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs a, cudaStream_t stream,
                            bool programmatic) {
  const KernelLaunch launch = PlanAllReduce(algorithm, type, a);
  return Start(launch, a, stream, programmatic);
}

KernelLaunch PlanZeroCopyOneShot(DataType type, size_t count) {
  return {ForType(VDEV_KERNELS(ZeroCopyOneShotKernel), type), BlocksFor((count * DataTypeSize(type) + 15) / 16),
          kThreads};
}

cudaError_t LaunchZeroCopyOneShot(DataType type, const KernelArgs& args, cudaStream_t stream, bool programmatic) {
  return Start(PlanZeroCopyOneShot(type, args.count), args, stream, programmatic);
}

}  // namespace vdev::internal
