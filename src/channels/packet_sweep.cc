#include "internal/packet_sweep.h"

#include <algorithm>
#include <cstring>

namespace vdev::channels::internal {

bool UsesPackets(const ProgramSpec& plan) {
  for (const auto& tbs : plan.ranks) {
    for (const ThreadBlock& tb : tbs) {
      for (const Op& op : tb.ops) {
        if (op.dst.packets ||
            std::any_of(op.srcs.begin(), op.srcs.end(), [](const ChunkRef& s) { return s.packets; })) {
          return true;
        }
      }
    }
  }
  return false;
}

std::vector<int> PacketWriters(const ProgramSpec& plan, const ChunkRef& packets) {
  std::vector<int> writers;
  for (int rank = 0; rank < static_cast<int>(plan.ranks.size()); ++rank) {
    for (const ThreadBlock& tb : plan.ranks[rank]) {
      for (const Op& op : tb.ops) {
        const ChunkRef& d = op.dst;
        const bool overlaps = !op.srcs.empty() && d.packets && d.rank == packets.rank &&
                              d.buffer == BufferKind::kScratch && d.index < packets.index + packets.count &&
                              packets.index < d.index + d.count;
        if (overlaps && (writers.empty() || writers.back() != rank)) writers.push_back(rank);
      }
    }
  }
  return writers;
}

std::vector<ChunkRef> SweptScratchSpares(const ProgramSpec& plan, int rank) {
  std::vector<ChunkRef> spares;
  if (!UsesPackets(plan)) return spares;
  auto note = [&](const ChunkRef& c) {
    if (c.rank != rank || c.buffer != BufferKind::kScratch) return;
    const bool seen = std::any_of(spares.begin(), spares.end(), [&](const ChunkRef& s) {
      return s.index == c.index && s.count == c.count && s.packets == c.packets;
    });
    if (!seen) spares.push_back(c);
  };
  for (const auto& tbs : plan.ranks) {
    for (const ThreadBlock& tb : tbs) {
      for (const Op& op : tb.ops) {
        if (!op.srcs.empty()) note(op.dst);  // signals, waits and flushes name no data
        for (const ChunkRef& s : op.srcs) note(s);
      }
    }
  }
  return spares;
}

std::vector<Range> SpareSpans(const std::vector<ChunkRef>& spares, uint64_t count, int chunks_per_segment,
                              uint64_t elem) {
  std::vector<Range> spans;
  spans.reserve(spares.size());
  for (const ChunkRef& c : spares) {
    spans.push_back(ScratchSpan(count, chunks_per_segment, c.index, c.count, c.packets, elem));
  }
  return spans;
}

void ZeroUnspared(char* half, Range slice, std::vector<Range> spans) {
  std::sort(spans.begin(), spans.end(), [](const Range& x, const Range& y) { return x.begin < y.begin; });
  uint64_t at = slice.begin;
  for (const Range& s : spans) {
    if (s.begin > at && at < slice.end) std::memset(half + at, 0, std::min(s.begin, slice.end) - at);
    at = std::max(at, s.end);
  }
  if (at < slice.end) std::memset(half + at, 0, slice.end - at);
}

}  // namespace vdev::channels::internal
