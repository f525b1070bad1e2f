// What the plan kernels see of a plan: the device's op kinds and ops, the launch arguments, a
// block's resolved ops and how an op is resolved (the generic kernel does it on the GPU,
// cuda_executor.cu; a compiled plan on the host, internal/compiled_plan.h, so both agree by
// construction). Includes nothing the NVRTC compilation of a plan cannot: the fixed-width integers,
// layout.h, port_fifo.h and vdev/runtime/peer_group.h (kMaxWorkers; compiled_plan.cc gives NVRTC its own).
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_ARGS_H_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_ARGS_H_

#include <cstdint>

#include "internal/layout.h"
#include "internal/port_fifo.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::channels::internal {

// The device's own op kinds, buffers and syncs (UploadedPlan::Upload maps the language's onto them).
// A port channel's wait is a kDevWait marked kDevPortSemaphore: it polls this rank's port semaphore
// words, which the peers' proxies raise (internal/cuda_proxy.h), not the memory channels' ones.
enum DeviceOpKind : int8_t {
  kDevPut,
  kDevGet,
  kDevCopy,
  kDevSignal,
  kDevWait,
  kDevReduce,
  kDevPutPackets,
  kDevReadPutPackets,
  kDevPortPut,
  kDevPortSignal,
  kDevPortFlush
};
enum DevicePortFlags : int8_t { kDevWithSignal = 1, kDevWithFlush = 2, kDevPortSemaphore = 4 };
enum DeviceBuffer : int8_t { kDevInput, kDevOutput, kDevScratch };
enum DeviceSync : int8_t { kDevSyncBefore = 1, kDevSyncAfter = 2 };
// Element types of the sums (PlanLaunchArgs::dtype; elem is 4, 2, 2): f16 and bf16 sum in f32 and
// round once per reduce op, as the host executor does.
enum DeviceDType : int8_t { kDevF32, kDevF16, kDevBF16 };
// Semaphore words per rank: kMaxChannelTags x kMaxWorkers.
inline constexpr int kDeviceTags = 256;
static_assert(kPortSemaphoreWords == size_t{kDeviceTags} * kMaxWorkers);

// Sources of one reduce on the GPU (the shipped plans need at most the world size, 8).
inline constexpr int kMaxReduceSources = 8;
// Most puts of one source that the kernel runs as one step: KernelSources(max_srcs) (registers).
// Ops of one thread block: the kernel holds them, resolved, in shared memory.
inline constexpr int kMaxThreadBlockOps = 64;
// Blocks of one launch: one epoch counter each.
inline constexpr int kMaxPlanBlocks = 256;
// Scratch chunk references of one rank that the stale-packet sweep spares (layout.h): the kernel
// holds their byte spans in shared memory while it sweeps.
inline constexpr int kMaxSweepSpares = 64;

struct DeviceRef {
  int32_t index = 0;
  int32_t count = 0;
  int8_t rank = 0;
  int8_t buffer = 0;  // DeviceBuffer
  int8_t packets = 0;
  int8_t pad = 0;
};

// What the kernel needs of an op besides its operands: carried unchanged from the DeviceOp into the
// kernel's resolved op (cuda_plan_block.cuh), so both derive from it.
struct OpControl {
  int8_t kind = 0;  // DeviceOpKind
  int8_t sync = 0;  // DeviceSync bits
  int8_t relaxed = 0;
  int8_t nsrcs = 0;
  int8_t batch = 1;        // signals/waits: this and the next batch-1 run in parallel; 0: run by an earlier op
  int8_t port = 0;         // port puts and waits: DevicePortFlags
  int8_t then_reduce = 0;  // a put_packets run: the reduce after it runs in the same step (FlattenPlan)
  int8_t then_wait = 0;    // a signal run: the wait run after it runs in the same step (FlattenPlan)
  uint8_t packets = 0;     // bit j: source j is read as LL packets
  int16_t peer = -1;       // the channel's other rank
  uint16_t scratch = 0;    // bit 0: dst, bit 1 + j: source j lies in scratch (the kernel adds the half)
  uint32_t k = 0;          // signals and waits: the k-th of its semaphore in an execution
  uint32_t per_call = 0;   // and the semaphore's signals (= waits) per execution
};

