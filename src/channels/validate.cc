// ValidateProgram: static checks of a channel program, then a simulation of three consecutive
// executions that finds deadlocks (by semaphore counts), data races (by vector clocks) and wrong
// results (by tracking which inputs every chunk holds).
//
// The model is the CUDA executor's: a thread block's threads run an op together, so two ops of one
// thread block are ordered only by a data sync between them; a release signal carries its thread
// block's clock to the matching wait, whose thread block takes it at its next sync; packets order
// only themselves; a port channel's proxy is a thread of its own, ordered after the ops that fed it
// and before a flush. Each rank's host writes the input before a call and reads the output after
// the rank's thread blocks (and proxies) finished it; the scratch alternates halves between calls.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "internal/simulate.h"
#include "vdev/channels/channel_program.h"
#include "vdev/runtime/peer_group.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

std::string Where(int rank, int tb, int op, const Op& o) {
  return absl::StrCat("rank ", rank, " tb ", tb, " op ", op, " (", OpName(o.kind), ")");
}

int BufferChunks(const ProgramSpec& p, BufferKind b) {
  switch (b) {
    case BufferKind::kInput: return InputSegments(p.collective, p.world_size) * p.chunks_per_segment;
    case BufferKind::kOutput: return OutputSegments(p.collective, p.world_size) * p.chunks_per_segment;
    case BufferKind::kScratch: return p.scratch_chunks;
  }
  return 0;
}

std::string RefText(const ChunkRef& c) {
  std::ostringstream os;
  os << c;
  return os.str();
}

absl::Status CheckRef(const ProgramSpec& p, const ChunkRef& c, const std::string& where) {
  if (c.rank < 0 || c.rank >= p.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", RefText(c), ": ranks are 0..", p.world_size - 1));
  }
  const int chunks = BufferChunks(p, c.buffer);
  if (c.index < 0 || c.count < 1 || c.index + c.count > chunks) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", RefText(c), " is out of range: the ",
                                                   BufferName(c.buffer), " has chunks 0..", chunks - 1));
  }
  if (c.packets && c.buffer != BufferKind::kScratch) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": packets live in scratch only, not in ", RefText(c)));
  }
  return absl::OkStatus();
}

// Chunks of equal size: the same number of chunks starting at the same position in a segment.
absl::Status CheckSameSize(const ProgramSpec& p, const ChunkRef& a, const ChunkRef& b, const std::string& where) {
  if (a.count != b.count || a.index % p.chunks_per_segment != b.index % p.chunks_per_segment) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", RefText(a), " and ", RefText(b),
                                                   " differ in size (chunks of one size have the same count and "
                                                   "the same index modulo chunks_per_segment)"));
  }
  return absl::OkStatus();
}

absl::Status CheckOnRank(const ChunkRef& c, int rank, const std::string& where, absl::string_view what) {
  if (c.rank == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what, " ", RefText(c), " must be on rank ", rank));
}

// The channel `op` of `rank` uses, checked against the program's channels; {rank, rank, 0} for a
// local op.
absl::StatusOr<ChannelSpec> CheckChannel(const ProgramSpec& p, int rank, const Op& op, const std::string& where) {
  const bool port = IsPortOp(op.kind);
  const bool local = op.kind == OpKind::kCopy || (op.kind == OpKind::kReduce && op.channel < 0);
  if (op.kind == OpKind::kCopy && op.channel >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a copy is local and takes no channel"));
  }
  const std::vector<ChannelSpec>& channels = port ? p.port_channels : p.memory_channels;
  ChannelSpec ch{rank, rank, 0};
  if (!local) {
    if (op.channel < 0 || op.channel >= static_cast<int>(channels.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": no ", port ? "port" : "memory", " channel ", op.channel));
    }
    ch = channels[op.channel];
    if (ch.src != rank) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": channel ", op.channel, " (", ch.src, "->", ch.dst,
                                                     ") is used by rank ", ch.src, ", not rank ", rank));
    }
  }
  return ch;
}

