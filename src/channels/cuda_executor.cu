// The generic CUDA kernel that runs a channel plan: block b is instance b % instances of thread
// block b / instances and walks that thread block's ops (model and formats in docs/channels.md).
// Its ops are first resolved into shared memory (pointers, part lengths, semaphore words and
// counts), then run from there (cuda_plan_block.cuh; the steps in cuda_plan_steps.cuh). Data syncs
// are __syncthreads; a run of signals or waits runs one per thread (release maximum / acquire poll,
// system scope); LL packets are polled by a warp's lanes together. Every poll is bounded by
// %globaltimer: a timeout is recorded in host-mapped memory (rank's thread block, op, peer) and the
// block skips its remaining work (its syncs still run, so no thread is left at a barrier).
// Instantiated for reduces of at most 2, 4 and 8 sources, each for f32, f16 and bf16.
#include <cuda_runtime.h>

#include "internal/cuda_plan.h"
#include "internal/cuda_plan_steps.cuh"

namespace vdev::channels::internal {
namespace {

using ::vdev::internal::FollowPreviousGrid;

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
  static_cast<OpControl&>(r) = op;
  const int tag = op.tag * a.instances + instance;
  if (op.kind == kDevSignal || op.kind == kDevPortSignal || (op.kind == kDevPortPut && (op.port & kDevWithSignal))) {
    r.word = a.semaphores[op.peer] + tag * kMaxWorkers + a.rank;
  } else if (op.kind == kDevWait) {
    r.word = a.semaphores[a.rank] + tag * kMaxWorkers + op.peer;
  }
  if (op.nsrcs > 0) {
    const int parts = op.parts * a.instances, part = op.part * a.instances + instance;
    const Range whole = ChunkBytes(a.count, a.chunks_per_segment, op.dst.index, op.dst.count, a.elem);
    const Range p = PartOf(whole.size(), part, parts);
    r.bytes = p.size();
    r.dst = At(a, op.dst) + (op.dst.packets ? 2 * p.begin : p.begin);
    for (int j = 0; j < op.nsrcs && j < S; ++j) {
      r.src[j] = At(a, op.srcs[j]) + (op.srcs[j].packets ? 2 * p.begin : p.begin);
    }
  }
  *out = r;
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

template <int S, typename T>
__global__ void __launch_bounds__(kPlanThreads, 1) RunPlanKernel(const __grid_constant__ PlanLaunchArgs a) {
  const long long entry = clock64();
  FollowPreviousGrid();
  const long long started = clock64();
  const long long started_ns = a.trace != nullptr ? static_cast<long long>(GlobalTimer()) : 0;
  __shared__ ResolvedTableKey key_s;
  __shared__ int failed_s;
  // Raw storage: ResolvedOp's OpControl has default member initialisers, which __shared__ forbids.
  __shared__ uint4 ops_raw[kMaxThreadBlockOps * sizeof(ResolvedOp<S>) / 16];
  ResolvedOp<S>* const ops_s = reinterpret_cast<ResolvedOp<S>*>(ops_raw);
  const int tb = static_cast<int>(blockIdx.x) / a.instances;
  const int instance = static_cast<int>(blockIdx.x) % a.instances;
  const uint64_t key = TableKey(a);
  // In flight together, with no store before them (the compiler keeps a load behind a store that
  // may alias it: three round trips where there is one, BENCHMARKS.md "Run 7"): this block's epoch
  // counter (every thread reads it: one broadcast load; the counters advance at the end), its table
  // key and its resolved ops (used if the key matches).
  const uint64_t call = a.counters[blockIdx.x] + 1;
  if (threadIdx.x == 0) {
    key_s = a.table_keys[blockIdx.x];
    failed_s = 0;
  }
  constexpr int kUnits = sizeof(ResolvedOp<S>) / 16;
  uint4* table = reinterpret_cast<uint4*>(a.table) + static_cast<size_t>(blockIdx.x) * a.max_tb_ops * kUnits;
  for (int u = threadIdx.x; u < a.max_tb_ops * kUnits; u += blockDim.x) ops_raw[u] = table[u];
  __syncthreads();
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
    for (int u = threadIdx.x; u < nops * kUnits; u += blockDim.x) table[u] = ops_raw[u];
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
    const int step = n + op.then_reduce;  // a put_packets run may take the reduce after it along
    b.op = i;
    if ((op.sync & kDevSyncBefore) || port) b.Sync();
    if (!b.gave_up) {
      if (port) {
        if (threadIdx.x == 0) RunPort<S>(b, op, call, shift, i, &issued);
      } else if (kind == kDevSignal || kind == kDevWait) {
        if (static_cast<int>(threadIdx.x) < n) RunSync<S>(b, ops_s[i + threadIdx.x], call, i + threadIdx.x);
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
    Stamp(a, call, kTraceOps + i, clock64());
    i += step;
  }
  if (a.trace != nullptr) Stamp(a, call, kTraceEndNs, static_cast<long long>(GlobalTimer()));
  // Block b advances the counters congruent to b modulo the grid, so all of them stay equal whatever
  // grid (instances) the next execution uses: after a barrier (every thread of the block has read
  // its counter); the next grid reads them once this one has finished (griddepcontrol.wait).
  __syncthreads();
  for (int c = blockIdx.x + threadIdx.x * gridDim.x; c < kMaxPlanBlocks; c += blockDim.x * gridDim.x) {
    a.counters[c] = call;
  }
}

// The kernel instance for the element type and the plan's widest reduce (fewer registers for fewer
// sources).
using PlanKernelFn = void (*)(PlanLaunchArgs);
template <typename T>
PlanKernelFn KernelFor(int max_srcs) {
  switch (KernelSources(max_srcs)) {
    case 2: return RunPlanKernel<2, T>;
    case 4: return RunPlanKernel<4, T>;
    default: return RunPlanKernel<8, T>;
  }
}
PlanKernelFn KernelFor(const PlanLaunchArgs& a) {
  switch (a.dtype) {
    case kDevF16: return KernelFor<__half>(a.max_srcs);
    case kDevBF16: return KernelFor<__nv_bfloat16>(a.max_srcs);
    default: return KernelFor<float>(a.max_srcs);
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
  return cudaLaunchKernelEx(&config, KernelFor(args), args);
}

}  // namespace vdev::channels::internal
