// The one-shot sentinel all-reduce kernel: receive slots filled with a NaN pattern until data lands.
#include "internal/cuda_sentinel.cuh"

namespace vdev::internal {
namespace {

template <typename T, int kBatch, bool kOneRound>  // at most 64 registers, as OneShotLLKernel
__global__ void __launch_bounds__(kSentinelMaxThreads, MinBlocksFor64Registers(kSentinelMaxThreads))
    OneShotSentinelKernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  const size_t parity = call & 1;
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange((bytes + 15) / 16);
  const char* in = static_cast<const char*>(a.in);
  auto load_own = [&](size_t i) { return WithoutSentinel<T>(LoadPack(in, i, bytes)); };
  char* mine = a.data[a.rank] + parity * a.half_bytes;
  auto receive = [&](size_t i, uint4 own) {
    float acc[P];
    ReceivePack<T, kBatch>(a, mine, i, own, acc);
    StorePack(static_cast<char*>(a.out), i, bytes, ToPack<T>(acc));
  };
  if constexpr (kOneRound) {
    const size_t i = r.lo + threadIdx.x;
    if (i < r.hi) {
      const uint4 own = load_own(i);
      SendPack(a, parity, i, own);
      receive(i, own);
    }
  } else {
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) SendPack(a, parity, i, load_own(i));
    // This worker's pack loaded before the polls (which the asm keeps in order).
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) receive(i, load_own(i));
  }
  FinishEpoch(a.epochs, call);
}

}  // namespace

Kernels OneShotSentinelInstances(int world, bool one_round) {
  return VDEV_ONE_SHOT_KERNELS(OneShotSentinelKernel, world, one_round);
}

}  // namespace vdev::internal
