// The low-latency (LL) all-reduce kernels: one-shot and two-shot over flagged 16-byte lines.
#include "internal/cuda_kernel_device.cuh"

namespace vdev::internal {
namespace {

// One-shot, low-latency form: no barrier. Each line a peer receives holds 8 bytes of data and the
// call's flag twice (each 8-byte half is written atomically), so a reader that sees the flag in
// both halves has the data. The two workspace halves alternate by call parity; a line in a half was
// written or zeroed within the last 2 * kLLSweepEvery * kLLSweepSlices calls, never with this call's
// flag, so a stale line is never taken for new. At most 64 registers (no spills): under programmatic
// launch the next call's blocks then fit beside this call's and wait on the SM, which took ~0.3 us
// off small messages. Workers' lines are read kBatch at a time (kPeersAtOnce).
template <typename T, int kBatch, bool kOneRound>
__global__ void __launch_bounds__(kLLThreads, MinBlocksFor64Registers(kLLThreads))
    OneShotLLKernel(const __grid_constant__ KernelArgs a) {
  const LLCall ll = StartLLCall(a);
  constexpr int E = 8 / sizeof(T);
  const size_t bytes = a.count * sizeof(T);
  const size_t lines = OneShotLLLines(a.count, sizeof(T));
  const Range r = BlockRange(lines);
  const char* in = static_cast<const char*>(a.in);
  auto send = [&](size_t i, uint2 d) {
#pragma unroll
    for (int k = 1; k < kMaxWorkers; ++k) {
      if (k < a.world) {
        StoreLine(
            a.data[(a.rank + k) % a.world] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, ll.parity, a.rank) + 16 * i,
            d, ll.flag);
      }
    }
  };
  // While the peers' lines travel. Slot j of the half holds lines [0, lines) from worker j != rank.
  auto sweep = [&] {
    SweepStaleLines(a, ll.call, [&](size_t line) {
      for (int j = 0; j < a.world; ++j) {
        if (j != a.rank && line - j * (a.slot_bytes / 16) < lines) return true;  // unsigned: below the slot wraps
      }
      return false;
    });
  };
  const char* mine = a.data[a.rank] + ll.parity * a.half_bytes;
  auto receive = [&](size_t i, uint2 own) {
    float acc[E];
    StartSums(acc);
    SumInRankOrder<kBatch>(
        a, mine + 16 * i, [&](uint4 v) { return v.y == ll.flag && v.w == ll.flag; },
        [&](const char* p, int j) {
          const uint2 d = PollLine(a, p, ll.flag, j);
          return make_uint4(d.x, ll.flag, d.y, ll.flag);
        },
        [&] { AddPayload<T>(acc, own); }, [&](uint4 v) { AddPayload<T>(acc, make_uint2(v.x, v.z)); });
    StorePayload(static_cast<char*>(a.out), i, bytes, ToPayload<T>(acc));
  };
  if constexpr (kOneRound) {
    const size_t i = r.lo + threadIdx.x;
    const uint2 own = i < r.hi ? LoadPayload(in, i, bytes) : uint2{0, 0};
    if (i < r.hi) send(i, own);
    sweep();
    if (i < r.hi) receive(i, own);
  } else {
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) send(i, LoadPayload(in, i, bytes));
    sweep();
    // The own words are loaded before the polls, which the asm keeps in order.
    for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) receive(i, LoadPayload(in, i, bytes));
  }
  FinishEpoch(a.epochs, ll.call);
}

// Two-shot in the low-latency form: chunk q of every input goes to worker q as flagged lines;
// worker q sums them in rank order and sends the sum to everyone as flagged lines again. A thread
// handles the same line index in every chunk and phase, so no barrier is needed anywhere.
template <typename T>
__global__ void __launch_bounds__(kThreads) TwoShotLLKernel(const __grid_constant__ KernelArgs a) {
  const LLCall ll = StartLLCall(a);
  constexpr int E = 8 / sizeof(T);
  const size_t chunk_bytes = a.chunk_elems * sizeof(T);
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange(chunk_bytes / 8);
  auto length = [&](int j) -> size_t {  // bytes of chunk j
    const size_t begin = min(bytes, j * chunk_bytes);
    return min(bytes, begin + chunk_bytes) - begin;
  };
  auto slot = [&](int owner, int stage, int source) {
    return a.data[owner] + TwoShotSlotOffset(a.half_bytes, a.slot_bytes, a.world, stage, ll.parity, source);
  };
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  const size_t mine = length(a.rank);
  // Stage 0 slot j: our chunk's lines from worker j; stage 1 slot j: worker j's chunk, summed.
  SweepStaleLines(a, ll.call, [&](size_t line) {
    for (int j = 0; j < a.world; ++j) {
      if (j == a.rank) continue;
      const size_t reduce = line - j * (a.slot_bytes / 16), gather = reduce - a.world * (a.slot_bytes / 16);
      if (reduce < (mine + 7) / 8 || gather < (length(j) + 7) / 8) return true;  // unsigned: below a slot wraps
    }
    return false;
  });
  for (size_t i = r.lo + threadIdx.x; i < r.hi; i += blockDim.x) {
    for (int k = 1; k < a.world; ++k) {
      const int q = (a.rank + k) % a.world;
      if (8 * i < length(q))
        StoreLine(slot(q, 0, a.rank) + 16 * i, LoadPayload(in + q * chunk_bytes, i, length(q)), ll.flag);
    }
    if (8 * i < mine) {
      float acc[E];
      StartSums(acc);
      for (int j = 0; j < a.world; ++j) {
        AddPayload<T>(acc, j == a.rank ? LoadPayload(in + a.rank * chunk_bytes, i, mine)
                                       : PollLine(a, slot(a.rank, 0, j) + 16 * i, ll.flag, j));
      }
      const uint2 d = ToPayload<T>(acc);
      StorePayload(out + a.rank * chunk_bytes, i, mine, d);
      for (int k = 1; k < a.world; ++k) StoreLine(slot((a.rank + k) % a.world, 1, a.rank) + 16 * i, d, ll.flag);
    }
    for (int k = 1; k < a.world; ++k) {
      const int j = (a.rank + k) % a.world;
      if (8 * i < length(j))
        StorePayload(out + j * chunk_bytes, i, length(j), PollLine(a, slot(a.rank, 1, j) + 16 * i, ll.flag, j));
    }
  }
  FinishEpoch(a.epochs, ll.call);
}

}  // namespace

Kernels OneShotLLInstances(int world, bool one_round) {
  return VDEV_ONE_SHOT_KERNELS(OneShotLLKernel, world, one_round);
}
Kernels TwoShotLLInstances() { return VDEV_KERNELS(TwoShotLLKernel); }

}  // namespace vdev::internal
