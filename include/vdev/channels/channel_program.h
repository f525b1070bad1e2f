// Channels: collectives written as programs over point-to-point channels (MSCCL++'s model).
//
// A program for N ranks names three buffers per rank — `input`, `output` and `scratch` — cut into
// chunks, opens channels between ranks and gives every thread block (`tb`) of every rank a list of
// operations. The collective's element count `count` fixes the chunk sizes at run time: a buffer is
// a whole number of segments of `count` elements, each cut into `chunks_per_segment` chunks (chunk
// k covers elements [s*count + j*count/C, s*count + (j+1)*count/C) with s = k / C, j = k % C, so odd
// sizes split into chunks that differ by at most one element). Per collective, with N ranks:
//   all-reduce      input 1 segment,  output 1 segment  (every output = sum of all inputs)
//   reduce-scatter  input N segments, output 1 segment  (rank r's output = sum of segment r)
//   all-gather      input 1 segment,  output N segments (segment r of every output = rank r's input)
//   broadcast       input 1 segment,  output 1 segment  (every output = the root's input)
//   scratch         `scratch_chunks` chunks (a multiple of C), double-buffered by the executors.
//
// Operations (`ChunkRef`s name (rank, buffer, index, count) — `count` consecutive chunks):
//   MemoryChannel(dst, src): used by rank `src`, reaching rank `dst`'s memory directly (SM copies).
//     Put(dst chunk on dst rank, src chunk on src rank), Get(dst on src, src on dst),
//     Signal (the peer's semaphore for this channel += 1), Wait (this rank's semaphore for the
//     reverse channel reaches its next count), Reduce(dst on src, srcs on src or dst),
//     PutPackets(dst scratch on dst, src on src): LL packets — 4 data bytes and a 32-bit flag in
//     every 8-byte word, the flag changing with every execution, so the reader polls the data
//     itself and no signal is needed; ReadPutPackets(dst scratch on dst, src packets in own
//     scratch): waits for the packets and forwards them.
//   PortChannel(dst, src): the same reach through a proxy thread of rank `src` that copies with the
//     copy engine (no SMs spent): Put (optionally with_signal, with_flush), Signal, Wait, Flush
//     (waits until the proxy finished this channel's earlier requests). Its signals count in a
//     semaphore of its own: a port signal never meets a memory channel's wait.
//   Local: Copy(dst, src) and Reduce(dst, srcs), both on one rank. `Reduce` writes
//     dst = srcs[0] + srcs[1] + ... in that order (list dst itself among srcs for `dst +=`); a
//     scratch source marked `packets` is read as packets (waiting for their flags).
// Each op has a data sync (`Sync`): the executing thread block synchronises its threads before
// and/or after it (defaults: Signal kBefore, Wait and Flush kAfter, others kNone). Signal and Wait
// have relaxed variants that count but order no data. An op given to a thread-block group
// `Tb{first, count}` is split across those thread blocks, each taking an equal part of its data.
//
// Validation (Build and ValidateProgram) simulates three consecutive executions of the program:
// ranks, tbs and chunks out of range; a chunk of the wrong rank for its channel; chunk size
// mismatches; a `wait` that no signal can satisfy (a deadlock: reported by rank, tb and op) and
// signals never waited for; data races — two accesses, at least one a write, to the same chunk with
// no chain of syncs and signal/wait pairs ordering them (within an execution, or from one execution
// to the next: a rank that rewrites its input while a peer may still read it); and, by tracking
// which inputs every chunk holds, outputs that do not hold what the collective promises.
//
// Example (one-shot all-reduce on 2 ranks: each reads the peer's input after an entry barrier):
//   vdev::channels::Program p("one_shot", Collective::kAllReduce, /*world_size=*/2);
//   for (int r = 0; r < 2; ++r) {
//     MemoryChannel ch = p.AddMemoryChannel(1 - r, r);
//     ch.Signal(0); ch.Wait(0);
//     ch.Reduce(0, p.Output(r, 0), {p.Input(0, 0), p.Input(1, 0)});
//     ch.Signal(0); ch.Wait(0);   // nobody rewrites its input while the peer still reads it
//   }
//   absl::StatusOr<ProgramSpec> plan = std::move(p).Build();
#ifndef VDEV_CHANNEL_PROGRAM_H_
#define VDEV_CHANNEL_PROGRAM_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vdev::channels {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kBroadcast };
enum class BufferKind { kInput, kOutput, kScratch };
enum class Sync { kNone, kBefore, kAfter, kBoth };
enum class OpKind {
  kPut,
  kGet,
  kSignal,
  kWait,
  kReduce,
  kCopy,
  kPutPackets,
  kReadPutPackets,
  kPortPut,
  kPortSignal,
  kPortWait,
  kPortFlush,
};

