// The steps of the plan kernel (cuda_executor.cu): copies and sums (f32, f16, bf16: in f32), LL packet sends and sums,
// signals and waits, fused runs of puts, and port requests to the rank's proxy. Each is run by every
// thread of a block (signals and waits: one thread each; port requests: thread 0). Device code,
// included by cuda_executor.cu and by compiled plans (internal/compiled_plan.h).
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_STEPS_CUH_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_STEPS_CUH_

#include "internal/cuda_plan_block.cuh"

namespace vdev::channels::internal {

// Independent 16-byte loads in flight per thread when copying.
inline constexpr int kUnroll = 4;

__device__ inline void CopyBytes(char* dst, const char* src, uint64_t n) {
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

// dst = srcs[0] + srcs[1] + ... of elements T, summed in f32 from -0.0 and rounded once
// (cuda_elem.cuh), 16 bytes a thread when every pointer allows.
template <int S, typename T>
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
      uint4 v[S];
#pragma unroll
      for (int j = 0; j < S; ++j) {
        if (j < nsrcs) v[j] = reinterpret_cast<const uint4*>(srcs[j])[i];
      }
      float acc[kPer<T>];
      StartSums(acc);
#pragma unroll
      for (int j = 0; j < S; ++j) {
        if (j < nsrcs) AddPack<T>(acc, v[j]);
      }
      reinterpret_cast<uint4*>(dst)[i] = ToPack<T>(acc);
    }
    done = packs * 16;
  }
  for (uint64_t i = done / sizeof(T) + threadIdx.x; i < n / sizeof(T); i += blockDim.x) {
    float acc = -0.0f;
#pragma unroll  // constant indices: srcs stays in registers
    for (int j = 0; j < S; ++j) {
      if (j < nsrcs) acc += Elem<T>::ToF(reinterpret_cast<const T*>(srcs[j])[i]);
    }
    reinterpret_cast<T*>(dst)[i] = Elem<T>::FromF(acc);
  }
}

// Waits until every lane that arrives here with this one holds a complete line in v[j] for each packet
// source j of `op`: each round reloads every source still pending, together, so the sources that
// arrive late cost one memory round trip together, not one each. (Awaiting them one after another —
// Block::AwaitLine per source — cost 1.28-1.52x the hand-written LL kernel's time on 8 ranks sharing
// one H100, against 0.99-1.02x this way.) False when the block gave up.
template <int S>
__device__ __forceinline__ bool AwaitLines(const Block& b, const Operands<S>& op, uint64_t o, uint4 (&v)[S]) {
  uint32_t pending = 0;
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j < op.nsrcs && (op.packets & (1u << j)) && !b.Complete(v[j])) pending |= 1u << j;
  }
  const unsigned lanes = __activemask();
  if (!__any_sync(lanes, pending != 0)) return true;
  for (uint32_t spins = 1;; ++spins) {
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (pending & (1u << j)) v[j] = LoadLine(op.src[j] + 2 * o);
    }
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if ((pending & (1u << j)) && b.Complete(v[j])) pending &= ~(1u << j);
    }
    if (!__any_sync(lanes, pending != 0)) return true;
    if ((spins & 1023) == 0) {
      const bool give_up = __any_sync(lanes, b.TimedOut());
      if (give_up || b.Failed()) {
        if (give_up && pending != 0) {
          uint32_t seen = 0;
#pragma unroll
          for (int j = S - 1; j >= 0; --j) seen = (pending & (1u << j)) ? v[j].y : seen;
          b.Fail(op.peer, b.op, seen, b.flag);
        }
        b.gave_up = true;
        return false;
      }
    }
  }
}