struct DeviceOp : OpControl {
  DeviceRef dst;
  DeviceRef srcs[kMaxReduceSources];
  int16_t part = 0;
  int16_t parts = 1;
  int16_t tag = 0;
};

// Written (first failure only) into host-mapped memory when a wait times out.
struct ChannelError {
  int code = 0;  // 0: none; 1: a wait or packet poll timed out
  int rank = 0;
  int tb = 0;
  int op = 0;
  int peer = 0;
  // What the wait last read and what it waited for: a semaphore's count, a packet line's flag, or
  // the port FIFO's finished requests.
  unsigned long long seen = 0;
  unsigned long long want = 0;
};

// Which shape a block's resolved ops in PlanLaunchArgs::table were made for (key 0: none yet).
struct ResolvedTableKey {
  uint64_t key = 0;
  uint64_t ops = 0;
};

// Where a traced launch's thread 0 of each block stamps clock64() (the *Ns slots: %globaltimer):
// trace[((call & 1) * kMaxPlanBlocks + block) * kPlanTraceSlots + slot], so the last two executions
// are kept. kTraceStart: griddepcontrol.wait returned; kTraceOps + i: after the ops' step that
// starts with op i (a run of signals or waits is one step). For benchmarks that attribute an
// execution's time (channels_one_gpu_bench --trace).
enum PlanTraceSlot : int {
  kTraceEntry,
  kTraceStart,
  kTraceCounted,
  kTraceResolved,
  kTraceStartNs,
  kTraceEndNs,
  kTraceOps
};
inline constexpr int kPlanTraceSlots = kTraceOps + kMaxThreadBlockOps;
inline constexpr int kPlanTraceBuffer = 2 * kMaxPlanBlocks * kPlanTraceSlots;  // stamps in a trace buffer

// The fields every execution reads come first, so that they share the fewest constant-cache lines;
// the plan's arrays, the regions and semaphores (read when ops are resolved) and the failure paths'
// fields after them.
struct PlanLaunchArgs {
  void* table = nullptr;  // UploadedPlan's table, max_tb_ops and table_keys
  ResolvedTableKey* table_keys = nullptr;
  uint64_t* counters = nullptr;  // this rank's epoch counter per block (kMaxPlanBlocks)
  long long* trace = nullptr;    // when set: kPlanTraceBuffer stamps (see above)
  RegionLayout layout;
  uint64_t count = 0;
  int max_tb_ops = 0;
  int instances = 1;
  int elem = 4;  // bytes of one element of dtype
  int num_spares = 0;
  int rank = 0;
  int chunks_per_segment = 1;
  const DeviceOp* ops = nullptr;
  const int* tb_begin = nullptr;
  int tbs = 0;
  int max_srcs = kMaxReduceSources;             // UploadedPlan::max_srcs: picks the kernel's instance
  int dtype = kDevF32;                          // DeviceDType: picks the kernel's instance
  const DeviceRef* spares = nullptr;            // UploadedPlan's: what the stale-packet sweep spares (none: no sweep)
  char* regions[kMaxWorkers] = {};              // each rank's region (input, output, scratch halves), mapped here
  uint64_t* semaphores[kMaxWorkers] = {};       // each rank's kMaxChannelTags x kMaxWorkers semaphore words
  uint64_t* port_semaphores[kMaxWorkers] = {};  // port channels' (as many words; cuda_proxy.h)
  unsigned long long timeout_ns = 8'000'000'000ull;
  ChannelError* error = nullptr;               // host-mapped
  bool uses_ports = false;                     // UploadedPlan::uses_ports: then the ports' fields are required
  PortFifo* port_fifo = nullptr;               // this rank's FIFO (device address of host-mapped memory)
  unsigned long long* port_tickets = nullptr;  // its ticket counter (device memory, zeroed)
};

