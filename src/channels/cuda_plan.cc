// UploadedPlan: one rank's ops flattened for the CUDA kernel (cuda_executor.cu).
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuda_common/cuda_common.h"
#include "internal/cuda_plan.h"
#include "internal/packet_sweep.h"
#include "vdev/channels/channel_program.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::internal {
namespace {

using vdev::internal::CudaStatus;

DeviceRef ToDevice(const ChunkRef& c) {
  DeviceRef d;
  d.index = c.index;
  d.count = c.count;
  d.rank = static_cast<int8_t>(c.rank);
  d.buffer = c.buffer == BufferKind::kInput ? kDevInput : c.buffer == BufferKind::kOutput ? kDevOutput : kDevScratch;
  d.packets = c.packets ? 1 : 0;
  return d;
}

int8_t ToDevice(OpKind k) {
  switch (k) {
    case OpKind::kPut: return kDevPut;
    case OpKind::kGet: return kDevGet;
    case OpKind::kCopy: return kDevCopy;
    case OpKind::kSignal: return kDevSignal;
    case OpKind::kWait: return kDevWait;
    case OpKind::kReduce: return kDevReduce;
    case OpKind::kPutPackets: return kDevPutPackets;
    case OpKind::kReadPutPackets: return kDevReadPutPackets;
    case OpKind::kPortPut: return kDevPortPut;
    case OpKind::kPortSignal: return kDevPortSignal;
    case OpKind::kPortWait: return kDevWait;
    case OpKind::kPortFlush: return kDevPortFlush;
  }
  return -1;  // not an OpKind
}

bool SameRef(const DeviceRef& x, const DeviceRef& y) {
  return x.index == y.index && x.count == y.count && x.rank == y.rank && x.buffer == y.buffer && x.packets == y.packets;
}
// Two puts that may run as one step: one source, the same part of it.
bool SamePutSource(const DeviceOp& x, const DeviceOp& y) {
  return x.nsrcs == 1 && y.nsrcs == 1 && SameRef(x.srcs[0], y.srcs[0]) && x.part == y.part && x.parts == y.parts;
}

// Whether the reduce `next`, right after a put_packets run (first .. last) with no data sync
// between, sums the run's source, unsent, with packet sources only besides: the kernel then runs
// both as one step that keeps the source in registers (RunPacketsThenReduce).
bool SumsItsSource(const DeviceOp& first, const DeviceOp& last, const DeviceOp& next) {
  if (next.kind != kDevReduce || (last.sync & kDevSyncAfter) || (next.sync & kDevSyncBefore)) return false;
  int own = 0;
  for (int j = 0; j < next.nsrcs; ++j) {
    if (next.srcs[j].packets) continue;
    if (!SameRef(next.srcs[j], first.srcs[0])) return false;
    ++own;
  }
  return own == 1 && next.part == first.part && next.parts == first.parts;
}

// Op `op` of `rank` as the kernel reads it, but for its semaphore count and its batching
// (FlattenPlan's: they depend on the ops around it).
DeviceOp ToDevice(const ProgramSpec& plan, int rank, const Op& op) {
  DeviceOp d;
  d.dst = ToDevice(op.dst);
  d.nsrcs = static_cast<int8_t>(op.srcs.size());
  d.scratch = op.dst.buffer == BufferKind::kScratch ? 1 : 0;
  for (size_t j = 0; j < op.srcs.size(); ++j) {
    d.srcs[j] = ToDevice(op.srcs[j]);
    if (op.srcs[j].packets) d.packets |= static_cast<uint8_t>(1u << j);
    if (op.srcs[j].buffer == BufferKind::kScratch) d.scratch |= static_cast<uint16_t>(2u << j);
  }
  d.part = static_cast<int16_t>(op.part);
  d.parts = static_cast<int16_t>(op.parts);
  d.kind = ToDevice(op.kind);
  d.sync = static_cast<int8_t>((op.sync == Sync::kBefore || op.sync == Sync::kBoth ? kDevSyncBefore : 0) |
                               (op.sync == Sync::kAfter || op.sync == Sync::kBoth ? kDevSyncAfter : 0));
  d.relaxed = op.relaxed ? 1 : 0;
  d.port = static_cast<int8_t>((op.with_signal ? kDevWithSignal : 0) | (op.with_flush ? kDevWithFlush : 0) |
                               (op.kind == OpKind::kPortWait ? kDevPortSemaphore : 0));
  if (op.channel >= 0) {
    const ChannelSpec& ch = ChannelOf(plan, op);
    d.peer = static_cast<int16_t>(ch.dst);
    d.tag = static_cast<int16_t>(ch.tag);
  } else {
    // A local reduce may still poll packets: a timeout names a rank that writes the first of them.
    d.peer = static_cast<int16_t>((rank + 1) % plan.world_size);
    const auto packets = std::find_if(op.srcs.begin(), op.srcs.end(), [](const ChunkRef& c) { return c.packets; });
    if (packets != op.srcs.end()) {
      const std::vector<int> writers = internal::PacketWriters(plan, *packets);
      if (!writers.empty()) d.peer = static_cast<int16_t>(writers.front());
    }
  }
  return d;
}

// Marks the runs among ops[first..] that the kernel runs as one step: batch is the run's length at
// its first op and 0 at the others; then_reduce and then_wait are set at its first op.
// A run of signals (or of waits) with no data sync inside it runs in parallel, one thread each:
// they touch distinct semaphores or raise one with a maximum, so their order does not matter.
// A run of puts (or put_packets) of one source with no data sync inside it runs as one step
// that loads the source once for all its destinations; a put_packets run also takes along a
// reduce right after it that sums the same source (SumsItsSource), and a signal run the wait
// run right after it when no data sync lies between them (a barrier: thread t raises its
// signal, then polls its wait; every signal is still raised without waiting for anything, so no
// wait can miss one that the step holds back).
void BatchRuns(int max_srcs, size_t first, std::vector<DeviceOp>* ops_out) {
  std::vector<DeviceOp>& ops = *ops_out;
  for (size_t i = first; i < ops.size();) {
    size_t j = i + 1;
    const bool sync = ops[i].kind == kDevSignal || ops[i].kind == kDevWait;
    const bool put = (ops[i].kind == kDevPut || ops[i].kind == kDevPutPackets) && !ops[i].srcs[0].packets;
    const size_t most = sync ? 32 : static_cast<size_t>(KernelSources(max_srcs));
    while ((sync || put) && j < ops.size() && ops[j].kind == ops[i].kind && !(ops[j - 1].sync & kDevSyncAfter) &&
           !(ops[j].sync & kDevSyncBefore) && j - i < most && (sync || SamePutSource(ops[i], ops[j]))) {
      ops[j].batch = 0;
      ++j;
    }
    ops[i].batch = static_cast<int8_t>(j - i);
    if (ops[i].kind == kDevPutPackets && !ops[i].srcs[0].packets && j < ops.size()) {
      ops[i].then_reduce = SumsItsSource(ops[i], ops[j - 1], ops[j]) ? 1 : 0;
    }
    ops[i].then_wait = ops[i].kind == kDevSignal && j < ops.size() && ops[j].kind == kDevWait &&
                       !(ops[j - 1].sync & kDevSyncAfter) && !(ops[j].sync & kDevSyncBefore);
    i = j;
  }
}

}  // namespace

