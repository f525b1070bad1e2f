// What the executors need to know of a plan's LL packets: what the stale-packet sweep
// (internal/layout.h, PacketSweepSlice) must spare of one rank's scratch, the sweep itself on the
// host (the CUDA kernel sweeps the same bytes), and which ranks write the packets a reader awaits.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_PACKET_SWEEP_H_
#define VDEV_SRC_CHANNELS_INTERNAL_PACKET_SWEEP_H_

#include <cstdint>
#include <vector>

#include "internal/layout.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels::internal {

// The scratch chunks of `rank` that some op of any rank reads or writes in an execution (each
// (index, count, packets) once, in the plan's order). Empty when the plan has no packets: only
// packet lines carry flags, so only such plans sweep.
std::vector<ChunkRef> SweptScratchSpares(const ProgramSpec& plan, int rank);

// The ranks (ascending, each once) with an op that writes packets into a chunk of `packets`, a
// scratch reference of the reading rank: the ranks a reader of it waits for. Only their exit means
// the packets can no longer come; a peer that finished its executions and exited may have written
// everything it ever will, while a slower writer is still on its way.
std::vector<int> PacketWriters(const ProgramSpec& plan, const ChunkRef& packets);

// Whether any op of any rank names a chunk as LL packets (every plan that sends packets reads them
// so).
bool UsesPackets(const ProgramSpec& plan);

// The bytes of a scratch half that `spares` occupy in an execution of `count` elements of `elem`
// bytes per segment (ScratchSpan of each).
std::vector<Range> SpareSpans(const std::vector<ChunkRef>& spares, uint64_t count, int chunks_per_segment,
                              uint64_t elem);

// Zeroes the bytes of `slice` of a scratch half (byte offsets from `half`) that no span covers.
void ZeroUnspared(char* half, Range slice, std::vector<Range> spans);

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_PACKET_SWEEP_H_