// The chunks of an op that moves data: the sources' number, every chunk in range and of one size,
// and packets only where the op reads or writes them.
absl::Status CheckChunks(const ProgramSpec& p, int rank, const Op& op, const std::string& where) {
  if (op.srcs.empty() || (op.kind != OpKind::kReduce && op.srcs.size() != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected ", op.kind == OpKind::kReduce ? "sources" : "one source"));
  }
  VDEV_RETURN_IF_ERROR(CheckRef(p, op.dst, where));
  bool packets = op.dst.packets;
  for (const ChunkRef& s : op.srcs) {
    VDEV_RETURN_IF_ERROR(CheckRef(p, s, where));
    VDEV_RETURN_IF_ERROR(CheckSameSize(p, op.dst, s, where));
    packets = packets || s.packets;
    if (s.packets && s.rank != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": packets are read from the own scratch only, not ", RefText(s)));
    }
  }
  if (packets && op.parts != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": packet operations take a single thread block"));
  }
  const bool dst_packets = op.kind == OpKind::kPutPackets || op.kind == OpKind::kReadPutPackets;
  if (op.dst.packets != dst_packets) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": ", RefText(op.dst), dst_packets ? " must be packets" : " cannot be written as packets here"));
  }
  return absl::OkStatus();
}

// Which rank each chunk of a data op must be on, given the channel `ch` it goes through.
absl::Status CheckPlacement(const ProgramSpec& p, int rank, const ChannelSpec& ch, const Op& op,
                            const std::string& where) {
  const ChunkRef& src = op.srcs[0];
  switch (op.kind) {
    case OpKind::kPut:
    case OpKind::kPortPut:
    case OpKind::kPutPackets:
    case OpKind::kReadPutPackets:
      VDEV_RETURN_IF_ERROR(CheckOnRank(op.dst, ch.dst, where, "the destination"));
      VDEV_RETURN_IF_ERROR(CheckOnRank(src, rank, where, "the source"));
      if ((op.kind == OpKind::kReadPutPackets) != src.packets) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", RefText(src),
                         op.kind == OpKind::kReadPutPackets ? " must be packets" : " cannot be read as packets here"));
      }
      break;
    case OpKind::kGet:
      VDEV_RETURN_IF_ERROR(CheckOnRank(op.dst, rank, where, "the destination"));
      VDEV_RETURN_IF_ERROR(CheckOnRank(src, ch.dst, where, "the source"));
      break;
    case OpKind::kCopy:
      VDEV_RETURN_IF_ERROR(CheckOnRank(op.dst, rank, where, "the destination"));
      VDEV_RETURN_IF_ERROR(CheckOnRank(src, rank, where, "the source"));
      break;
    case OpKind::kReduce:
      // Remote sources are read directly, through a memory channel of this rank to theirs.
      VDEV_RETURN_IF_ERROR(CheckOnRank(op.dst, rank, where, "the destination"));
      for (const ChunkRef& s : op.srcs) {
        bool reachable = s.rank == rank;
        for (const ChannelSpec& c : p.memory_channels) reachable = reachable || (c.src == rank && c.dst == s.rank);
        if (!reachable) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": the source ", RefText(s), " is on rank ", s.rank,
                                                         ", which no memory channel of rank ", rank, " reaches"));
        }
      }
      break;
    default: break;
  }
  return absl::OkStatus();
}

absl::Status CheckOp(const ProgramSpec& p, int rank, int tb, int index, const Op& op) {
  const std::string where = Where(rank, tb, index, op);
  VDEV_ASSIGN_OR_RETURN(const ChannelSpec ch, CheckChannel(p, rank, op, where));
  if (op.parts < 1 || op.part < 0 || op.part >= op.parts) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": part ", op.part, " of ", op.parts));
  }
  const bool has_dst = !(op.kind == OpKind::kSignal || op.kind == OpKind::kWait || op.kind == OpKind::kPortSignal ||
                         op.kind == OpKind::kPortWait || op.kind == OpKind::kPortFlush);
  if (!has_dst) {
    if (!op.srcs.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": takes no chunks"));
    return absl::OkStatus();
  }
  VDEV_RETURN_IF_ERROR(CheckChunks(p, rank, op, where));
  return CheckPlacement(p, rank, ch, op, where);
}