// An op on a PortChannel (its `channel` indexes port_channels, not memory_channels).
constexpr bool IsPortOp(OpKind k) {
  return k == OpKind::kPortPut || k == OpKind::kPortSignal || k == OpKind::kPortWait || k == OpKind::kPortFlush;
}

absl::string_view CollectiveName(Collective c);  // "allreduce", "reducescatter", "allgather", "broadcast"
absl::string_view BufferName(BufferKind b);      // "input", "output", "scratch"
absl::string_view SyncName(Sync s);              // "none", "before", "after", "both"
absl::string_view OpName(OpKind k);              // "put", "get", ..., "port_flush"

// Segments of `count` elements in a buffer (scratch: not fixed by the collective, -1).
int InputSegments(Collective c, int world_size);
int OutputSegments(Collective c, int world_size);

struct ChunkRef {
  int rank = 0;
  BufferKind buffer = BufferKind::kInput;
  int index = 0;
  int count = 1;
  bool packets = false;  // scratch holding LL packets (see PutPackets)
  ChunkRef AsPackets() const {
    ChunkRef r = *this;
    r.packets = true;
    return r;
  }
  friend bool operator==(const ChunkRef&, const ChunkRef&) = default;
};
std::ostream& operator<<(std::ostream& os, const ChunkRef& c);

struct Op {
  OpKind kind = OpKind::kCopy;
  int channel = -1;  // memory or port channel index (by kind); -1 for local ops
  ChunkRef dst;
  std::vector<ChunkRef> srcs;
  Sync sync = Sync::kNone;
  bool relaxed = false;      // signal/wait: count only, order no data
  bool with_signal = false;  // port put
  bool with_flush = false;   // port put
  int part = 0;              // this thread block's share of a thread-block group's op
  int parts = 1;
  friend bool operator==(const Op&, const Op&) = default;
};

// A channel from `src` (the rank that uses it) to `dst`; `tag` tells apart channels between the same
// pair (each thread block uses its own). Its semaphore lives at `dst`, counted per (src, tag) among
// the channels of its kind (memory and port channels count apart).
struct ChannelSpec {
  int dst = 0;
  int src = 0;
  int tag = 0;
  friend bool operator==(const ChannelSpec&, const ChannelSpec&) = default;
};

struct ThreadBlock {
  std::vector<Op> ops;
  friend bool operator==(const ThreadBlock&, const ThreadBlock&) = default;
};

// The compiled program: what the execution plan's JSON holds (docs/channels.md).
struct ProgramSpec {
  std::string name;
  Collective collective = Collective::kAllReduce;
  int world_size = 0;
  int root = 0;  // broadcast
  int chunks_per_segment = 1;
  int scratch_chunks = 0;
  std::vector<ChannelSpec> memory_channels;
  std::vector<ChannelSpec> port_channels;
  std::vector<std::vector<ThreadBlock>> ranks;  // [rank][tb]
  friend bool operator==(const ProgramSpec&, const ProgramSpec&) = default;
};

// Whether `op` raises its channel's semaphore at the peer (a signal, or a port put with_signal), and
// whether it waits on this rank's semaphore for the reverse channel.
inline bool SignalsSemaphore(const Op& op) {
  return op.kind == OpKind::kSignal || op.kind == OpKind::kPortSignal ||
         (op.kind == OpKind::kPortPut && op.with_signal);
}
inline bool WaitsOnSemaphore(const Op& op) { return op.kind == OpKind::kWait || op.kind == OpKind::kPortWait; }
// The channel a channel op (op.channel >= 0) of a valid program runs on: a port channel for port ops.
inline const ChannelSpec& ChannelOf(const ProgramSpec& p, const Op& op) {
  return IsPortOp(op.kind) ? p.port_channels[op.channel] : p.memory_channels[op.channel];
}