absl::StatusOr<FlatPlan> FlattenPlan(const ProgramSpec& plan, int rank) {
  FlatPlan flat;
  std::vector<DeviceOp>& ops = flat.ops;
  std::vector<int>& begin = flat.tb_begin;
  begin = {0};
  int& max_srcs = flat.max_srcs;
  int& max_tb_ops = flat.max_tb_ops;
  bool& uses_ports = flat.uses_ports;
  // (peer, tag, signal?, port?) -> signals to / waits for that peer in one execution
  using SemaphoreKey = std::tuple<int, int, bool, bool>;
  std::map<SemaphoreKey, int> per_call;
  std::vector<std::pair<int, SemaphoreKey>> counted;  // the signal and wait ops: index and key
  for (const auto& tb : plan.ranks[rank]) {
    for (const Op& op : tb.ops) max_srcs = std::max(max_srcs, static_cast<int>(op.srcs.size()));
  }
  for (size_t t = 0; t < plan.ranks[rank].size(); ++t) {
    for (size_t i = 0; i < plan.ranks[rank][t].ops.size(); ++i) {
      const Op& op = plan.ranks[rank][t].ops[i];
      const std::string where =
          absl::StrCat("plan ", plan.name, " rank ", rank, " tb ", t, " op ", i, " (", OpName(op.kind), ")");
      const bool port = IsPortOp(op.kind);
      uses_ports = uses_ports || port;
      if (op.srcs.size() > static_cast<size_t>(kMaxReduceSources)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", op.srcs.size(), " sources; the CUDA executor takes ", kMaxReduceSources));
      }
      DeviceOp d = ToDevice(plan, rank, op);
      // Port channels count their signals in semaphores of their own (as the host executor).
      const bool signal = SignalsSemaphore(op);
      if (signal || WaitsOnSemaphore(op)) {
        const SemaphoreKey key{d.peer, d.tag, signal, port};
        d.k = ++per_call[key];
        counted.push_back({static_cast<int>(ops.size()), key});
      }
      ops.push_back(d);
    }
    BatchRuns(max_srcs, begin.back(), &ops);
    begin.push_back(static_cast<int>(ops.size()));
    max_tb_ops = std::max(max_tb_ops, begin.back() - begin[begin.size() - 2]);
    if (begin.back() - begin[begin.size() - 2] > kMaxThreadBlockOps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan ", plan.name, " rank ", rank, " tb ", t, " has ", begin.back() - begin[begin.size() - 2],
          " ops; the CUDA executor takes ", kMaxThreadBlockOps, " per thread block (split it across thread blocks)"));
    }
  }
  for (const auto& [index, key] : counted) ops[index].per_call = per_call[key];
  for (const ChunkRef& c : SweptScratchSpares(plan, rank)) flat.spares.push_back(ToDevice(c));
  if (flat.spares.size() > static_cast<size_t>(kMaxSweepSpares)) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", plan.name, " touches ", flat.spares.size(),
                                                   " distinct scratch chunk ranges of rank ", rank,
                                                   "; the CUDA executor takes ", kMaxSweepSpares));
  }
  return flat;
}

