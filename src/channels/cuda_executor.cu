// The generic CUDA kernel that runs a channel plan: block b is instance b % instances of thread
// block b / instances and walks that thread block's ops (model and formats in docs/channels.md).
// Its ops are first resolved into shared memory (pointers, part lengths, semaphore words and
// counts), then run from there (cuda_plan_block.cuh; the steps in cuda_plan_steps.cuh). Data syncs
// are __syncthreads; a run of signals or waits runs one per thread (release maximum / acquire poll,
// system scope), a signal run and the wait run after it as one step; LL packets are polled by a
// warp's lanes together. Every poll is bounded by %globaltimer: a timeout is recorded in
// host-mapped memory (rank's thread block, op, peer) and the block skips its remaining work (its
// syncs still run, so no thread is left at a barrier).
// Instantiated for reduces of at most 2, 4 and 8 sources, each for f32, f16 and bf16; 8 sources also
// for blocks of at most 256 threads (KernelFor).
#include <cuda_runtime.h>

#include "internal/cuda_plan.h"
#include "internal/cuda_plan_steps.cuh"

namespace vdev::channels::internal {
namespace {

using ::vdev::internal::FollowPreviousGrid;

// Resolves op `op` for instance `instance` (one thread per op). Not inlined: the kernel's
// registers are for its steps.
template <int S>
__device__ __noinline__ void Resolve(const PlanLaunchArgs& a, int instance, const DeviceOp& op, ResolvedOp<S>* out) {
  *out = ResolveOp<S>(a, instance, op);
}

// The key of a block's resolved ops: what they depend on besides the plan and the regions (never 0,
// which a zeroed table holds).
__device__ __forceinline__ uint64_t TableKey(const PlanLaunchArgs& a) {
  return ((a.count * 16 + static_cast<uint64_t>(a.elem)) * (kMaxPlanBlocks + 1) + static_cast<uint64_t>(a.instances)) *
             2 +
         1;
}

// Tracing (PlanLaunchArgs::trace): thread 0 stamps at the points of PlanTraceSlot, into the half of
// the buffer that the execution's parity selects. The clock is read only when tracing: a read is
// volatile asm, which the compiler keeps where it stands, between loads it could otherwise overlap.
__device__ __forceinline__ void Stamp(const PlanLaunchArgs& a, uint64_t call, int slot, long long value) {
  if (a.trace != nullptr && threadIdx.x == 0) {
    a.trace[((call & 1) * kMaxPlanBlocks + blockIdx.x) * kPlanTraceSlots + slot] = value;
  }
}
__device__ __forceinline__ long long TraceClock(const PlanLaunchArgs& a) { return a.trace != nullptr ? clock64() : 0; }
// A stamp of the clock: read by thread 0 alone (a clock read by every thread, as
// Stamp(..., TraceClock(a)) would do, measured 0.01-0.03 slower on 2 ranks even untraced).
__device__ __forceinline__ void StampClock(const PlanLaunchArgs& a, uint64_t call, int slot) {
  if (a.trace != nullptr && threadIdx.x == 0) Stamp(a, call, slot, clock64());
}

__device__ __forceinline__ uint64_t LoadKeyAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void PrefetchL1(const char* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }

// The lines this thread's first step will read of the sources that are not scratch (whose half
// depends on the execution) nor packets (which arrive later): requested while the epoch counter and
// table key are on their way, so the step's own loads find them in L1 (one memory round trip before
// the first data access, as the hand-written kernels have).
template <int S>
__device__ __forceinline__ void PrefetchFirstSources(const ResolvedOp<S>& op) {
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j >= op.nsrcs || (op.packets >> j & 1) || (op.scratch >> (j + 1) & 1)) continue;
    for (const uint64_t o : {uint64_t{8} * threadIdx.x, uint64_t{16} * threadIdx.x}) {
      if (o < op.bytes) PrefetchL1(op.src[j] + o);
    }
  }
}

