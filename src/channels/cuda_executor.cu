// The generic CUDA kernel that runs a channel plan: block b is instance b % instances of thread
// block b / instances and walks that thread block's ops (model and formats in docs/channels.md).
// Its ops are first resolved into shared memory (pointers, part lengths, semaphore words and
// counts), then run from there. Data syncs are __syncthreads; a run of signals or waits runs one per
// thread (release maximum / acquire poll, system scope); LL packets are polled by a warp's lanes
// together. Every poll is bounded by %globaltimer: a timeout is recorded in host-mapped memory
// (rank's thread block, op, peer) and the block skips its remaining work (its syncs still run, so no
// thread is left at a barrier). Instantiated for reduces of at most 2, 4 and 8 sources.
#include <cuda_runtime.h>

#include "internal/cuda_plan.h"
#include "src/runtime/internal/cuda_sync.cuh"

namespace vdev::channels::internal {
namespace {

using ::vdev::internal::FollowPreviousGrid;
using ::vdev::internal::GlobalTimer;
using ::vdev::internal::LoadAcquire;

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

// One op as a block runs it, resolved into shared memory: every pointer advanced to this block's
// part (scratch pointers into half 0; `scratch` marks them, and an odd execution adds the distance
// to half 1), the sources read as packets as a bit mask; for a signal or wait the semaphore word
// and the op's place among its semaphore's signals. Nothing in it depends on the execution, so a
// block resolves its ops once per (count, instances, element size) and keeps them in device memory
// (PlanLaunchArgs::table): a later execution of the same shape copies them into shared memory with
// one round trip instead of walking the plan. The op loop then reads nothing but this.
template <int S>
struct alignas(16) ResolvedOp {
  char* dst;
  const char* src[S];
  uint64_t bytes;       // data bytes of this block's part
  uint64_t* word;       // signals, waits, port signals: the semaphore word
  uint32_t k;           // and the op's place among that semaphore's signals (or waits) in an
  uint32_t per_call;    // execution, of per_call
  int8_t kind, sync, nsrcs, batch, relaxed, port;
  uint8_t packets;      // bit j: source j is read as LL packets
  uint16_t scratch;     // bit 0: dst, bit 1 + j: source j lies in scratch (half 0)
  int16_t peer;
};

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
  int* failed;  // shared: some thread of this block gave up (read while polling)
  mutable bool gave_up = false;  // this thread knows the block gave up: it skips the remaining ops

  // Records the first timeout of the launch; every thread of this block then skips its work: the
  // block's other threads learn it at their next data sync (__syncthreads_or) or poll.
  __device__ void Fail(int peer, int index) const {
    // Host-mapped: plain stores (a racing second failure may overwrite the first; both are real).
    volatile ChannelError* e = a.error;
    if (e->code == 0) {
      e->rank = a.rank;
      e->tb = tb;
      e->op = index;
      e->peer = peer;
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
  __device__ bool AwaitLine(const char* line, int peer, uint4* v) const {
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
          if (give_up && static_cast<int>(threadIdx.x & 31) == __ffs(lanes) - 1) Fail(peer, op);
          gave_up = true;
          return false;
        }
      }
    }
  }
};

// Up to 8 bytes at p (fewer at a chunk's end), as two words.
__device__ __forceinline__ void Load8(const char* p, uint64_t n, uint32_t* d0, uint32_t* d1) {
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    *d0 = v.x;
    *d1 = v.y;
    return;
  }
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
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    *reinterpret_cast<uint2*>(p) = make_uint2(d0, d1);
    return;
  }
  if (n == 8 && (reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    *reinterpret_cast<uint32_t*>(p) = d0;
    *reinterpret_cast<uint32_t*>(p + 4) = d1;
    return;
  }
  const uint32_t w[2] = {d0, d1};
  for (uint64_t k = 0; k < n; ++k) p[k] = reinterpret_cast<const char*>(w)[k];
}

// Independent 16-byte loads in flight per thread when copying.
constexpr int kUnroll = 4;