// One 16-byte line (8 data bytes at offset o) of a reduce or copy with packet sources. Every
// source's line is loaded at once; the lanes then wait together for those that had not arrived
// (AwaitLines), so lines that already landed cost one memory round trip together. Source `own` (-1: none)
// is taken from `own_data` instead of memory (a value this thread has just sent). False when the
// block gave up.
template <int S, typename T>
__device__ __forceinline__ bool SumPacketLine(const Block& b, const Operands<S>& op, uint64_t o, bool sum, int own,
                                              uint2 own_data) {
  const uint64_t n = op.bytes - o < 8 ? op.bytes - o : 8;
  uint4 v[S];
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j >= op.nsrcs) continue;
    if (op.packets & (1u << j)) {
      v[j] = LoadLine(op.src[j] + 2 * o);
    } else {
      const uint2 d = j == own ? own_data : Load8(op.src[j] + o, n);
      v[j] = make_uint4(d.x, b.flag, d.y, b.flag);
    }
  }
  if (!AwaitLines<S>(b, op, o, v)) return false;
  if (!sum) {
    Store8(op.dst + o, n, make_uint2(v[0].x, v[0].z));
    return true;
  }
  float acc[8 / sizeof(T)];
  StartSums(acc);
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j < op.nsrcs) AddPack<T>(acc, make_uint2(v[j].x, v[j].z));
  }
  Store8(op.dst + o, n, ToPack<T, uint2>(acc));
  return true;
}

template <int S, typename T>
__device__ __forceinline__ void SumWithPackets(const Block& b, const Operands<S>& op, bool sum) {
  for (uint64_t o = 8 * threadIdx.x; o < op.bytes; o += 8 * blockDim.x) {
    if (!SumPacketLine<S, T>(b, op, o, sum, -1, uint2{})) return;
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
        b.Fail(op.peer, index, LoadRelaxed(word), count);
        return;
      }
      if (b.Failed()) return;
    }
  }
}

// The destinations of a run of n puts (or put_packets) of one source in this execution, and
// whether all of them and the source are 16-byte aligned.
template <int S>
struct PutRun {
  char* dst[S];
  const char* src;
  uint64_t bytes;
  bool aligned;

  __device__ PutRun(const ResolvedOp<S>* ops, int n, uint64_t shift) {
    const Operands<S> first(ops[0], shift);
    src = first.src[0];
    bytes = first.bytes;
    uintptr_t all = reinterpret_cast<uintptr_t>(src);
#pragma unroll
    for (int d = 0; d < S; ++d) {
      if (d < n) {
        dst[d] = ops[d].dst + ((ops[d].scratch & 1) ? shift : 0);
        all |= reinterpret_cast<uintptr_t>(dst[d]);
      }
    }
    aligned = (all & 15) == 0;
  }
  // The 8 bytes at offset o (fewer at the end).
  __device__ __forceinline__ uint2 Load(uint64_t o) const { return Load8(src + o, bytes - o < 8 ? bytes - o : 8); }
  // Sends d, the 8 bytes at offset o, as a packet line to every destination.
  __device__ __forceinline__ void SendLine(uint64_t o, uint2 d, int n, uint32_t flag) const {
#pragma unroll
    for (int k = 0; k < S; ++k) {
      if (k < n) StoreLine(dst[k] + 2 * o, d, flag);
    }
  }
  // Sends this thread's lines (offsets o, o + stride, ...), two at a time: both loads go out before
  // the first store (a line's store is asm with a memory clobber, which no load may pass).
  __device__ __forceinline__ void SendAll(uint64_t o, uint64_t stride, int n, uint32_t flag) const {
    for (; o < bytes; o += 2 * stride) {
      const uint2 d0 = Load(o);
      const bool second = o + stride < bytes;
      const uint2 d1 = second ? Load(o + stride) : uint2{0, 0};
      SendLine(o, d0, n, flag);
      if (second) SendLine(o + stride, d1, n, flag);
    }
  }
};

