// Where the one-shot and two-shot all-reduce keep their slots inside a workspace (both backends).
#ifndef VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_
#define VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_

#include <cstddef>

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

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_ALLREDUCE_LAYOUT_H_
