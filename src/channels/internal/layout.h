// Byte arithmetic of channel programs shared by the validator, the host executor and the CUDA
// executor: chunk ranges, parts of thread-block groups, LL packet lines, the IPC region's layout.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_LAYOUT_H_
#define VDEV_SRC_CHANNELS_INTERNAL_LAYOUT_H_

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define VDEV_HD __host__ __device__ __forceinline__
#else
#define VDEV_HD inline
#endif

namespace vdev::channels::internal {

// First element of chunk k of a buffer cut into segments of `count` elements, C chunks each.
VDEV_HD uint64_t ChunkBegin(uint64_t count, int chunks_per_segment, int k) {
  if (chunks_per_segment == 1) return static_cast<uint64_t>(k) * count;  // no division (GPU: slow)
  const uint64_t c = static_cast<uint64_t>(chunks_per_segment);
  const uint64_t s = static_cast<uint64_t>(k) / c, j = static_cast<uint64_t>(k) % c;
  return s * count + (j * count) / c;
}

// A byte range [begin, end).
struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
  VDEV_HD uint64_t size() const { return end - begin; }
};

// Bytes of chunks [index, index + n).
VDEV_HD Range ChunkBytes(uint64_t count, int chunks_per_segment, int index, int n, uint64_t elem) {
  return {ChunkBegin(count, chunks_per_segment, index) * elem, ChunkBegin(count, chunks_per_segment, index + n) * elem};
}

// Part p of `parts` of a range of `size` bytes, relative to its start: cut on 16-byte boundaries so
// every part starts 16-byte aligned relative to the range (and on a packet line).
VDEV_HD Range PartOf(uint64_t size, int p, int parts) {
  if (parts == 1) return {0, size};  // no division (GPU: slow)
  const uint64_t units = (size + 15) / 16;
  uint64_t b, e;
  if (units <= 0xffffffffu / static_cast<uint64_t>(parts)) {  // 32-bit division where it suffices (GPU: faster)
    const uint32_t u = static_cast<uint32_t>(units), n = static_cast<uint32_t>(parts);
    b = uint64_t{u * static_cast<uint32_t>(p) / n} * 16;
    e = uint64_t{u * static_cast<uint32_t>(p + 1) / n} * 16;
  } else {
    b = units * static_cast<uint64_t>(p) / static_cast<uint64_t>(parts) * 16;
    e = units * static_cast<uint64_t>(p + 1) / static_cast<uint64_t>(parts) * 16;
  }
  if (e > size) e = size;
  return {b < size ? b : size, e};
}

// LL packets: a 16-byte line carries 8 data bytes as two 8-byte words {u32 data, u32 flag}. The
// packets of chunks [index, ...) start at line index + (first data byte) / 8, so every chunk has
// room for its lines whatever its size and neighbours, and a 16-byte aligned part starts a line.
VDEV_HD uint64_t PacketLine(uint64_t count, int chunks_per_segment, int index, uint64_t elem) {
  return static_cast<uint64_t>(index) + ChunkBegin(count, chunks_per_segment, index) * elem / 8;
}

// Bytes of one scratch half holding `chunks` chunks (as data or as packets).
VDEV_HD uint64_t ScratchHalfBytes(uint64_t count, int chunks_per_segment, int chunks, uint64_t elem) {
  const uint64_t data = ChunkBegin(count, chunks_per_segment, chunks) * elem;
  const uint64_t packets = 16 * (static_cast<uint64_t>(chunks) + data / 8 + 1);
  return data > packets ? data : packets;
}

// The flag of execution `call` (1-based): never 0, so zeroed memory never passes for a packet; it
// repeats after 2^31 executions.
VDEV_HD uint32_t PacketFlag(uint64_t call) { return 0x80000000u | static_cast<uint32_t>(call & 0x7fffffffu); }

// Stale packets: a packet line no op writes any more keeps its flag, and flags repeat after 2^31
// executions, so a line left that long would pass for new with a reader that gets there before its
// writer. Every kPacketSweepEvery-th execution of each parity therefore zeroes one of
// kPacketSweepSlices slices of the rank's own scratch half of that parity (PacketSweepSlice),
// sparing the bytes some op touches in that execution (ScratchSpan of each such reference): every
// byte of a half is written or zeroed at least once per 2 * kPacketSweepEvery * kPacketSweepSlices
// executions, far fewer than 2^31. Only that execution's ops touch the half meanwhile (a rank two
// executions ahead needs this rank's next execution first), so the spared bytes are all there is to
// keep.
inline constexpr uint64_t kPacketSweepEvery = 1024;
inline constexpr uint64_t kPacketSweepSlices = 64;

// Whether execution `call` sweeps (every kPacketSweepEvery-th of each parity).
VDEV_HD bool SweepsPackets(uint64_t call) { return ((call >> 1) & (kPacketSweepEvery - 1)) == 0; }

// The bytes of its scratch half [begin, end) that execution `call` sweeps: empty for most calls.
VDEV_HD Range PacketSweepSlice(uint64_t call, uint64_t half_bytes) {
  if (!SweepsPackets(call)) return {0, 0};
  const uint64_t lines = half_bytes / 16;
  const uint64_t per = (lines + kPacketSweepSlices - 1) / kPacketSweepSlices;
  const uint64_t slice = (call >> 1) / kPacketSweepEvery % kPacketSweepSlices;
  const uint64_t lo = slice * per < lines ? slice * per : lines;
  const uint64_t hi = lo + per < lines ? lo + per : lines;
  return {16 * lo, 16 * hi};
}

// The bytes of a scratch half that chunks [index, index + n) occupy in an execution of `count`
// elements per segment: their data, or their packet lines (one per 8 data bytes, whole lines).
VDEV_HD Range ScratchSpan(uint64_t count, int chunks_per_segment, int index, int n, bool packets, uint64_t elem) {
  const Range data = ChunkBytes(count, chunks_per_segment, index, n, elem);
  if (!packets) return data;
  const uint64_t first = PacketLine(count, chunks_per_segment, index, elem);
  return {16 * first, 16 * (first + (data.size() + 7) / 8)};
}

VDEV_HD uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// One rank's IPC region: input, output, scratch half 0, scratch half 1 (each 256-byte aligned),
// sized for `max_count` elements; the offsets do not depend on a call's count.
struct RegionLayout {
  uint64_t input = 0, output = 0, scratch[2] = {0, 0}, total = 0;
};
VDEV_HD RegionLayout MakeRegionLayout(uint64_t max_count, uint64_t elem, int input_segments, int output_segments,
                                      int chunks_per_segment, int scratch_chunks) {
  RegionLayout l;
  l.input = 0;
  l.output = AlignUp(max_count * elem * static_cast<uint64_t>(input_segments), 256);
  l.scratch[0] = l.output + AlignUp(max_count * elem * static_cast<uint64_t>(output_segments), 256);
  const uint64_t half = AlignUp(ScratchHalfBytes(max_count, chunks_per_segment, scratch_chunks, elem), 256);
  l.scratch[1] = l.scratch[0] + half;
  l.total = l.scratch[1] + half;
  return l;
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_LAYOUT_H_
