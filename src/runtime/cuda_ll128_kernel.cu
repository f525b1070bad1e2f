// The one-shot LL128 all-reduce kernel: 128-byte lines carrying their epoch.
#include "internal/cuda_kernel_device.cuh"

namespace vdev::internal {
namespace {

// One-shot LL128: 8 consecutive lanes store one 128-byte line (15 data words and the epoch in
// lane 7's second word) with one 16-byte store each, so a warp's store instruction carries whole
// lines and NVLink delivers each line as one unit. A reader loads a line the same way (one warp
// load = one L2 access per line) and takes it only when the epoch word is this call's; otherwise
// the whole warp loads again. Stale lines carry older epochs (epochs only grow, and the epoch word
// is at the same place in every line), so they are never taken for new. 1/15 more bytes than the
// data instead of LL's 2x.
// Warp-wide: waits (bounded) until every active line of this warp's four carries `epoch`; returns
// this lane's 16 bytes. All 32 lanes call it together. (Polling one peer at a time: loading every
// peer's line at once was slower, measured — three times the polling traffic in the L2 that the
// peers' NVLink writes land in.)
__device__ __forceinline__ ulonglong2 PollLines128(const KernelArgs& a, const char* p, bool active, bool epoch_lane,
                                                   uint64_t epoch, int source) {
  constexpr unsigned kWarp = 0xffffffffu;
  ulonglong2 v = active ? LoadLine128(p) : ulonglong2{0, 0};
  if (!__all_sync(kWarp, !active || !epoch_lane || v.y == epoch)) {
    const uint64_t start = GlobalTimer();
    for (uint32_t spins = 1;; ++spins) {
      if (active) v = LoadLine128(p);
      if (__all_sync(kWarp, !active || !epoch_lane || v.y == epoch)) break;
      if ((spins & 1023) == 0 && __any_sync(kWarp, GlobalTimer() - start > a.timeout_ns)) {
        if ((threadIdx.x & 31) == 0) *reinterpret_cast<volatile int*>(a.error) = source + 1;
        break;
      }
    }
  }
  return v;
}

template <typename T, int kBatch, bool kOneRound>  // at most 64 registers, as OneShotLLKernel
__global__ void __launch_bounds__(kLL128Threads, MinBlocksFor64Registers(kLL128Threads))
    OneShotLL128Kernel(const __grid_constant__ KernelArgs a) {
  FollowPreviousGrid();
  constexpr int E = 8 / sizeof(T);
  constexpr int kLinesPerWarp = 32 / 8;
  const uint64_t epoch = a.epochs[blockIdx.x] + 1;
  const size_t parity = epoch & 1;
  const size_t bytes = a.count * sizeof(T);
  const Range r = BlockRange(OneShotLL128Lines(a.count, sizeof(T)));
  const int lane = threadIdx.x & 31, part = lane & 7;
  const bool epoch_lane = part == 7;
  const size_t warp_lines = (blockDim.x / 32) * kLinesPerWarp;
  const char* in = static_cast<const char*>(a.in);
  char* out = static_cast<char*>(a.out);
  // Words [w, w + 2) of the input (just w for the epoch lane), as in every loop below.
  auto first_word = [&](size_t line) { return kLL128DataWords * line + 2 * part; };
  struct Own {
    uint2 lo, hi;
  };
  auto load_own = [&](size_t line) {
    const size_t w = first_word(line);
    return Own{LoadPayload(in, w, bytes), epoch_lane ? uint2{0, 0} : LoadPayload(in, w + 1, bytes)};
  };
  auto send = [&](size_t line, Own own) {
    const uint64_t lo = Word(own.lo), hi = epoch_lane ? epoch : Word(own.hi);
#pragma unroll
    for (int k = 1; k < kMaxWorkers; ++k) {
      if (k < a.world) {
        StoreLine128(a.data[(a.rank + k) % a.world] + OneShotSlotOffset(a.half_bytes, a.slot_bytes, parity, a.rank) +
                         kLL128LineBytes * line + 16 * part,
                     lo, hi);
      }
    }
  };
  const char* mine = a.data[a.rank] + parity * a.half_bytes;
  // Warp-wide (all 32 lanes): sums this worker's `own` words and the peers' lines of `line`.
  auto receive = [&](size_t line, bool active, Own own) {
    const size_t w = first_word(line);
    float acc_lo[E], acc_hi[E];
    StartSums(acc_lo);
    StartSums(acc_hi);
    const char* at = mine + kLL128LineBytes * line + 16 * part;  // + j * slot_bytes: worker j's
    for (int g = 0; g < a.world; g += kBatch) {
      ulonglong2 v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int j = g + u;
        v[u] = active && j < a.world && j != a.rank ? LoadLine128(at + j * a.slot_bytes) : ulonglong2{0, 0};
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int j = g + u;
        if (j >= a.world) break;
        if (j == a.rank) {
          AddPayload<T>(acc_lo, own.lo);
          if (!epoch_lane) AddPayload<T>(acc_hi, own.hi);
          continue;
        }
        if (!__all_sync(0xffffffffu, !active || !epoch_lane || v[u].y == epoch)) {
          v[u] = PollLines128(a, at + j * a.slot_bytes, active, epoch_lane, epoch, j);
        }
        AddPayload<T>(acc_lo, Halves(v[u].x));
        if (!epoch_lane) AddPayload<T>(acc_hi, Halves(v[u].y));
      }
    }
    if (active && 8 * w < bytes) {
      StorePayload(out, w, bytes, ToPayload<T>(acc_lo));
      if (!epoch_lane && 8 * (w + 1) < bytes) StorePayload(out, w + 1, bytes, ToPayload<T>(acc_hi));
    }
  };
  const size_t first = r.lo + (threadIdx.x / 32) * kLinesPerWarp;
  if constexpr (kOneRound) {
    if (first < r.hi) {
      const size_t line = first + lane / 8;
      const bool active = line < r.hi;
      Own own{{0, 0}, {0, 0}};
      if (active) {
        own = load_own(line);
        send(line, own);
      }
      receive(line, active, own);
    }
  } else {
    for (size_t base = first; base < r.hi; base += warp_lines) {
      const size_t line = base + lane / 8;
      if (line < r.hi) send(line, load_own(line));
    }
    for (size_t base = first; base < r.hi; base += warp_lines) {
      const size_t line = base + lane / 8;
      const bool active = line < r.hi;
      // This worker's words, loaded before the polls (which the asm keeps in order).
      receive(line, active, active ? load_own(line) : Own{{0, 0}, {0, 0}});
    }
  }
  FinishEpoch(a.epochs, epoch);
}

}  // namespace

Kernels OneShotLL128Instances(int world, bool one_round) {
  return VDEV_ONE_SHOT_KERNELS(OneShotLL128Kernel, world, one_round);
}

}  // namespace vdev::internal
