// The sentinel protocol's device helpers, shared by the one-shot sentinel all-reduce
// (cuda_sentinel_kernel.cu) and the fused all-reduce + add + rms_norm (cuda_fused_norm_kernel.cu),
// which use the same workspace and must leave it in the same state.
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_SENTINEL_CUH_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_SENTINEL_CUH_

#include "internal/cuda_kernel_device.cuh"

namespace vdev::internal {
namespace {

// One-shot with sentinel-filled receive slots: every element of a slot holds the all-ones pattern
// (a NaN in f32, f16 and bf16) until a peer's data lands there, so the data is its own flag and no
// byte on the wire carries anything else (LL128 spends 1/15 of them on epochs, LL half). A reader
// polls a 16-byte pack until none of its elements is the sentinel; a torn store only delays it, as
// each element arrives whole. It then sums and puts the sentinel back, so after every call the
// whole workspace is sentinel again, whatever sizes came before. An input element with the sentinel
// pattern is sent as the same NaN with the sign cleared (every worker sums the same values, so the
// results stay bitwise equal; a NaN summand makes the sum NaN either way). Double buffering as the
// other kernels: the peers write call c + 2 into a half only after this worker's call c finished.
template <typename T>
__device__ __forceinline__ uint32_t SentinelElements(uint32_t w) {  // all ones where an element is all ones
  if constexpr (sizeof(T) == 2) return __vcmpeq2(w, 0xffffffffu);
  return w == 0xffffffffu ? 0xffffffffu : 0u;
}
template <typename T>
__device__ __forceinline__ bool Arrived(uint4 v) {
  return (SentinelElements<T>(v.x) | SentinelElements<T>(v.y) | SentinelElements<T>(v.z) | SentinelElements<T>(v.w)) ==
         0;
}
template <typename T>
__device__ __forceinline__ uint4 WithoutSentinel(uint4 v) {
  constexpr uint32_t kSigns = sizeof(T) == 2 ? 0x80008000u : 0x80000000u;
  return make_uint4(v.x & ~(SentinelElements<T>(v.x) & kSigns), v.y & ~(SentinelElements<T>(v.y) & kSigns),
                    v.z & ~(SentinelElements<T>(v.z) & kSigns), v.w & ~(SentinelElements<T>(v.w) & kSigns));
}
// Bytes [16i, 16i + 16) of an input of `bytes` bytes, zero past its end (zero is no sentinel).
__device__ __forceinline__ uint4 LoadPack(const char* in, size_t i, size_t bytes) {
  if (16 * i + 16 <= bytes) return *reinterpret_cast<const uint4*>(in + 16 * i);
  const uint2 lo = LoadPayload(in, 2 * i, bytes), hi = LoadPayload(in, 2 * i + 1, bytes);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}
__device__ __forceinline__ void StorePack(char* out, size_t i, size_t bytes, uint4 v) {
  if (16 * i + 16 <= bytes) {
    *reinterpret_cast<uint4*>(out + 16 * i) = v;
    return;
  }
  StorePayload(out, 2 * i, bytes, make_uint2(v.x, v.y));
  StorePayload(out, 2 * i + 1, bytes, make_uint2(v.z, v.w));
}
template <typename T>
__device__ __forceinline__ uint4 PollPack(const KernelArgs& a, const char* p, int source) {
  return PollTogether(a, p, source, [](uint4 v) { return Arrived<T>(v); });
}

// Sends pack i of this worker's input (`d`, sentinel-free) into its slot of every peer's `half`.
__device__ __forceinline__ void SendPack(const KernelArgs& a, size_t parity, size_t i, uint4 d) {
  const size_t slot = OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank);
#pragma unroll
  for (int k = 1; k < kMaxWorkers; ++k) {
    if (k < a.world) {
      StoreLine128(a.data[(a.rank + k) % a.world] + slot + 16 * i, Word(make_uint2(d.x, d.y)),
                   Word(make_uint2(d.z, d.w)));
    }
  }
}

// Pack i of the all-reduce: this worker's `own` and every peer's pack in this worker's receive half
// `mine`, summed in rank order into acc (f32); the peers' slots are restored to the sentinel behind.
template <typename T, int kBatch>
__device__ __forceinline__ void ReceivePack(const KernelArgs& a, char* mine, size_t i, uint4 own,
                                            float (&acc)[kPer<T>]) {
  StartSums(acc);
  SumInRankOrder<kBatch>(
      a, mine + 16 * i, [](uint4 v) { return Arrived<T>(v); },
      [&](const char* p, int j) { return PollPack<T>(a, p, j); }, [&] { AddPack<T>(acc, own); },
      [&](uint4 v) { AddPack<T>(acc, v); });
  for (int j = 0; j < a.world; ++j) {
    if (j != a.rank) *reinterpret_cast<uint4*>(mine + j * a.slot_bytes + 16 * i) = make_uint4(~0u, ~0u, ~0u, ~0u);
  }
}
}  // namespace
}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_SENTINEL_CUH_