// A run of n puts (or put_packets) of one source to n destinations: each unit of the source is
// loaded once and stored to every destination, as the hand-written kernels send to all peers.
template <int S>
__device__ __forceinline__ void RunFusedPuts(const Block& b, const ResolvedOp<S>* ops, int n, uint64_t shift) {
  const PutRun<S> run(ops, n, shift);
  if (ops[0].kind == kDevPutPackets) {
    run.SendAll(8 * threadIdx.x, 8 * blockDim.x, n, b.flag);
    return;
  }
  uint64_t done = 0;
  if (run.aligned) {
    const uint64_t packs = run.bytes / 16;
    for (uint64_t i = threadIdx.x; i < packs; i += blockDim.x) {
      const uint4 v = reinterpret_cast<const uint4*>(run.src)[i];
#pragma unroll
      for (int d = 0; d < S; ++d) {
        if (d < n) reinterpret_cast<uint4*>(run.dst[d])[i] = v;
      }
    }
    done = packs * 16;
  }
  for (uint64_t i = done + threadIdx.x; i < run.bytes; i += blockDim.x) {
    const char v = run.src[i];
#pragma unroll
    for (int d = 0; d < S; ++d) {
      if (d < n) run.dst[d][i] = v;
    }
  }
}

// Lines a thread keeps in registers between sending its own data and summing it
// (RunPacketsThenReduce). 4 spilled more in the 8-source kernel and was slower on 2 ranks (LL 1.59-1.89x
// the hand kernel's time against 1.50-1.86x with 2, measured on one H100).
inline constexpr int kOwnLines = 2;

// A run of n put_packets of one source and the reduce after it that sums that same source with
// packets (FlattenPlan's then_reduce), as one step. When this block's part is at most kOwnLines
// lines a thread, each thread sends all its lines and then sums them, keeping its own data in
// registers instead of loading it again — the order of sends and waits is the two ops' own (every
// send before any wait), so nothing can wait on a send this step holds back. Larger parts run the
// two ops one after the other.
template <int S, typename T>
__device__ __forceinline__ void RunPacketsThenReduce(const Block& b, const ResolvedOp<S>* ops, int n, uint64_t shift) {
  const PutRun<S> run(ops, n, shift);
  const Operands<S> reduce(ops[n], shift);
  int own = -1;
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j < reduce.nsrcs && !(reduce.packets & (1u << j))) own = j;
  }
  const uint64_t stride = 8 * blockDim.x;
  if (run.bytes > kOwnLines * stride) {
    run.SendAll(8 * threadIdx.x, stride, n, b.flag);
    SumWithPackets<S, T>(b, reduce, /*sum=*/true);
    return;
  }
  uint2 mine[kOwnLines];  // every load before the first send, as in SendAll
#pragma unroll
  for (int l = 0; l < kOwnLines; ++l) {
    const uint64_t o = 8 * threadIdx.x + l * stride;
    if (o < run.bytes) mine[l] = run.Load(o);
  }
#pragma unroll
  for (int l = 0; l < kOwnLines; ++l) {
    const uint64_t o = 8 * threadIdx.x + l * stride;
    if (o < run.bytes) run.SendLine(o, mine[l], n, b.flag);
  }
  // Not unrolled (one line's sources in registers at a time); the own data picked by a select.
#pragma unroll 1
  for (int l = 0; l < kOwnLines; ++l) {
    const uint64_t o = 8 * threadIdx.x + l * stride;
    uint2 m = mine[0];
#pragma unroll
    for (int k = 1; k < kOwnLines; ++k) m = l == k ? mine[k] : m;
    if (o < run.bytes && !SumPacketLine<S, T>(b, reduce, o, /*sum=*/true, own, m)) return;
  }
}

