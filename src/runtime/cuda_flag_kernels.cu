// The flag-barrier all-reduce kernels: one-shot, two-shot and zero-copy one-shot (see
// cuda_kernel_device.cuh for the barrier and the pack copies).
#include "internal/cuda_kernel_device.cuh"
#include "internal/cuda_zero_copy.h"

namespace vdev::internal {
namespace {

template <typename T>
__global__ void __launch_bounds__(kThreads) OneShotKernel(const __grid_constant__ KernelArgs a) {
  const FlagCall call = StartFlagCall(a);
  constexpr int P = kPer<T>;
  const Range r = BlockRange((a.count + P - 1) / P);
  const T* in = static_cast<const T*>(a.in);
  T* peers[kMaxWorkers];
#pragma unroll
  for (int k = 1; k < kMaxWorkers; ++k) {
    if (k < a.world) {
      peers[k - 1] = reinterpret_cast<T*>(a.data[(a.rank + k) % a.world] +
                                          OneShotSlotOffset(a.half_bytes, a.slot_bytes, call.parity, a.rank));
    }
  }
  CopyRange<T>(r, a.count, in, peers, a.world - 1);
  Barrier(a, a.flags_in, call.epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world)
      sources[j] = j == a.rank ? in
                               : reinterpret_cast<const T*>(
                                     a.data[a.rank] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, call.parity, j));
  }
  T* out = static_cast<T*>(a.out);
  ReduceRange<T>(r, a.count, sources, a.world, a.rank, &out, 1);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) TwoShotKernel(const __grid_constant__ KernelArgs a) {
  const FlagCall call = StartFlagCall(a);
  constexpr int P = kPer<T>;
  const size_t chunk = a.chunk_elems;
  const Range r = BlockRange(chunk / P);
  auto length = [&](int j) -> size_t {
    const size_t begin = min(a.count, j * chunk);
    return min(a.count, begin + chunk) - begin;
  };
  auto slot = [&](int owner, int stage, int source) {
    return reinterpret_cast<T*>(a.data[owner] +
                                TwoShotSlotOffset(a.half_bytes, a.slot_bytes, a.world, stage, call.parity, source));
  };
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  // Reduce-scatter: chunk q of this input goes to worker q.
  for (int k = 1; k < a.world; ++k) {
    const int q = (a.rank + k) % a.world;  // spread the first stores over all links
    T* dst = slot(q, 0, a.rank);
    CopyRange<T>(r, length(q), in + q * chunk, &dst, 1);
  }
  Barrier(a, a.flags_in, call.epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world) sources[j] = j == a.rank ? in + a.rank * chunk : slot(a.rank, 0, j);
  }
  T* dsts[kMaxWorkers];
  dsts[0] = out + a.rank * chunk;
#pragma unroll
  for (int k = 1; k < kMaxWorkers; ++k) {
    if (k < a.world) dsts[k] = slot((a.rank + k) % a.world, 1, a.rank);
  }
  ReduceRange<T>(r, length(a.rank), sources, a.world, a.rank, dsts, a.world);
  Barrier(a, a.flags_out, call.epoch);
  // All-gather: the sums the peers wrote into this worker's slots.
  for (int j = 0; j < a.world; ++j) {
    if (j == a.rank) continue;
    T* dst = out + j * chunk;
    CopyRange<T>(r, length(j), slot(a.rank, 1, j), &dst, 1);
  }
}

// Zero-copy one-shot: the inputs already lie in IPC memory (a.data[j] is worker j's input). Entry
// barrier: a peer's block b arrives only once its kernel runs, so its producer (earlier work on its
// stream) has finished writing the input. Exit barrier: block b leaves only when every peer's block b
// has finished reading range r of every input, so once the whole grid is done no peer reads this
// worker's input any more and the next producer on this stream may overwrite it. Without the exit
// barrier (kExitBarrier false) the caller vouches for that (ZeroCopyRead::kInPlaceNoExitBarrier).
template <typename T, bool kExitBarrier = true>
__global__ void __launch_bounds__(kThreads) ZeroCopyOneShotKernel(const __grid_constant__ KernelArgs a) {
  const FlagCall call = StartFlagCall(a);
  constexpr int P = kPer<T>;
  Barrier(a, a.flags_in, call.epoch);
  const T* sources[kMaxWorkers];
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j) {
    if (j < a.world) sources[j] = reinterpret_cast<const T*>(a.data[j]);
  }
  T* out = static_cast<T*>(a.out);
  ReduceRange<T>(BlockRange((a.count + P - 1) / P), a.count, sources, a.world, a.rank, &out, 1);
  if (kExitBarrier) Barrier(a, a.flags_out, call.epoch);
}

}  // namespace

Kernels OneShotInstances() { return VDEV_KERNELS(OneShotKernel); }
Kernels TwoShotInstances() { return VDEV_KERNELS(TwoShotKernel); }
Kernels ZeroCopyOneShotInstances() { return VDEV_KERNELS(ZeroCopyOneShotKernel); }
Kernels ZeroCopyOneShotNoExitInstances() {
  return {ZeroCopyOneShotKernel<float, false>, ZeroCopyOneShotKernel<__half, false>,
          ZeroCopyOneShotKernel<__nv_bfloat16, false>};
}

}  // namespace vdev::internal