absl::Status CheckStructure(const ProgramSpec& p) {
  if (p.world_size < 1 || p.world_size > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("world size ", p.world_size, ": expected 1..", kMaxWorkers));
  }
  if (static_cast<int>(p.ranks.size()) != p.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("the program has ", p.ranks.size(), " ranks, not ", p.world_size));
  }
  if (p.root < 0 || p.root >= p.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("root ", p.root, ": ranks are 0..", p.world_size - 1));
  }
  if (p.chunks_per_segment < 1 || p.chunks_per_segment > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("chunks_per_segment ", p.chunks_per_segment, ": expected 1..4096"));
  }
  if (p.scratch_chunks < 0 || p.scratch_chunks % p.chunks_per_segment != 0 ||
      p.scratch_chunks > 64 * p.chunks_per_segment) {
    return absl::InvalidArgumentError(absl::StrCat("scratch_chunks ", p.scratch_chunks,
                                                   ": expected a multiple of chunks_per_segment (up to 64 segments)"));
  }
  // A channel's semaphore: (dst, src, tag) among channels of its kind (port channels count apart).
  std::map<std::tuple<int, int, int, int>, std::string> semaphores;
  for (int port = 0; port < 2; ++port) {
    const std::vector<ChannelSpec>& channels = port ? p.port_channels : p.memory_channels;
    for (size_t i = 0; i < channels.size(); ++i) {
      const ChannelSpec& c = channels[i];
      const std::string name = absl::StrCat(port ? "port" : "memory", " channel ", i, " (", c.src, "->", c.dst, ")");
      if (c.src < 0 || c.src >= p.world_size || c.dst < 0 || c.dst >= p.world_size) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": ranks are 0..", p.world_size - 1));
      }
      if (c.src == c.dst) return absl::InvalidArgumentError(absl::StrCat(name, " connects a rank to itself"));
      if (c.tag < 0 || c.tag >= kMaxChannelTags) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": tag ", c.tag, " outside 0..", kMaxChannelTags - 1));
      }
      auto [it, fresh] = semaphores.emplace(std::make_tuple(port, c.dst, c.src, c.tag), name);
      if (!fresh) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " and ", it->second, " share tag ", c.tag, " (and so a semaphore)"));
      }
    }
  }
  for (int r = 0; r < p.world_size; ++r) {
    if (p.ranks[r].size() > static_cast<size_t>(kMaxThreadBlocks)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", r, " has ", p.ranks[r].size(), " thread blocks; at most ", kMaxThreadBlocks));
    }
    // Semaphore counts pair the k-th wait with the k-th signal only when one thread block signals.
    std::map<std::pair<int, int>, int> user;  // (port?, channel) -> tb issuing its signals/waits
    for (size_t t = 0; t < p.ranks[r].size(); ++t) {
      const std::vector<Op>& ops = p.ranks[r][t].ops;
      for (size_t i = 0; i < ops.size(); ++i) {
        VDEV_RETURN_IF_ERROR(CheckOp(p, r, static_cast<int>(t), static_cast<int>(i), ops[i]));
        if (!SignalsSemaphore(ops[i]) && !WaitsOnSemaphore(ops[i])) continue;
        const bool port = IsPortOp(ops[i].kind);
        auto [it, fresh] = user.emplace(std::make_pair(port ? 1 : 0, ops[i].channel), static_cast<int>(t));
        if (!fresh && it->second != static_cast<int>(t)) {
          return absl::InvalidArgumentError(absl::StrCat(
              Where(r, static_cast<int>(t), static_cast<int>(i), ops[i]), ": channel ", ops[i].channel,
              " already signals or waits in tb ", it->second, "; give each thread block its own channel (tag)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProgram(const ProgramSpec& program) {
  absl::Status s = CheckStructure(program);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("program ", program.name, ": ", s.message()));
  s = internal::SimulateExecutions(program, 3);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("program ", program.name, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace vdev::channels