__device__ void CopyBytes(char* dst, const char* src, uint64_t n) {
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  uint64_t done = 0;
  if ((both & 15) == 0) {
    const uint64_t packs = n / 16;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (uint64_t i = threadIdx.x; i < packs; i += kUnroll * blockDim.x) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (i + u * blockDim.x < packs) v[u] = s[i + u * blockDim.x];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (i + u * blockDim.x < packs) d[i + u * blockDim.x] = v[u];
      }
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
template <int S>
__device__ __forceinline__ void SumPlain(char* dst, const char* const (&srcs)[S], int nsrcs, uint64_t n) {
  uintptr_t all = reinterpret_cast<uintptr_t>(dst);
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j < nsrcs) all |= reinterpret_cast<uintptr_t>(srcs[j]);
  }
  uint64_t done = 0;
  if ((all & 15) == 0) {
    const uint64_t packs = n / 16;
    for (uint64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      // Every source's load is issued before the first add: one memory round trip, not nsrcs.
      float4 v[S];
#pragma unroll
      for (int j = 0; j < S; ++j) {
        if (j < nsrcs) v[j] = reinterpret_cast<const float4*>(srcs[j])[i];
      }
      float4 acc = v[0];
#pragma unroll
      for (int j = 1; j < S; ++j) {
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

// Where chunk reference c starts (scratch: in half 0).
__device__ char* At(const PlanLaunchArgs& a, const DeviceRef& c) {
  char* region = a.regions[c.rank];
  char* base = region + (c.buffer == kDevInput    ? a.layout.input
                         : c.buffer == kDevOutput ? a.layout.output
                                                  : a.layout.scratch[0]);
  if (c.packets) return base + 16 * PacketLine(a.count, a.chunks_per_segment, c.index, a.elem);
  return base + ChunkBegin(a.count, a.chunks_per_segment, c.index) * a.elem;
}

// Resolves op `op` for instance `instance` (one thread per op).
template <int S>
__device__ __noinline__ void Resolve(const PlanLaunchArgs& a, int instance, const DeviceOp& op, ResolvedOp<S>* out) {
  ResolvedOp<S> r{};
  r.kind = op.kind;
  r.sync = op.sync;
  r.nsrcs = op.nsrcs;
  r.batch = op.batch;
  r.relaxed = op.relaxed;
  r.peer = op.peer;
  r.port = op.port;
  const int tag = op.tag * a.instances + instance;
  if (op.kind == kDevSignal || op.kind == kDevPortSignal || (op.kind == kDevPortPut && (op.port & kDevWithSignal))) {
    r.word = a.semaphores[op.peer] + tag * kMaxWorkers + a.rank;
  } else if (op.kind == kDevWait) {
    r.word = a.semaphores[a.rank] + tag * kMaxWorkers + op.peer;
  }
  r.k = op.k;
  r.per_call = op.per_call;
  if (op.nsrcs > 0) {
    const int parts = op.parts * a.instances, part = op.part * a.instances + instance;
    const Range whole = ChunkBytes(a.count, a.chunks_per_segment, op.dst.index, op.dst.count, a.elem);
    const Range p = PartOf(whole.size(), part, parts);
    r.bytes = p.size();
    r.dst = At(a, op.dst) + (op.dst.packets ? 2 * p.begin : p.begin);
    r.scratch = op.dst.buffer == kDevScratch ? 1 : 0;
    for (int j = 0; j < op.nsrcs && j < S; ++j) {
      r.src[j] = At(a, op.srcs[j]) + (op.srcs[j].packets ? 2 * p.begin : p.begin);
      if (op.srcs[j].packets) r.packets |= static_cast<uint8_t>(1u << j);
      if (op.srcs[j].buffer == kDevScratch) r.scratch |= static_cast<uint16_t>(2u << j);
    }
  }
  *out = r;
}

// A reduce or copy with packet sources: one 16-byte line (8 data bytes) per thread and step. Every
// source's line is loaded at once; the lanes then wait together for those that had not arrived, in
// order, so lines that already landed cost one memory round trip together.
template <int S>
__device__ __forceinline__ void SumWithPackets(const Block& b, const Operands<S>& op, bool sum) {
  const int nsrcs = op.nsrcs;
  const unsigned packets = op.packets;
  const int peer = op.peer;
  const uint64_t bytes = op.bytes;
  char* const dst = op.dst;
  const char* const* src = op.src;
  for (uint64_t o = 8 * threadIdx.x; o < bytes; o += 8 * blockDim.x) {
    const uint64_t n = bytes - o < 8 ? bytes - o : 8;
    uint4 v[S];
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (j >= nsrcs) continue;
      if (packets & (1u << j)) {
        v[j] = LoadLine(src[j] + 2 * o);
      } else {
        Load8(src[j] + o, n, &v[j].x, &v[j].z);
        v[j].y = v[j].w = b.flag;
      }
    }
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (j < nsrcs && (packets & (1u << j)) && !b.AwaitLine(src[j] + 2 * o, peer, &v[j])) return;
    }
    float acc[2] = {__uint_as_float(v[0].x), __uint_as_float(v[0].z)};
    if (sum) {
#pragma unroll
      for (int j = 1; j < S; ++j) {
        if (j < nsrcs) {
          acc[0] += __uint_as_float(v[j].x);
          acc[1] += __uint_as_float(v[j].z);
        }
      }
    }
    Store8(dst + o, n, __float_as_uint(acc[0]), __float_as_uint(acc[1]));
  }
}

// A signal or wait, by one thread. The k-th signal of execution e raises the count to
// (e - 1) * per_call + k (one thread block signals each semaphore); the matching wait waits for it.
// Counts so computed stay right whatever instances earlier executions used.
template <int S>
__device__ __forceinline__ void RunSync(const Block& b, const ResolvedOp<S>& op, uint64_t call, int index) {
  uint64_t* word = op.word;
  const uint64_t count = (call - 1) * op.per_call + op.k;
  const bool relaxed = op.relaxed;
  if (op.kind == kDevSignal) {
    if (relaxed) {
      RaiseRelaxed(word, count);
    } else {
      RaiseRelease(word, count);
    }
    return;
  }
  for (uint32_t spins = 1; (relaxed ? LoadRelaxed(word) : LoadAcquire(word)) < count; ++spins) {
    if ((spins & 1023) == 0) {
      if (b.TimedOut()) {
        b.Fail(op.peer, index);
        return;
      }
      if (b.Failed()) return;
    }
  }
}


// A run of n puts (or put_packets) of one source to n destinations: each unit of the source is
// loaded once and stored to every destination, as the hand-written kernels send to all peers.
template <int S>
__device__ __forceinline__ void RunFusedPuts(const Block& b, const ResolvedOp<S>* ops, int n, uint64_t shift) {
  const Operands<S> first(ops[0], shift);
  char* dst[S];
  uintptr_t all = reinterpret_cast<uintptr_t>(first.src[0]);
#pragma unroll
  for (int d = 0; d < S; ++d) {
    if (d < n) {
      dst[d] = ops[d].dst + ((ops[d].scratch & 1) ? shift : 0);
      all |= reinterpret_cast<uintptr_t>(dst[d]);
    }
  }
  const char* const src = first.src[0];
  const uint64_t bytes = first.bytes;
  if (ops[0].kind == kDevPutPackets) {
    for (uint64_t o = 8 * threadIdx.x; o < bytes; o += 8 * blockDim.x) {
      uint32_t d0, d1;
      Load8(src + o, bytes - o < 8 ? bytes - o : 8, &d0, &d1);
#pragma unroll
      for (int d = 0; d < S; ++d) {
        if (d < n) StoreLine(dst[d] + 2 * o, d0, d1, b.flag);
      }
    }
    return;
  }
  uint64_t done = 0;
  if ((all & 15) == 0) {
    const uint64_t packs = bytes / 16;
    for (uint64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      const uint4 v = reinterpret_cast<const uint4*>(src)[i];
#pragma unroll
      for (int d = 0; d < S; ++d) {
        if (d < n) reinterpret_cast<uint4*>(dst[d])[i] = v;
      }
    }
    done = packs * 16;
  }
  for (uint64_t i = done + threadIdx.x; i < bytes; i += blockDim.x) {
    const char v = src[i];
#pragma unroll
    for (int d = 0; d < S; ++d) {
      if (d < n) dst[d][i] = v;
    }
  }
}

// A port op, by thread 0 between two data syncs. A put or signal takes a ticket, waits (bounded) for
// its FIFO slot to be free, writes the request and then its seq after a system fence (so the proxy
// never reads half a request, and the copy engine sees the data the block wrote before the sync);
// `*issued` becomes the tickets this block must see done. A flush waits until the proxy has
// finished them.
template <int S>
__device__ __noinline__ void RunPort(const Block& b, const ResolvedOp<S>& op, uint64_t call, uint64_t shift, int index,
                        uint64_t* issued) {
  PortFifo* fifo = b.a.port_fifo;
  if (op.kind != kDevPortFlush) {
    const Operands<S> data(op, shift);
    const unsigned long long ticket = atomicAdd(b.a.port_tickets, 1ull);
    for (uint32_t spins = 1; ticket >= LoadAcquire(&fifo->done) + kPortFifoSlots; ++spins) {
      if ((spins & 1023) == 0 && b.TimedOut()) {
        b.Fail(op.peer, index);
        return;
      }
    }
    volatile PortRequest* q = &fifo->slots[ticket % kPortFifoSlots];
    const bool put = op.kind == kDevPortPut;
    q->dst = put ? reinterpret_cast<uint64_t>(data.dst) : 0;
    q->src = put ? reinterpret_cast<uint64_t>(data.src[0]) : 0;
    q->bytes = put ? data.bytes : 0;
    q->semaphore = reinterpret_cast<uint64_t>(op.word);
    q->count = op.word != nullptr ? (call - 1) * op.per_call + op.k : 0;
    __threadfence_system();
    q->seq = ticket + 1;
    *issued = ticket + 1;
    if (!(op.port & kDevWithFlush)) return;
  }
  for (uint32_t spins = 1; LoadAcquire(&fifo->done) < *issued; ++spins) {
    if ((spins & 1023) == 0 && b.TimedOut()) {
      b.Fail(op.peer, index);
      return;
    }
  }
}

template <int S>
__device__ __forceinline__ void RunOp(const Block& b, const ResolvedOp<S>& resolved, uint64_t shift) {
  const Operands<S> op(resolved, shift);
  switch (resolved.kind) {
    case kDevPut:
    case kDevGet:
    case kDevCopy:
      if (op.packets & 1) {
        SumWithPackets<S>(b, op, /*sum=*/false);
      } else {
        CopyBytes(op.dst, op.src[0], op.bytes);
      }
      return;
    case kDevReduce:
      if (op.packets != 0) {
        SumWithPackets<S>(b, op, /*sum=*/true);
      } else {
        SumPlain<S>(op.dst, op.src, op.nsrcs, op.bytes);
      }
      return;
    case kDevPutPackets:
    case kDevReadPutPackets: {
      const bool read = resolved.kind == kDevReadPutPackets;
      for (uint64_t o = 8 * threadIdx.x; o < op.bytes; o += 8 * blockDim.x) {
        uint4 v;
        if (read) {
          v = LoadLine(op.src[0] + 2 * o);
          if (!b.AwaitLine(op.src[0] + 2 * o, op.peer, &v)) return;
        } else {
          Load8(op.src[0] + o, op.bytes - o < 8 ? op.bytes - o : 8, &v.x, &v.z);
        }
        StoreLine(op.dst + 2 * o, v.x, v.z, b.flag);
      }
      return;
    }
    default:
      return;
  }
}

// The key of a block's resolved ops: what they depend on besides the plan and the regions (never 0,
// which a zeroed table holds).
__device__ __forceinline__ uint64_t TableKey(const PlanLaunchArgs& a) {
  return ((a.count * 16 + static_cast<uint64_t>(a.elem)) * (kMaxPlanBlocks + 1) + static_cast<uint64_t>(a.instances)) * 2 + 1;
}

// Tracing (PlanLaunchArgs::trace): thread 0 stamps at the points of PlanTraceSlot, into the half of
// the buffer that the execution's parity selects.
__device__ __forceinline__ void Stamp(const PlanLaunchArgs& a, uint64_t call, int slot, long long value) {
  if (a.trace != nullptr && threadIdx.x == 0) {
    a.trace[((call & 1) * kMaxPlanBlocks + blockIdx.x) * kPlanTraceSlots + slot] = value;
  }
}

template <int S>
__global__ void __launch_bounds__(kPlanThreads, 1) RunPlanKernel(const __grid_constant__ PlanLaunchArgs a) {
  const long long entry = clock64();
  FollowPreviousGrid();
  const long long started = clock64();
  const long long started_ns = a.trace != nullptr ? static_cast<long long>(GlobalTimer()) : 0;
  __shared__ uint64_t call_s;
  __shared__ ResolvedTableKey key_s;
  __shared__ int failed_s;
  __shared__ ResolvedOp<S> ops_s[kMaxThreadBlockOps];
  const int tb = static_cast<int>(blockIdx.x) / a.instances;
  const int instance = static_cast<int>(blockIdx.x) % a.instances;
  const uint64_t key = TableKey(a);
  // In flight together: the epoch counters, this block's table key and its resolved ops (used if
  // the key matches). Block b also advances the counters congruent to b modulo the grid, so all of
  // them stay equal whatever grid (instances) the next execution uses; its threads share the work.
  for (int c = blockIdx.x + (threadIdx.x + 1) * gridDim.x; c < kMaxPlanBlocks; c += blockDim.x * gridDim.x) {
    ++a.counters[c];
  }
  if (threadIdx.x == 0) {
    call_s = ++a.counters[blockIdx.x];
    key_s = a.table_keys[blockIdx.x];
    failed_s = 0;
  }
  constexpr int kUnits = sizeof(ResolvedOp<S>) / 16;
  uint4* table = reinterpret_cast<uint4*>(a.table) + static_cast<size_t>(blockIdx.x) * a.max_tb_ops * kUnits;
  for (int u = threadIdx.x; u < a.max_tb_ops * kUnits; u += blockDim.x) reinterpret_cast<uint4*>(ops_s)[u] = table[u];
  __syncthreads();
  const uint64_t call = call_s;
  Stamp(a, call, kTraceCounted, clock64());
  Stamp(a, call, kTraceEntry, entry);
  Stamp(a, call, kTraceStart, started);
  Stamp(a, call, kTraceStartNs, started_ns);
  int nops = static_cast<int>(key_s.ops);
  if (key_s.key != key) {  // the first execution of this shape: resolve and keep
    const int first = a.tb_begin[tb], last = a.tb_begin[tb + 1];
    nops = last - first;
    __syncthreads();  // every thread has read key_s
    for (int i = first + threadIdx.x; i < last; i += blockDim.x) Resolve<S>(a, instance, a.ops[i], &ops_s[i - first]);
    __syncthreads();
    for (int u = threadIdx.x; u < nops * kUnits; u += blockDim.x) table[u] = reinterpret_cast<const uint4*>(ops_s)[u];
    // Read by a later execution of this rank, which starts after this grid has finished.
    if (threadIdx.x == 0) a.table_keys[blockIdx.x] = ResolvedTableKey{key, static_cast<uint64_t>(nops)};
  }
  Stamp(a, call, kTraceResolved, clock64());
  Block b{a, PacketFlag(call), 0, tb, 0, &failed_s};
  const uint64_t shift = (call & 1) ? a.layout.scratch[1] - a.layout.scratch[0] : 0;
  uint64_t issued = 0;  // thread 0: port requests of this block to be done before a flush returns
  for (int i = 0; i < nops;) {
    const ResolvedOp<S>& op = ops_s[i];
    const int kind = op.kind, n = op.batch;  // n >= 1 at the start of a run
    const bool port = kind == kDevPortPut || kind == kDevPortSignal || kind == kDevPortFlush;
    b.op = i;
    if ((op.sync & kDevSyncBefore) || port) b.Sync();
    if (!b.gave_up) {
      if (port) {
        if (threadIdx.x == 0) RunPort<S>(b, op, call, shift, i, &issued);
      } else if (kind == kDevSignal || kind == kDevWait) {
        if (static_cast<int>(threadIdx.x) < n) RunSync<S>(b, ops_s[i + threadIdx.x], call, i + threadIdx.x);
      } else if (n > 1) {
        RunFusedPuts<S>(b, &ops_s[i], n, shift);
      } else {
        RunOp<S>(b, op, shift);
      }
    }
    if ((ops_s[i + n - 1].sync & kDevSyncAfter) || port) b.Sync();
    Stamp(a, call, kTraceOps + i, clock64());
    i += n;
  }
  if (a.trace != nullptr) Stamp(a, call, kTraceEndNs, static_cast<long long>(GlobalTimer()));
}

// The kernel instance for the plan's widest reduce (fewer registers for fewer sources).
using PlanKernelFn = void (*)(PlanLaunchArgs);
PlanKernelFn KernelFor(const PlanLaunchArgs& a) {
  switch (KernelSources(a.max_srcs)) {
    case 2: return RunPlanKernel<2>;
    case 4: return RunPlanKernel<4>;
    default: return RunPlanKernel<8>;
  }
}

}  // namespace

size_t ResolvedTableBytes(int max_srcs, int max_tb_ops) {
  const int sources = KernelSources(max_srcs);
  const size_t op = sources == 2 ? sizeof(ResolvedOp<2>) : sources == 4 ? sizeof(ResolvedOp<4>) : sizeof(ResolvedOp<8>);
  return op * static_cast<size_t>(kMaxPlanBlocks) * static_cast<size_t>(max_tb_ops);
}

const void* PlanKernel(const PlanLaunchArgs& args) { return reinterpret_cast<const void*>(KernelFor(args)); }

cudaError_t LaunchPlan(const PlanLaunchArgs& args, cudaStream_t stream, bool programmatic) {
  if (args.tbs <= 0) return cudaSuccess;
  if (args.uses_ports && (args.port_fifo == nullptr || args.port_tickets == nullptr)) return cudaErrorInvalidValue;
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(PlanBlocks(args));
  config.blockDim = dim3(PlanThreads(args));
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, KernelFor(args), args);
}

}  // namespace vdev::channels::internal