template <int S, typename T, int kThreads>
__global__ void __launch_bounds__(kThreads, 1) RunPlanKernel(const __grid_constant__ PlanLaunchArgs a) {
  const long long entry = TraceClock(a);
  __shared__ ResolvedTableKey key_s;
  __shared__ int failed_s;
  // Raw storage: ResolvedOp's OpControl has default member initialisers, which __shared__ forbids.
  __shared__ uint4 ops_raw[kMaxThreadBlockOps * sizeof(ResolvedOp<S>) / 16];
  ResolvedOp<S>* const ops_s = reinterpret_cast<ResolvedOp<S>*>(ops_raw);
  const int tb = static_cast<int>(blockIdx.x) / a.instances;
  const int instance = static_cast<int>(blockIdx.x) % a.instances;
  const uint64_t key = TableKey(a);
  constexpr int kUnits = sizeof(ResolvedOp<S>) / 16;
  uint4* table = reinterpret_cast<uint4*>(a.table) + static_cast<size_t>(blockIdx.x) * a.max_tb_ops * kUnits;
  // Before the previous grid has finished (programmatic launch: it may still run), the block's
  // resolved ops and their key. Only a grid of another shape rewrites them: its ops first, then,
  // after a fence, the key; read here in the other order, the key with acquire. So if the key read
  // now and the key read again after the wait are both this shape's, the ops read now are whole.
  // Every read of the table and its keys bypasses L1 (__ldcg), which may hold a line read before
  // the previous grid rewrote it (blocks' tables can share a line).
  if (threadIdx.x == 0) {
    key_s.key = LoadKeyAcquire(&a.table_keys[blockIdx.x].key);
    key_s.ops = __ldcg(&a.table_keys[blockIdx.x].ops);
    failed_s = 0;
  }
  __syncthreads();
  const bool preloaded = key_s.key == key;
  if (preloaded) {
    for (int u = threadIdx.x; u < a.max_tb_ops * kUnits; u += blockDim.x) ops_raw[u] = __ldcg(&table[u]);
  }
  __syncthreads();
  FollowPreviousGrid();
  const long long started = TraceClock(a);
  const long long started_ns = a.trace != nullptr ? static_cast<long long>(GlobalTimer()) : 0;
  // In flight together: this block's epoch counter and its table key (every thread reads both: one
  // broadcast load each; the counters advance at the end), and the first step's own data.
  const uint64_t call = a.counters[blockIdx.x] + 1;
  const uint64_t key_now = __ldcg(&a.table_keys[blockIdx.x].key);
  int nops = static_cast<int>(key_s.ops);
  if (preloaded && nops > 0) PrefetchFirstSources<S>(ops_s[0]);
  StampClock(a, call, kTraceCounted);
  Stamp(a, call, kTraceEntry, entry);
  Stamp(a, call, kTraceStart, started);
  Stamp(a, call, kTraceStartNs, started_ns);
  if (!preloaded || key_now != key) {  // the ops were rewritten, or this shape runs for the first time
    __syncthreads();                   // every thread has read key_s
    if (key_now == key) {              // the previous grid made them while they were read above: read again
      nops = static_cast<int>(__ldcg(&a.table_keys[blockIdx.x].ops));
      for (int u = threadIdx.x; u < nops * kUnits; u += blockDim.x) ops_raw[u] = __ldcg(&table[u]);
    } else {
      const int first = a.tb_begin[tb], last = a.tb_begin[tb + 1];
      nops = last - first;
      for (int i = first + threadIdx.x; i < last; i += blockDim.x) Resolve<S>(a, instance, a.ops[i], &ops_s[i - first]);
      __syncthreads();
      for (int u = threadIdx.x; u < nops * kUnits; u += blockDim.x) table[u] = ops_raw[u];
      __threadfence();  // the ops before the key (see above), for every thread's stores
      __syncthreads();
      if (threadIdx.x == 0) {
        a.table_keys[blockIdx.x].ops = static_cast<uint64_t>(nops);
        __threadfence();
        *reinterpret_cast<volatile uint64_t*>(&a.table_keys[blockIdx.x].key) = key;
      }
    }
    __syncthreads();
  }
  StampClock(a, call, kTraceResolved);
  Block b{a, PacketFlag(call), 0, tb, 0, &failed_s};
  const uint64_t shift = (call & 1) ? a.layout.scratch[1] - a.layout.scratch[0] : 0;
  uint64_t issued = 0;  // thread 0: port requests of this block to be done before a flush returns
  for (int i = 0; i < nops;) {
    const ResolvedOp<S>& op = ops_s[i];
    const int kind = op.kind, n = op.batch;  // n >= 1 at the start of a run
    const bool port = kind == kDevPortPut || kind == kDevPortSignal || kind == kDevPortFlush;
    // A put_packets run may take the reduce after it along, a signal run the wait run after it.
    const int m = op.then_wait ? ops_s[i + n].batch : 0;
    const int step = n + op.then_reduce + m;
    b.op = i;
    if ((op.sync & kDevSyncBefore) || port) b.Sync();
    if (!b.gave_up) {
      if (port) {
        if (threadIdx.x == 0) RunPort<S>(b, op, call, shift, i, &issued);
      } else if (kind == kDevSignal || kind == kDevWait) {
        const int t = static_cast<int>(threadIdx.x);
        if (t < n) RunSync<S>(b, ops_s[i + t], call, i + t);
        if (t < m && !b.gave_up) RunSync<S>(b, ops_s[i + n + t], call, i + n + t);
      } else if (op.then_reduce) {
        b.op = i + n;  // only the reduce waits (for packets)
        RunPacketsThenReduce<S, T>(b, &ops_s[i], n, shift);
      } else if (n > 1) {
        RunFusedPuts<S>(b, &ops_s[i], n, shift);
      } else {
        RunOp<S, T>(b, op, shift);
      }
    }
    if ((ops_s[i + step - 1].sync & kDevSyncAfter) || port) b.Sync();
    StampClock(a, call, kTraceOps + i);
    i += step;
  }
  // The sweep's own test first: most executions then call nothing.
  if (a.num_spares > 0 && SweepsPackets(call)) SweepStalePackets(a, call);
  if (a.trace != nullptr) Stamp(a, call, kTraceEndNs, static_cast<long long>(GlobalTimer()));
  AdvanceEpochCounters(a, call);
}

