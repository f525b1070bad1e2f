// The channel language's builder and names; validation is in validate.cc.
#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels {

namespace {

// Each value of an enum with its name in plans, messages and the Python API.
template <typename Enum>
struct Named {
  Enum value;
  absl::string_view name;
};

template <typename Enum, size_t N>
absl::string_view NameIn(const Named<Enum> (&names)[N], Enum value) {
  for (const Named<Enum>& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

constexpr Named<Collective> kCollectiveNames[] = {{Collective::kAllReduce, "allreduce"},
                                                  {Collective::kReduceScatter, "reducescatter"},
                                                  {Collective::kAllGather, "allgather"},
                                                  {Collective::kBroadcast, "broadcast"}};
constexpr Named<BufferKind> kBufferKindNames[] = {
    {BufferKind::kInput, "input"}, {BufferKind::kOutput, "output"}, {BufferKind::kScratch, "scratch"}};
constexpr Named<Sync> kSyncNames[] = {
    {Sync::kNone, "none"}, {Sync::kBefore, "before"}, {Sync::kAfter, "after"}, {Sync::kBoth, "both"}};
constexpr Named<OpKind> kOpKindNames[] = {{OpKind::kPut, "put"},
                                          {OpKind::kGet, "get"},
                                          {OpKind::kSignal, "signal"},
                                          {OpKind::kWait, "wait"},
                                          {OpKind::kReduce, "reduce"},
                                          {OpKind::kCopy, "copy"},
                                          {OpKind::kPutPackets, "put_packets"},
                                          {OpKind::kReadPutPackets, "read_put_packets"},
                                          {OpKind::kPortPut, "port_put"},
                                          {OpKind::kPortSignal, "port_signal"},
                                          {OpKind::kPortWait, "port_wait"},
                                          {OpKind::kPortFlush, "port_flush"}};

}  // namespace

absl::string_view CollectiveName(Collective c) { return NameIn(kCollectiveNames, c); }
absl::string_view BufferName(BufferKind b) { return NameIn(kBufferKindNames, b); }
absl::string_view SyncName(Sync s) { return NameIn(kSyncNames, s); }
absl::string_view OpName(OpKind k) { return NameIn(kOpKindNames, k); }

int InputSegments(Collective c, int world_size) { return c == Collective::kReduceScatter ? world_size : 1; }
int OutputSegments(Collective c, int world_size) { return c == Collective::kAllGather ? world_size : 1; }

std::ostream& operator<<(std::ostream& os, const ChunkRef& c) {
  os << BufferName(c.buffer) << (c.packets ? " packets" : "") << " chunk " << c.index;
  if (c.count != 1) os << ".." << c.index + c.count - 1;
  return os << " of rank " << c.rank;
}

Program::Program(std::string name, Collective collective, int world_size, int chunks_per_segment, int scratch_chunks,
                 int root) {
  spec_.name = std::move(name);
  spec_.collective = collective;
  spec_.world_size = world_size;
  spec_.root = root;
  spec_.chunks_per_segment = chunks_per_segment;
  spec_.scratch_chunks = scratch_chunks;
  if (world_size > 0 && world_size <= 64) spec_.ranks.resize(world_size);
}

void Program::Fail(std::string message) { errors_.push_back(std::move(message)); }

void Program::Add(int rank, Tb tb, Op op) {
  if (rank < 0 || rank >= static_cast<int>(spec_.ranks.size())) {
    return Fail(absl::StrCat(OpName(op.kind), " on rank ", rank, ": the program has ranks 0..", spec_.world_size - 1));
  }
  if (tb.first < 0 || tb.count < 1 || tb.first + tb.count > kMaxThreadBlocks) {
    return Fail(absl::StrCat("rank ", rank, ": ", OpName(op.kind), " on thread blocks ", tb.first, "..",
                             tb.first + tb.count - 1, ": thread blocks are 0..", kMaxThreadBlocks - 1));
  }
  std::vector<ThreadBlock>& tbs = spec_.ranks[rank];
  if (static_cast<int>(tbs.size()) < tb.first + tb.count) tbs.resize(tb.first + tb.count);
  op.parts = tb.count;
  for (int i = 0; i < tb.count; ++i) {
    op.part = i;
    tbs[tb.first + i].ops.push_back(op);
  }
}

namespace {
int AddChannel(std::vector<ChannelSpec>& channels, int dst, int src, int tag) {
  channels.push_back({dst, src, tag});
  return static_cast<int>(channels.size()) - 1;
}
}  // namespace

MemoryChannel Program::AddMemoryChannel(int dst, int src, int tag) {
  return MemoryChannel(this, AddChannel(spec_.memory_channels, dst, src, tag));
}

PortChannel Program::AddPortChannel(int dst, int src, int tag) {
  return PortChannel(this, AddChannel(spec_.port_channels, dst, src, tag));
}

void Program::Copy(Tb tb, ChunkRef dst, ChunkRef src, Sync sync) {
  Add(dst.rank, tb, {.kind = OpKind::kCopy, .dst = dst, .srcs = {src}, .sync = sync});
}

void Program::Reduce(Tb tb, ChunkRef dst, std::vector<ChunkRef> srcs, Sync sync) {
  Add(dst.rank, tb, {.kind = OpKind::kReduce, .dst = dst, .srcs = std::move(srcs), .sync = sync});
}

absl::StatusOr<ProgramSpec> Program::Build() && {
  if (!errors_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("program ", spec_.name, ": ", absl::StrJoin(errors_, "; ")));
  }
  absl::Status valid = ValidateProgram(spec_);
  if (!valid.ok()) return valid;
  return std::move(spec_);
}

namespace {
// The rank that runs ops of a channel: its `src`; -1 for an index out of range (ValidateProgram
// reports it; Add then reports the rank).
int SrcOf(const std::vector<ChannelSpec>& channels, int index) {
  return index >= 0 && index < static_cast<int>(channels.size()) ? channels[index].src : -1;
}
}  // namespace

void MemoryChannel::Put(Tb tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kPut, .channel = index_, .dst = dst, .srcs = {src}, .sync = sync});
}
void MemoryChannel::Get(Tb tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kGet, .channel = index_, .dst = dst, .srcs = {src}, .sync = sync});
}
void MemoryChannel::Signal(int tb, Sync sync, bool relaxed) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kSignal, .channel = index_, .sync = sync, .relaxed = relaxed});
}
void MemoryChannel::Wait(int tb, Sync sync, bool relaxed) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kWait, .channel = index_, .sync = sync, .relaxed = relaxed});
}
void MemoryChannel::Reduce(Tb tb, ChunkRef dst, std::vector<ChunkRef> srcs, Sync sync) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kReduce, .channel = index_, .dst = dst, .srcs = std::move(srcs), .sync = sync});
}
void MemoryChannel::PutPackets(int tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kPutPackets, .channel = index_, .dst = dst.AsPackets(), .srcs = {src}, .sync = sync});
}
void MemoryChannel::ReadPutPackets(int tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.memory_channels, index_), tb,
                {.kind = OpKind::kReadPutPackets,
                 .channel = index_,
                 .dst = dst.AsPackets(),
                 .srcs = {src.AsPackets()},
                 .sync = sync});
}