// Blocks and threads of one launch: 128 to 512 threads, enough for one 16-byte unit of a segment's
// share per thread (smaller blocks finish sooner and more of them fit beside the peers').
VDEV_HD int PlanBlocks(const PlanLaunchArgs& a) { return a.tbs * a.instances; }
inline constexpr int kPlanThreads = 512;
// Blocks of at most this many threads run an 8-source instance without the 512-thread register cap
// (cuda_executor.cu, KernelFor).
inline constexpr int kSmallPlanThreads = 256;
// The kernel's instances: for plans whose reduces have at most 2, 4 or 8 sources. All may use up
// to 128 registers a thread: capped at 64 (2 blocks of kPlanThreads an SM) the narrower ones spilled
// and ran 3-8% slower up to 64 KB, faster only for LL at 1 MB (measured on one H100).
VDEV_HD constexpr int KernelSources(int max_srcs) { return max_srcs <= 2 ? 2 : max_srcs <= 4 ? 4 : 8; }
VDEV_HD int PlanThreads(const PlanLaunchArgs& a) {
  const uint64_t units = (a.count * static_cast<uint64_t>(a.elem) / static_cast<uint64_t>(a.instances) + 15) / 16;
  const uint64_t t = (units + 31) / 32 * 32;
  return t < 128 ? 128 : t > kPlanThreads ? kPlanThreads : static_cast<int>(t);
}

// One op as a block runs it, resolved into shared memory: every pointer advanced to this block's
// part (scratch pointers into half 0; OpControl::scratch marks them, and an odd execution adds the
// distance to half 1); for a signal or wait the semaphore word (its place among its semaphore's
// signals, k of per_call, comes with the OpControl, as do the sources read as packets). Nothing in it
// depends on the execution, so a block resolves its ops once per (count, instances, element size)
// and keeps them in device memory (PlanLaunchArgs::table): a later execution of the same shape
// copies them into shared memory with one round trip instead of walking the plan. The op loop then
// reads nothing but this.
template <int S>
struct alignas(16) ResolvedOp : OpControl {
  char* dst;
  const char* src[S];
  uint64_t bytes;  // data bytes of this block's part
  uint64_t* word;  // signals, waits, port signals: the semaphore word
};

// Where chunk reference c starts (scratch: in half 0).
VDEV_HD char* At(const PlanLaunchArgs& a, const DeviceRef& c) {
  char* region = a.regions[c.rank];
  char* base = region + (c.buffer == kDevInput    ? a.layout.input
                         : c.buffer == kDevOutput ? a.layout.output
                                                  : a.layout.scratch[0]);
  if (c.packets) return base + 16 * PacketLine(a.count, a.chunks_per_segment, c.index, a.elem);
  return base + ChunkBegin(a.count, a.chunks_per_segment, c.index) * a.elem;
}

// Op `op` of instance `instance` resolved: what ResolvedOp says.
template <int S>
VDEV_HD ResolvedOp<S> ResolveOp(const PlanLaunchArgs& a, int instance, const DeviceOp& op) {
  ResolvedOp<S> r{};
  static_cast<OpControl&>(r) = op;
  const int tag = op.tag * a.instances + instance;
  if (op.kind == kDevSignal) {
    r.word = a.semaphores[op.peer] + tag * kMaxWorkers + a.rank;
  } else if (op.kind == kDevPortSignal || (op.kind == kDevPortPut && (op.port & kDevWithSignal))) {
    r.word = a.port_semaphores[op.peer] + tag * kMaxWorkers + a.rank;
  } else if (op.kind == kDevWait) {
    r.word = ((op.port & kDevPortSemaphore) ? a.port_semaphores : a.semaphores)[a.rank] + tag * kMaxWorkers + op.peer;
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
  return r;
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_ARGS_H_