absl::Status UploadedPlan::Upload(const ProgramSpec& plan, int rank) {
  absl::StatusOr<FlatPlan> flat = FlattenPlan(plan, rank);
  if (!flat.ok()) return flat.status();
  const std::vector<DeviceOp>& ops = flat->ops;
  const std::vector<int>& begin = flat->tb_begin;
  max_srcs = flat->max_srcs;
  max_tb_ops = flat->max_tb_ops;
  uses_ports = flat->uses_ports;
  tbs = static_cast<int>(plan.ranks[rank].size());
  if (!ops.empty()) {
    if (absl::Status s =
            CudaStatus(cudaMalloc(reinterpret_cast<void**>(&this->ops), ops.size() * sizeof(DeviceOp)), "cudaMalloc");
        !s.ok())
      return s;
    if (absl::Status s = CudaStatus(
            cudaMemcpy(this->ops, ops.data(), ops.size() * sizeof(DeviceOp), cudaMemcpyHostToDevice), "cudaMemcpy");
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          CudaStatus(cudaMalloc(reinterpret_cast<void**>(&tb_begin), begin.size() * sizeof(int)), "cudaMalloc");
      !s.ok())
    return s;
  if (absl::Status s = CudaStatus(
          cudaMemcpy(tb_begin, begin.data(), begin.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
      !s.ok()) {
    return s;
  }
  num_spares = static_cast<int>(flat->spares.size());
  if (num_spares > 0) {
    const size_t bytes = flat->spares.size() * sizeof(DeviceRef);
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaMalloc(reinterpret_cast<void**>(&spares), bytes), "cudaMalloc"));
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpy(spares, flat->spares.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
  }
  const size_t keys = sizeof(ResolvedTableKey) * kMaxPlanBlocks;
  if (absl::Status s =
          CudaStatus(cudaMalloc(&table, std::max<size_t>(16, ResolvedTableBytes(max_srcs, max_tb_ops))), "cudaMalloc");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CudaStatus(cudaMalloc(reinterpret_cast<void**>(&table_keys), keys), "cudaMalloc"); !s.ok())
    return s;
  return CudaStatus(cudaMemset(table_keys, 0, keys), "cudaMemset");
}

absl::StatusOr<std::unique_ptr<MappedChannelError>> MappedChannelError::Create() {
  std::unique_ptr<MappedChannelError> e(new MappedChannelError());
  VDEV_RETURN_IF_ERROR(CudaStatus(
      cudaHostAlloc(reinterpret_cast<void**>(&e->host_), sizeof(ChannelError), cudaHostAllocMapped), "cudaHostAlloc"));
  *e->host_ = ChannelError();
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaHostGetDevicePointer(reinterpret_cast<void**>(&e->device_), e->host_, 0),
                                  "cudaHostGetDevicePointer"));
  return e;
}

MappedChannelError::~MappedChannelError() {
  if (host_ != nullptr) cudaFreeHost(host_);
}

std::string DescribeTimeout(const ChannelError& e) {
  return absl::StrCat("rank ", e.rank, " tb ", e.tb, " op ", e.op, " waiting for rank ", e.peer, " (read ", e.seen,
                      ", waits for ", e.want, ")");
}

ChannelError MappedChannelError::Take() {
  volatile ChannelError* e = host_;
  ChannelError taken;
  taken.code = e->code;
  taken.rank = e->rank;
  taken.tb = e->tb;
  taken.op = e->op;
  taken.peer = e->peer;
  taken.seen = e->seen;
  taken.want = e->want;
  e->code = 0;
  return taken;
}

void UploadedPlan::Free() {
  if (ops != nullptr) cudaFree(ops);
  if (tb_begin != nullptr) cudaFree(tb_begin);
  if (table != nullptr) cudaFree(table);
  if (table_keys != nullptr) cudaFree(table_keys);
  if (spares != nullptr) cudaFree(spares);
  ops = nullptr;
  spares = nullptr;
  num_spares = 0;
  tb_begin = nullptr;
  table = nullptr;
  table_keys = nullptr;
}

}  // namespace vdev::channels::internal