void PortChannel::Put(int tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.port_channels, index_), tb,
                {.kind = OpKind::kPortPut, .channel = index_, .dst = dst, .srcs = {src}, .sync = sync});
}
void PortChannel::PutWithSignal(int tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(
      SrcOf(program_->spec_.port_channels, index_), tb,
      {.kind = OpKind::kPortPut, .channel = index_, .dst = dst, .srcs = {src}, .sync = sync, .with_signal = true});
}
void PortChannel::PutWithSignalAndFlush(int tb, ChunkRef dst, ChunkRef src, Sync sync) {
  program_->Add(SrcOf(program_->spec_.port_channels, index_), tb,
                {.kind = OpKind::kPortPut,
                 .channel = index_,
                 .dst = dst,
                 .srcs = {src},
                 .sync = sync,
                 .with_signal = true,
                 .with_flush = true});
}
void PortChannel::Signal(int tb, Sync sync) {
  program_->Add(SrcOf(program_->spec_.port_channels, index_), tb,
                {.kind = OpKind::kPortSignal, .channel = index_, .sync = sync});
}
void PortChannel::Wait(int tb, Sync sync) {
  program_->Add(SrcOf(program_->spec_.port_channels, index_), tb,
                {.kind = OpKind::kPortWait, .channel = index_, .sync = sync});
}
void PortChannel::Flush(int tb, Sync sync) {
  program_->Add(SrcOf(program_->spec_.port_channels, index_), tb,
                {.kind = OpKind::kPortFlush, .channel = index_, .sync = sync});
}

}  // namespace vdev::channels
