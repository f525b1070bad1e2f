// The all-reduce kernel families' launch shapes and instances. Each family lives in its own .cu
// (flag-barrier one-/two-shot and zero-copy, LL, LL128, sentinel); cuda_kernels.cu picks a family's
// instance and grid for a call.
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_FAMILIES_H_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_FAMILIES_H_

#include <cstddef>

#include "internal/allreduce_layout.h"
#include "internal/cuda_kernels.h"

namespace vdev::internal {

constexpr int kThreads = 512;
constexpr int kMaxBlocks = 128;  // all co-resident on an H100/H200
// The one-shot LL kernels run smaller blocks, up to two per SM: they end sooner, and the next call's
// blocks fit beside them under programmatic launch. Measured on 2 and 4 H200s against 512-thread blocks:
// LL with 128 threads -0.07 to -0.1 us up to 256 KB (larger messages go to LL128 or two-shot); LL128
// with 256 threads -0.07 to -0.4 us up to 1 MB (128 threads was slower from 512 KB).
constexpr int kLLThreads = 128;
constexpr int kLL128Threads = 256;
// The sentinel kernel: one 16-byte pack per thread where the grid allows, so the larger sizes it
// serves take more threads per block rather than more rounds per thread: blocks of 64 to 512 threads,
// one per 128 packs, at most kMaxLLBlocks. Measured on 2 H200s against at most 128 and 256 threads
// (the same 128 packs per block): 1 MB 5.80 vs 6.83 and 5.79 us, 2 MB 9.01 vs 12.55 and 9.92, 4 MB
// 15.20 vs 19.31 and 16.53; 64 packs per block made no difference.
constexpr int kSentinelMaxThreads = 512;
constexpr size_t kSentinelPacksPerBlock = 128;
constexpr int kMaxLLBlocks = kMaxBarrierBlocks;
// A launch bound that caps a kernel at 64 registers per thread (an SM has 64K).
constexpr int MinBlocksFor64Registers(int threads) { return 65536 / (64 * threads); }
static_assert(kMaxBlocks <= kMaxBarrierBlocks, "a block past the epoch counters would read a stray epoch");
// The one-shot LL kernels' readers issue their first loads of up to this many workers' lines together
// and then wait on the missing ones one worker at a time: when lines are already there a warp waits
// one L2 round trip instead of one per peer (on 4 H200s: LL -0.2 us at 1-4 KB, LL128 -0.6 us at 1 MB).
// Still adding in rank order, so every worker's result is bitwise the same. (Loading the other missing
// lines together again after each wait was slower: LL128 +0.2 us from 1 KB to 256 KB.)
constexpr int kPeersAtOnce = 4;
constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread when copying

// The f32, f16 and bf16 instances of one kernel.
struct Kernels {
  KernelFn f32, f16, bf16;
};

// Flag-barrier kernels (cuda_flag_kernels.cu).
Kernels OneShotInstances();
Kernels TwoShotInstances();
Kernels ZeroCopyOneShotInstances();
// Low-latency packet kernels for `world` workers; `one_round`: the grid gives each thread (LL128:
// each warp) at most one unit (see VDEV_ONE_SHOT_KERNELS in cuda_kernel_device.cuh).
Kernels OneShotLLInstances(int world, bool one_round);        // cuda_ll_kernels.cu
Kernels TwoShotLLInstances();                                 // cuda_ll_kernels.cu
Kernels OneShotLL128Instances(int world, bool one_round);     // cuda_ll128_kernel.cu
Kernels OneShotSentinelInstances(int world, bool one_round);  // cuda_sentinel_kernel.cu
// The fused all-reduce + add + rms_norm for `type`, `world` workers and `packs` (1, 2 or 4) packs a
// thread (cuda_fused_norm_kernel.cu); null for a type without one.
using FusedNormFn = void (*)(FusedNormArgs);
FusedNormFn FusedNormInstance(DataType type, int world, int packs);

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNEL_FAMILIES_H_
