// The generic CUDA kernel that runs a channel plan: block b is instance b % instances of thread
// block b / instances and walks that thread block's ops (model and formats in docs/channels.md).
// Data syncs are __syncthreads; signals and waits are issued by thread 0 (release add / acquire
// poll, system scope); LL packets are polled by the thread that needs them. Every poll is bounded
// by %globaltimer: a timeout is recorded in host-mapped memory (rank's thread block, op, peer) and
// the block skips its remaining work (its syncs still run, so no thread is left at a barrier).
#include <cuda_runtime.h>

#include "internal/cuda_plan.h"

namespace vdev::channels::internal {
namespace {

__device__ __forceinline__ uint64_t GlobalTimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void FollowPreviousGrid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ uint64_t LoadAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
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
__device__ __forceinline__ uint4 LoadLine(const char* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void StoreLine(char* p, uint32_t d0, uint32_t d1, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(d0), "r"(flag), "r"(d1), "r"(flag)
               : "memory");
}

// What one block needs while it runs.
struct Block {
  const PlanLaunchArgs& a;
  uint64_t call;
  uint32_t flag;
  uint64_t start;
  int tb;
  int instance;
  int op;
  int* failed;  // shared: this block gave up

  __device__ char* Base(const DeviceRef& c) const {
    char* region = a.regions[c.rank];
    if (c.buffer == kDevInput) return region + a.layout.input;
    if (c.buffer == kDevOutput) return region + a.layout.output;
    return region + a.layout.scratch[call & 1];
  }
  __device__ char* At(const DeviceRef& c) const {
    if (c.packets) return Base(c) + 16 * PacketLine(a.count, a.chunks_per_segment, c.index, a.elem);
    return Base(c) + ChunkBegin(a.count, a.chunks_per_segment, c.index) * a.elem;
  }

  // Records the first timeout of the launch; every thread of this block then skips its work.
  __device__ void Fail(int peer) const {
    // Host-mapped: plain stores (a racing second failure may overwrite the first; both are real).
    volatile ChannelError* e = a.error;
    if (e->code == 0) {
      e->rank = a.rank;
      e->tb = tb;
      e->op = op;
      e->peer = peer;
      __threadfence_system();
      e->code = 1;
    }
    atomicExch(failed, 1);
  }
  __device__ bool Failed() const { return atomicAdd(failed, 0) != 0; }
  __device__ bool TimedOut(uint32_t spins) const {
    return (spins & 1023) == 0 && GlobalTimer() - start > a.timeout_ns;
  }

  // Polls the packet line until both halves carry this execution's flag.
  __device__ bool Poll(const char* line, int peer, uint32_t* d0, uint32_t* d1) const {
    for (uint32_t spins = 1;; ++spins) {
      const uint4 v = LoadLine(line);
      if (v.y == flag && v.w == flag) {
        *d0 = v.x;
        *d1 = v.z;
        return true;
      }
      if ((spins & 1023) == 0 && (TimedOut(spins) || Failed())) {
        Fail(peer);
        return false;
      }
    }
  }
};

// Up to 8 bytes at p (fewer at a chunk's end), as two words.
__device__ __forceinline__ void Load8(const char* p, uint64_t n, uint32_t* d0, uint32_t* d1) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    *d0 = *reinterpret_cast<const uint32_t*>(p);
    *d1 = *reinterpret_cast<const uint32_t*>(p + 4);
    return;
  }
  uint32_t w[2] = {0, 0};
  for (uint64_t k = 0; k < n; ++k) reinterpret_cast<char*>(w)[k] = p[k];
  *d0 = w[0];
  *d1 = w[1];
}
__device__ __forceinline__ void Store8(char* p, uint64_t n, uint32_t d0, uint32_t d1) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    *reinterpret_cast<uint32_t*>(p) = d0;
    *reinterpret_cast<uint32_t*>(p + 4) = d1;
    return;
  }
  const uint32_t w[2] = {d0, d1};
  for (uint64_t k = 0; k < n; ++k) p[k] = reinterpret_cast<const char*>(w)[k];
}