// What element i of rank `rank`'s output holds after the plan's collective, `count` elements a
// segment, where `input(r, j)` is element j of rank r's input: sums taken in T, in rank order (as
// every shipped plan sums). For checking a run against the collective's definition.
template <typename T, typename Input>
T CollectiveOutput(const ProgramSpec& plan, int rank, size_t i, size_t count, Input input) {
  T sum = 0;
  switch (plan.collective) {
    case Collective::kAllReduce:
      for (int r = 0; r < plan.world_size; ++r) sum += input(r, i);
      return sum;
    case Collective::kReduceScatter:
      for (int r = 0; r < plan.world_size; ++r) sum += input(r, rank * count + i);
      return sum;
    case Collective::kAllGather: return input(static_cast<int>(i / count), i % count);
    case Collective::kBroadcast: return input(plan.root, i);
  }
  return sum;
}

// Largest channel tag: a semaphore is word [tag * 8 + src] of the owner's 256 x 8 barrier words.
inline constexpr int kMaxChannelTags = 256;
inline constexpr int kMaxThreadBlocks = 256;

// Checks everything listed in the file comment; the error names rank, tb and op.
absl::Status ValidateProgram(const ProgramSpec& program);

// A thread block, or a group of `count` thread blocks from `first` that share an op's data.
struct Tb {
  Tb(int first) : first(first) {}  // NOLINT: a plain int is one thread block
  Tb(int first, int count) : first(first), count(count) {}
  int first = 0;
  int count = 1;
};

class Program;

class MemoryChannel {
 public:
  void Put(Tb tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  void Get(Tb tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  void Signal(int tb, Sync sync = Sync::kBefore, bool relaxed = false);
  void Wait(int tb, Sync sync = Sync::kAfter, bool relaxed = false);
  void Reduce(Tb tb, ChunkRef dst, std::vector<ChunkRef> srcs, Sync sync = Sync::kNone);
  void PutPackets(int tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  void ReadPutPackets(int tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  int index() const { return index_; }

 private:
  friend class Program;
  MemoryChannel(Program* program, int index) : program_(program), index_(index) {}
  Program* program_;
  int index_;
};

class PortChannel {
 public:
  void Put(int tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  void PutWithSignal(int tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kBefore);
  void PutWithSignalAndFlush(int tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kBoth);
  void Signal(int tb, Sync sync = Sync::kBefore);
  void Wait(int tb, Sync sync = Sync::kAfter);
  void Flush(int tb, Sync sync = Sync::kAfter);
  int index() const { return index_; }

 private:
  friend class Program;
  PortChannel(Program* program, int index) : program_(program), index_(index) {}
  Program* program_;
  int index_;
};

// The builder. Mistakes found while adding ops (a rank out of range, a chunk on the wrong rank) are
// kept and returned by Build, which then validates the whole program.
class Program {
 public:
  Program(std::string name, Collective collective, int world_size, int chunks_per_segment = 1, int scratch_chunks = 0,
          int root = 0);

  ChunkRef Input(int rank, int index, int count = 1) const { return {rank, BufferKind::kInput, index, count}; }
  ChunkRef Output(int rank, int index, int count = 1) const { return {rank, BufferKind::kOutput, index, count}; }
  ChunkRef Scratch(int rank, int index, int count = 1) const { return {rank, BufferKind::kScratch, index, count}; }

  MemoryChannel AddMemoryChannel(int dst, int src, int tag = 0);
  PortChannel AddPortChannel(int dst, int src, int tag = 0);
  void Copy(Tb tb, ChunkRef dst, ChunkRef src, Sync sync = Sync::kNone);
  void Reduce(Tb tb, ChunkRef dst, std::vector<ChunkRef> srcs, Sync sync = Sync::kNone);

  int world_size() const { return spec_.world_size; }
  int chunks_per_segment() const { return spec_.chunks_per_segment; }

  absl::StatusOr<ProgramSpec> Build() &&;

 private:
  friend class MemoryChannel;
  friend class PortChannel;
  void Add(int rank, Tb tb, Op op);
  void Fail(std::string message);

  ProgramSpec spec_;
  std::vector<std::string> errors_;
};

}  // namespace vdev::channels

#endif  // VDEV_CHANNEL_PROGRAM_H_
