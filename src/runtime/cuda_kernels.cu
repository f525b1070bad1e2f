// Which all-reduce kernel instance and grid serve a call, and its launch (the kernels themselves are
// in one file per family: cuda_flag_kernels.cu, cuda_ll_kernels.cu, cuda_ll128_kernel.cu,
// cuda_sentinel_kernel.cu).
#include <algorithm>

#include "internal/allreduce_layout.h"
#include "internal/cuda_kernel_families.h"
#include "internal/cuda_kernels.h"
#include "internal/cuda_zero_copy.h"
#include "vdev/runtime/ipc_memory.h"

namespace vdev::internal {
namespace {

// Blocks for `units` 16-byte packs or lines: one block per kUnitsPerBlock of them, so mid-sized
// messages spread over many SMs (one SM alone cannot keep NVLink busy), at most kMaxBlocks.
constexpr size_t kUnitsPerBlock = 128;
int BlocksFor(size_t units) {
  const size_t blocks = (units + kUnitsPerBlock - 1) / kUnitsPerBlock;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// One block per `per_block` lines, at most kMaxLLBlocks.
int LLBlocks(size_t lines, size_t per_block) {
  const size_t blocks = (lines + per_block - 1) / per_block;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxLLBlocks ? kMaxLLBlocks : blocks));
}

// The instance of `kernels` for `type`, or null for a type without one.
KernelFn ForType(const Kernels& kernels, DataType type) {
  return type == DataType::kF32    ? kernels.f32
         : type == DataType::kF16  ? kernels.f16
         : type == DataType::kBF16 ? kernels.bf16
                                   : nullptr;
}

template <typename Args>
cudaError_t Start(void (*kernel)(Args), int blocks, int threads, const Args& args, cudaStream_t stream,
                  bool programmatic) {
  if (kernel == nullptr) return cudaErrorInvalidValue;
  cudaLaunchAttribute overlap;
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args);
}
cudaError_t Start(const KernelLaunch& launch, const KernelArgs& args, cudaStream_t stream, bool programmatic) {
  return Start(launch.kernel, launch.blocks, launch.threads, args, stream, programmatic);
}

}  // namespace

KernelLaunch PlanAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs& a) {
  const size_t elem = DataTypeSize(type);
  const size_t n = a.count;
  switch (algorithm) {
    case AllReduceAlgorithm::kOneShot:
      a.slot_bytes = OneShotSlotBytes(n, elem);
      return {ForType(OneShotInstances(), type), BlocksFor((n * elem + 15) / 16), kThreads};
    case AllReduceAlgorithm::kOneShotLL: {
      a.slot_bytes = OneShotLLSlotBytes(n, elem);
      const size_t lines = OneShotLLLines(n, elem);
      const int blocks = LLBlocks(lines, kLLThreads);
      const bool one_round = (lines + blocks - 1) / blocks <= size_t{kLLThreads};
      return {ForType(OneShotLLInstances(a.world, one_round), type), blocks, kLLThreads};
    }
    case AllReduceAlgorithm::kOneShotLL128: {
      a.slot_bytes = OneShotLL128SlotBytes(n, elem);
      const size_t lines = OneShotLL128Lines(n, elem);
      const int blocks = LLBlocks(lines, 16);
      const bool one_round = (lines + blocks - 1) / blocks <= size_t{kLL128Threads / 32 * 4};  // 4 lines a warp
      return {ForType(OneShotLL128Instances(a.world, one_round), type), blocks, kLL128Threads};
    }
    case AllReduceAlgorithm::kOneShotSentinel: {
      a.slot_bytes = OneShotSlotBytes(n, elem);
      const size_t packs = (n * elem + 15) / 16;
      const int blocks = LLBlocks(packs, kSentinelPacksPerBlock);
      const size_t per_block = RoundUpTo((packs + blocks - 1) / blocks, 32);
      const int threads = static_cast<int>(std::clamp<size_t>(per_block, 64, kSentinelMaxThreads));
      const bool one_round = (packs + blocks - 1) / blocks <= static_cast<size_t>(threads);
      return {ForType(OneShotSentinelInstances(a.world, one_round), type), blocks, threads};
    }
    case AllReduceAlgorithm::kTwoShot:
      a.slot_bytes = TwoShotSlotBytes(n, a.world, elem);
      a.chunk_elems = TwoShotChunkElems(n, a.world, elem);
      return {ForType(TwoShotInstances(), type), BlocksFor(a.chunk_elems * elem / 16), kThreads};
    case AllReduceAlgorithm::kTwoShotLL:
      a.slot_bytes = TwoShotLLSlotBytes(n, a.world, elem);
      a.chunk_elems = TwoShotChunkElems(n, a.world, elem);
      return {ForType(TwoShotLLInstances(), type), BlocksFor(a.chunk_elems * elem / 8), kThreads};
    default: return {};
  }
}

cudaError_t LaunchAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs a, cudaStream_t stream,
                            bool programmatic) {
  const KernelLaunch launch = PlanAllReduce(algorithm, type, a);
  return Start(launch, a, stream, programmatic);
}

KernelLaunch PlanZeroCopyOneShot(DataType type, size_t count) {
  return {ForType(ZeroCopyOneShotInstances(), type), BlocksFor((count * DataTypeSize(type) + 15) / 16), kThreads};
}

cudaError_t LaunchZeroCopyOneShot(DataType type, const KernelArgs& args, cudaStream_t stream, bool programmatic) {
  return Start(PlanZeroCopyOneShot(type, args.count), args, stream, programmatic);
}

cudaError_t LaunchZeroCopyOneShotNoExit(DataType type, const KernelArgs& args, cudaStream_t stream, bool programmatic) {
  KernelLaunch launch = PlanZeroCopyOneShot(type, args.count);
  launch.kernel = ForType(ZeroCopyOneShotNoExitInstances(), type);
  return Start(launch, args, stream, programmatic);
}

cudaError_t LaunchAllReduceAddRmsNorm(DataType type, const FusedNormArgs& args, const FusedNormGrid& grid,
                                      cudaStream_t stream, bool programmatic) {
  return Start(FusedNormInstance(type, args.all_reduce.world, grid.packs), grid.blocks, grid.threads, args, stream,
               programmatic);
}

}  // namespace vdev::internal
