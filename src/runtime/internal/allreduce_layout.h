// Where the one-shot and two-shot all-reduce keep their slots inside a workspace (both backends).
#ifndef VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_
#define VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_

#include <cstddef>
#include <cstdint>

// Shared by host code and the CUDA kernels.
#ifdef __CUDACC__
#define VDEV_HOST_DEVICE __host__ __device__
#else
#define VDEV_HOST_DEVICE
#endif

namespace vdev::internal {

VDEV_HOST_DEVICE inline size_t RoundUpTo(size_t v, size_t to) { return (v + to - 1) / to * to; }

// The workspace is split into two fixed halves; a call uses half (epoch & 1). The halves must not
// depend on the call's size: consecutive calls of different sizes would otherwise overlap.
VDEV_HOST_DEVICE inline size_t HalfBytes(size_t workspace_bytes) { return workspace_bytes / 2 / 256 * 256; }

// One-shot: slot `source` of a half holds that worker's whole input.
VDEV_HOST_DEVICE inline size_t OneShotSlotBytes(size_t count, size_t elem) { return RoundUpTo(count * elem, 256); }
VDEV_HOST_DEVICE inline size_t OneShotSlotOffset(size_t half_bytes, size_t slot_bytes, int parity, int source) {
  return parity * half_bytes + source * slot_bytes;
}

// The LL kernels (one-shot LL, two-shot LL) count their own calls in the LL workspace's epochs, which
// only LL calls advance; call c uses half c & 1 and tags its lines with LLFlag(c): the call's low 31
// bits with the top bit set. It is never 0, so zeroed memory never passes for data, and it repeats
// only after 2^31 calls. (One OR: folding the call modulo 2^32 - 1 instead cost 0.05 us per call.)
VDEV_HOST_DEVICE inline uint32_t LLFlag(uint64_t call) {
  return 0x80000000u | static_cast<uint32_t>(call & 0x7fffffffu);
}

// A line left untouched for 2^31 calls would carry the flag its reader waits for. So every
// kLLSweepEvery-th call of each parity zeroes one slice of its own receive half, sparing the lines
// peers write in that call: lines [lo, hi) of the half's `lines`, slice (call / (2 * kLLSweepEvery))
// mod kLLSweepSlices; the other calls get an empty span. Over 2 * kLLSweepEvery * kLLSweepSlices
// consecutive calls every line of both halves is zeroed or written, far within the flag's period.
// (Sweeping in few calls rather than a little in each: a sweep in every call cost small messages
// ~0.06 us with one-shot LL and ~0.4 us with two-shot LL on 2 H200s.)
inline constexpr uint64_t kLLSweepEvery = 1024;
inline constexpr uint64_t kLLSweepSlices = 64;
struct LineSpan {
  size_t lo, hi;
};
VDEV_HOST_DEVICE inline LineSpan LLSweepSlice(uint64_t call, size_t lines) {
  if (((call >> 1) & (kLLSweepEvery - 1)) != 0) return {0, 0};
  const size_t per = static_cast<size_t>((lines + kLLSweepSlices - 1) / kLLSweepSlices);
  const size_t lo = static_cast<size_t>((call >> 1) / kLLSweepEvery % kLLSweepSlices) * per;
  const size_t clamped = lo < lines ? lo : lines;
  return {clamped, clamped + per < lines ? clamped + per : lines};
}

// One-shot LL: 16-byte lines, each carrying 8 bytes of the input.
VDEV_HOST_DEVICE inline size_t OneShotLLLines(size_t count, size_t elem) { return (count * elem + 7) / 8; }
VDEV_HOST_DEVICE inline size_t OneShotLLSlotBytes(size_t count, size_t elem) {
  return RoundUpTo(OneShotLLLines(count, elem) * 16, 256);
}

// One-shot LL128: 128-byte lines of 16 eight-byte words; words 0..14 carry the next 120 bytes of
// the input, word 15 the call's epoch. Lines start 128-byte aligned (slots are 256-byte aligned), so
// the epoch word sits at the same place in every line whatever the message size.
inline constexpr size_t kLL128LineBytes = 128;
inline constexpr size_t kLL128DataWords = 15;
VDEV_HOST_DEVICE inline size_t OneShotLL128Lines(size_t count, size_t elem) {
  return ((count * elem + 7) / 8 + kLL128DataWords - 1) / kLL128DataWords;
}
VDEV_HOST_DEVICE inline size_t OneShotLL128SlotBytes(size_t count, size_t elem) {
  return RoundUpTo(OneShotLL128Lines(count, elem) * kLL128LineBytes, 256);
}

// Two-shot: worker j owns elements [j*chunk, (j+1)*chunk) ∩ [0, count); chunk is a multiple of
// 16 bytes so every chunk starts 16-byte aligned when the buffer does.
VDEV_HOST_DEVICE inline size_t TwoShotChunkElems(size_t count, int world, size_t elem) {
  size_t per_vector = 16 / elem > 0 ? 16 / elem : 1;
  return RoundUpTo((count + world - 1) / world, per_vector);
}
VDEV_HOST_DEVICE inline size_t TwoShotSlotBytes(size_t count, int world, size_t elem) {
  return RoundUpTo(TwoShotChunkElems(count, world, elem) * elem, 256);
}
VDEV_HOST_DEVICE inline size_t TwoShotLLSlotBytes(size_t count, int world, size_t elem) {
  return RoundUpTo(TwoShotChunkElems(count, world, elem) * elem * 2, 256);  // 16-byte lines of 8
}
// stage 0: reduce-scatter slots, stage 1: all-gather slots.
VDEV_HOST_DEVICE inline size_t TwoShotSlotOffset(size_t half_bytes, size_t slot_bytes, int world, int stage, int parity,
                                                 int source) {
  return parity * half_bytes + (static_cast<size_t>(stage) * world + source) * slot_bytes;
}

// The fused all-reduce + add + rms_norm (cuda_fused_norm_kernel.cu) over `rows` rows of `hidden`
// elements of `elem` bytes, in the one-shot sentinel layout: one block per row (rows spread over at
// most `max_blocks` blocks), each thread keeping `packs` 16-byte packs of its row in registers from
// the sum to the normalisation, so the row is read once. blocks == 0: the call does not fit (rows
// not a whole number of packs, longer than kFusedNormMaxThreads * FusedNormMaxPacks(elem) packs, or
// empty).
inline constexpr int kFusedNormMaxThreads = 512;
// Packs a thread may hold: 1, 2 or 4 for f32 (rows up to 32 KB), 1 or 2 for f16/bf16 (16 KB), so
// every type takes rows of 8192 and no instance spills (4 packs of 16-bit elements, 32 floats, did).
inline int FusedNormMaxPacks(size_t elem) { return elem >= 4 ? 4 : 2; }
struct FusedNormGrid {
  int blocks = 0;
  int threads = 0;
  int packs = 0;
};
// The fused kernel's block cap on a GPU of `sms` SMs used by `sharing` workers: block b of each
// worker waits on block b of the others, so every worker's grid must be resident at once. Two
// 512-thread blocks fit an SM; where workers share the GPU the cap is halved once more, since under
// programmatic launch a worker's next grid may sit beside its current one and take the slots a
// peer's current grid still needs.
inline int FusedNormBlockCap(int sms, int sharing, int max_blocks) {
  const int cap = sharing <= 1 ? 2 * sms : sms / sharing;
  return cap < 1 ? 1 : cap > max_blocks ? max_blocks : cap;
}
inline FusedNormGrid PlanFusedNormGrid(size_t rows, size_t hidden, size_t elem, int max_blocks) {
  const size_t row_bytes = hidden * elem;
  const size_t row_packs = row_bytes / 16;
  if (rows == 0 || row_packs == 0 || row_bytes % 16 != 0 ||
      row_packs > size_t{kFusedNormMaxThreads} * FusedNormMaxPacks(elem) || max_blocks < 1) {
    return {};
  }
  FusedNormGrid g;
  g.threads = static_cast<int>(RoundUpTo(row_packs < kFusedNormMaxThreads ? row_packs : kFusedNormMaxThreads, 32));
  const size_t per_thread = (row_packs + g.threads - 1) / g.threads;
  g.packs = per_thread <= 1 ? 1 : per_thread <= 2 ? 2 : 4;
  g.blocks = static_cast<int>(rows < static_cast<size_t>(max_blocks) ? rows : static_cast<size_t>(max_blocks));
  return g;
}

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_