// The kernel instance for the element type, the plan's widest reduce (fewer registers for fewer
// sources) and the block's threads: 8 sources need more than the 128 registers a thread that 512
// threads allow (88 bytes spilled), so blocks of at most 256 threads get an instance of their own
// that may use up to 255 (kSmallPlanThreads).
using PlanKernelFn = void (*)(PlanLaunchArgs);
template <typename T>
PlanKernelFn KernelFor(int max_srcs, int threads) {
  switch (KernelSources(max_srcs)) {
    case 2: return RunPlanKernel<2, T, kPlanThreads>;
    case 4: return RunPlanKernel<4, T, kPlanThreads>;
    default:
      return threads <= kSmallPlanThreads ? RunPlanKernel<8, T, kSmallPlanThreads> : RunPlanKernel<8, T, kPlanThreads>;
  }
}
PlanKernelFn KernelFor(const PlanLaunchArgs& a) {
  const int threads = PlanThreads(a);
  switch (a.dtype) {
    case kDevF16: return KernelFor<__half>(a.max_srcs, threads);
    case kDevBF16: return KernelFor<__nv_bfloat16>(a.max_srcs, threads);
    default: return KernelFor<float>(a.max_srcs, threads);
  }
}

}  // namespace

size_t ResolvedTableBytes(int max_srcs, int max_tb_ops) {
  const int sources = KernelSources(max_srcs);
  const size_t op = sources == 2 ? sizeof(ResolvedOp<2>) : sources == 4 ? sizeof(ResolvedOp<4>) : sizeof(ResolvedOp<8>);
  return op * static_cast<size_t>(kMaxPlanBlocks) * static_cast<size_t>(max_tb_ops);
}

const void* PlanKernel(const PlanLaunchArgs& args) { return reinterpret_cast<const void*>(KernelFor(args)); }

cudaError_t LaunchPlan(const PlanLaunchArgs& args, cudaStream_t stream, bool programmatic, const void* kernel) {
  if (args.tbs <= 0) return cudaSuccess;
  if (args.uses_ports &&
      (args.port_fifo == nullptr || args.port_tickets == nullptr || args.port_semaphores[args.rank] == nullptr)) {
    return cudaErrorInvalidValue;
  }
  if (args.elem != (args.dtype == kDevF32 ? 4 : 2)) return cudaErrorInvalidValue;
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(PlanBlocks(args));
  config.blockDim = dim3(PlanThreads(args));
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = programmatic ? 1 : 0;
  if (kernel == nullptr) return cudaLaunchKernelEx(&config, KernelFor(args), args);
  void* params[] = {const_cast<PlanLaunchArgs*>(&args)};
  return cudaLaunchKernelExC(&config, kernel, params);
}

}  // namespace vdev::channels::internal