// A port op, by thread 0 between two data syncs. A put or signal takes a ticket, waits (bounded) for
// its FIFO slot to be free, writes the request and then its seq after a system fence (so the proxy
// never reads half a request, and the copy engine sees the data the block wrote before the sync);
// `*issued` becomes the tickets this block must see done. A flush waits until the proxy has
// finished them. Inlined: as a call taking the Block by reference it kept the Block in local
// memory for the whole kernel (a 112-byte stack frame), and every step of every plan paid for that.
template <int S>
__device__ __forceinline__ void RunPort(const Block& b, const ResolvedOp<S>& op, uint64_t call, uint64_t shift,
                                        int index, uint64_t* issued) {
  PortFifo* fifo = b.a.port_fifo;
  if (op.kind != kDevPortFlush) {
    const Operands<S> data(op, shift);
    const unsigned long long ticket = atomicAdd(b.a.port_tickets, 1ull);
    for (uint32_t spins = 1; ticket >= LoadAcquire(&fifo->done) + kPortFifoSlots; ++spins) {
      if ((spins & 1023) == 0 && b.TimedOut()) {
        b.Fail(op.peer, index, LoadAcquire(&fifo->done), ticket + 1 - kPortFifoSlots);
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
      b.Fail(op.peer, index, LoadAcquire(&fifo->done), *issued);
      return;
    }
  }
}

template <int S, typename T>
__device__ __forceinline__ void RunOp(const Block& b, const ResolvedOp<S>& resolved, uint64_t shift) {
  const Operands<S> op(resolved, shift);
  switch (resolved.kind) {
    case kDevPut:
    case kDevGet:
    case kDevCopy:
      if (op.packets & 1) {
        SumWithPackets<S, T>(b, op, /*sum=*/false);
      } else {
        CopyBytes(op.dst, op.src[0], op.bytes);
      }
      return;
    case kDevReduce:
      if (op.packets != 0) {
        SumWithPackets<S, T>(b, op, /*sum=*/true);
      } else {
        SumPlain<S, T>(op.dst, op.src, op.nsrcs, op.bytes);
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
          const uint2 d = Load8(op.src[0] + o, op.bytes - o < 8 ? op.bytes - o : 8);
          v = make_uint4(d.x, 0, d.y, 0);
        }
        StoreLine(op.dst + 2 * o, make_uint2(v.x, v.z), b.flag);
      }
      return;
    }
    default: return;
  }
}

// The stale-packet sweep of execution `call` (layout.h, PacketSweepSlice): the grid's threads zero
// its slice of the rank's own scratch half but for the spans this execution's ops touch
// (a.spares). Run after the block's ops: while it runs, only those spans are written.
__device__ __noinline__ void SweepStalePackets(const PlanLaunchArgs& a, uint64_t call) {
  __shared__ uint64_t span_begin[kMaxSweepSpares], span_end[kMaxSweepSpares];
  const Range slice = PacketSweepSlice(call, a.layout.scratch[1] - a.layout.scratch[0]);
  if (slice.size() == 0) return;
  if (static_cast<int>(threadIdx.x) < a.num_spares) {
    const DeviceRef& c = a.spares[threadIdx.x];
    const Range span = ScratchSpan(a.count, a.chunks_per_segment, c.index, c.count, c.packets != 0, a.elem);
    span_begin[threadIdx.x] = span.begin;
    span_end[threadIdx.x] = span.end;
  }
  __syncthreads();
  auto spared = [&](uint64_t begin, uint64_t end) {
    for (int k = 0; k < a.num_spares; ++k) {
      if (span_begin[k] < end && begin < span_end[k]) return true;
    }
    return false;
  };
  char* half = a.regions[a.rank] + a.layout.scratch[call & 1];
  const uint64_t stride = 16ull * gridDim.x * blockDim.x;
  for (uint64_t u = slice.begin + 16ull * (blockIdx.x * blockDim.x + threadIdx.x); u < slice.end; u += stride) {
    if (!spared(u, u + 16)) {
      *reinterpret_cast<uint4*>(half + u) = make_uint4(0, 0, 0, 0);
      continue;
    }
    for (uint64_t b = u; b < u + 16; ++b) {  // a span's edge (data spans end on any element)
      if (!spared(b, b + 1)) half[b] = 0;
    }
  }
}

// Ends execution `call` of this block: block b advances the epoch counters congruent to b modulo
// the grid, so all of them stay equal whatever grid (instances) the next execution uses; after a
// barrier (every thread of the block has read its counter); the next grid reads them once this one
// has finished (griddepcontrol.wait).
__device__ __forceinline__ void AdvanceEpochCounters(const PlanLaunchArgs& a, uint64_t call) {
  __syncthreads();
  for (int c = blockIdx.x + threadIdx.x * gridDim.x; c < kMaxPlanBlocks; c += blockDim.x * gridDim.x) {
    a.counters[c] = call;
  }
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_STEPS_CUH_