__device__ void CopyBytes(char* dst, const char* src, uint64_t n) {
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  uint64_t done = 0;
  if ((both & 15) == 0) {
    const uint64_t packs = n / 16;
    for (uint64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
    done = packs * 16;
  } else if ((both & 3) == 0) {
    const uint64_t words = n / 4;
    for (uint64_t i = threadIdx.x; i < words; i += blockDim.x) {
      reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
    }
    done = words * 4;
  }
  for (uint64_t i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// dst = srcs[0] + srcs[1] + ... (f32), 16 bytes a thread when every pointer allows.
__device__ void SumPlain(char* dst, const char* const* srcs, int nsrcs, uint64_t n) {
  uintptr_t all = reinterpret_cast<uintptr_t>(dst);
  for (int j = 0; j < nsrcs; ++j) all |= reinterpret_cast<uintptr_t>(srcs[j]);
  uint64_t done = 0;
  if ((all & 15) == 0) {
    const uint64_t packs = n / 16;
    for (uint64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      // Every source's load is issued before the first add: one memory round trip, not nsrcs.
      float4 v[kMaxReduceSources];
#pragma unroll
      for (int j = 0; j < kMaxReduceSources; ++j) {
        if (j < nsrcs) v[j] = reinterpret_cast<const float4*>(srcs[j])[i];
      }
      float4 acc = v[0];
#pragma unroll
      for (int j = 1; j < kMaxReduceSources; ++j) {
        if (j < nsrcs) {
          acc.x += v[j].x;
          acc.y += v[j].y;
          acc.z += v[j].z;
          acc.w += v[j].w;
        }
      }
      reinterpret_cast<float4*>(dst)[i] = acc;
    }
    done = packs * 16;
  }
  for (uint64_t i = done / 4 + threadIdx.x; i < n / 4; i += blockDim.x) {
    float acc = reinterpret_cast<const float*>(srcs[0])[i];
    for (int j = 1; j < nsrcs; ++j) acc += reinterpret_cast<const float*>(srcs[j])[i];
    reinterpret_cast<float*>(dst)[i] = acc;
  }
}

// An op's data, located once per block before the ops run: pointers already advanced to this
// instance's part (packet lines: twice the data offset), and the part's length in data bytes.
struct OpAddress {
  char* dst;
  const char* src[kMaxReduceSources];
  uint64_t bytes;
};


__device__ OpAddress Locate(const Block& b, const DeviceOp& op) {
  OpAddress ad{};
  if (op.nsrcs == 0) return ad;
  const PlanLaunchArgs& a = b.a;
  const int parts = op.parts * a.instances, part = op.part * a.instances + b.instance;
  const Range whole = ChunkBytes(a.count, a.chunks_per_segment, op.dst.index, op.dst.count, a.elem);
  const Range r = PartOf(whole.size(), part, parts);
  ad.bytes = r.size();
  ad.dst = b.At(op.dst) + (op.dst.packets ? 2 * r.begin : r.begin);
  for (int j = 0; j < op.nsrcs; ++j) ad.src[j] = b.At(op.srcs[j]) + (op.srcs[j].packets ? 2 * r.begin : r.begin);
  return ad;
}

// A reduce or copy with packet sources: one 16-byte line (8 data bytes) per thread and step. Every
// source's line is loaded at once; only those whose flags have not arrived are then polled, in
// order, so lines that already landed cost one memory round trip together.
__device__ void SumWithPackets(const Block& b, const DeviceOp& op, const OpAddress& ad, bool sum) {
  for (uint64_t o = 8 * threadIdx.x; o < ad.bytes; o += 8 * blockDim.x) {
    const uint64_t n = ad.bytes - o < 8 ? ad.bytes - o : 8;
    uint4 v[kMaxReduceSources];
#pragma unroll
    for (int j = 0; j < kMaxReduceSources; ++j) {
      if (j >= op.nsrcs) continue;
      if (op.srcs[j].packets) {
        v[j] = LoadLine(ad.src[j] + 2 * o);
      } else {
        Load8(ad.src[j] + o, n, &v[j].x, &v[j].z);
        v[j].y = v[j].w = b.flag;
      }
    }
#pragma unroll
    for (int j = 0; j < kMaxReduceSources; ++j) {
      if (j >= op.nsrcs || (v[j].y == b.flag && v[j].w == b.flag)) continue;
      if (!b.Poll(ad.src[j] + 2 * o, op.peer, &v[j].x, &v[j].z)) return;
    }
    float acc[2] = {__uint_as_float(v[0].x), __uint_as_float(v[0].z)};
#pragma unroll
    for (int j = 1; j < kMaxReduceSources; ++j) {
      if (j < op.nsrcs && sum) {
        acc[0] += __uint_as_float(v[j].x);
        acc[1] += __uint_as_float(v[j].z);
      }
    }
    Store8(ad.dst + o, n, __float_as_uint(acc[0]), __float_as_uint(acc[1]));
  }
}

// A signal or wait, by one thread. The k-th signal of execution e raises the count to
// (e - 1) * per_call + k (one thread block signals each semaphore); the matching wait waits for it.
// Counts so computed stay right whatever instances earlier executions used.
__device__ void RunSync(Block& b, const DeviceOp& op, int index) {
  const PlanLaunchArgs& a = b.a;
  const int tag = op.tag * a.instances + b.instance;
  const uint64_t count = (b.call - 1) * op.per_call + op.k;
  if (op.kind == kDevSignal) {
    uint64_t* word = a.semaphores[op.peer] + tag * kMaxWorkers + a.rank;
    if (op.relaxed) {
      RaiseRelaxed(word, count);
    } else {
      RaiseRelease(word, count);
    }
    return;
  }
  const uint64_t* word = a.semaphores[a.rank] + tag * kMaxWorkers + op.peer;
  for (uint32_t spins = 1; (op.relaxed ? LoadRelaxed(word) : LoadAcquire(word)) < count; ++spins) {
    if (b.TimedOut(spins)) {
      b.op = index;
      b.Fail(op.peer);
      return;
    }
  }
}

__device__ void RunOp(Block& b, const DeviceOp& op, const OpAddress& ad) {
  const PlanLaunchArgs& a = b.a;
  const int tag = op.tag * a.instances + b.instance;
  switch (op.kind) {
    case kDevPut:
    case kDevGet:
    case kDevCopy:
      if (op.srcs[0].packets) {
        SumWithPackets(b, op, ad, /*sum=*/false);
      } else {
        CopyBytes(ad.dst, ad.src[0], ad.bytes);
      }
      return;
    case kDevSignal:
    case kDevWait:
      return;  // RunSync
    case kDevReduce: {
      bool packets = false;
      for (int j = 0; j < op.nsrcs; ++j) packets = packets || op.srcs[j].packets;
      if (packets) {
        SumWithPackets(b, op, ad, /*sum=*/true);
      } else {
        SumPlain(ad.dst, ad.src, op.nsrcs, ad.bytes);
      }
      return;
    }
    case kDevPutPackets:
    case kDevReadPutPackets:
      for (uint64_t o = 8 * threadIdx.x; o < ad.bytes; o += 8 * blockDim.x) {
        uint32_t d0, d1;
        if (op.kind == kDevReadPutPackets) {
          if (!b.Poll(ad.src[0] + 2 * o, op.peer, &d0, &d1)) return;
        } else {
          Load8(ad.src[0] + o, ad.bytes - o < 8 ? ad.bytes - o : 8, &d0, &d1);
        }
        StoreLine(ad.dst + 2 * o, d0, d1, b.flag);
      }
      return;
    default:
      return;
  }
}

__global__ void __launch_bounds__(kPlanThreads) RunPlanKernel(const __grid_constant__ PlanLaunchArgs a) {
  FollowPreviousGrid();
  __shared__ uint64_t call_s;
  __shared__ int failed_s;
  __shared__ OpAddress addresses_s[kMaxThreadBlockOps];
  const int tb = static_cast<int>(blockIdx.x) / a.instances;
  const int first = a.tb_begin[tb], last = a.tb_begin[tb + 1];  // in flight with the counters below
  // Block b also advances the counters congruent to b modulo the grid, so all of them stay equal
  // whatever grid (instances) the next execution uses; its threads share the work.
  for (int c = blockIdx.x + (threadIdx.x + 1) * gridDim.x; c < kMaxPlanBlocks; c += blockDim.x * gridDim.x) {
    ++a.counters[c];
  }
  if (threadIdx.x == 0) {
    call_s = ++a.counters[blockIdx.x];
    failed_s = 0;
  }
  __syncthreads();
  Block b{a, call_s, PacketFlag(call_s), GlobalTimer(), tb, static_cast<int>(blockIdx.x) % a.instances, 0, &failed_s};
  for (int i = first + threadIdx.x; i < last; i += blockDim.x) {
    addresses_s[i - first] = Locate(b, a.ops[i]);
  }
  __syncthreads();
  for (int i = first; i < last;) {
    const DeviceOp& op = a.ops[i];
    const int n = op.batch;  // >= 1 at the start of a run
    b.op = i - first;
    if (op.sync & kDevSyncBefore) __syncthreads();
    if (!b.Failed()) {
      if (op.kind == kDevSignal || op.kind == kDevWait) {
        if (threadIdx.x < n) RunSync(b, a.ops[i + threadIdx.x], i + threadIdx.x - first);
      } else {
        RunOp(b, op, addresses_s[b.op]);
      }
    }
    if (a.ops[i + n - 1].sync & kDevSyncAfter) __syncthreads();
    i += n;
  }
}

}  // namespace

const void* PlanKernel() { return reinterpret_cast<const void*>(&RunPlanKernel); }

cudaError_t LaunchPlan(const PlanLaunchArgs& args, cudaStream_t stream, bool programmatic) {
  if (args.tbs <= 0) return cudaSuccess;
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(PlanBlocks(args));
  config.blockDim = dim3(PlanThreads(args));
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, RunPlanKernel, args);
}

}  // namespace vdev::channels::internal
