// The CUDA all-reduce kernels' arguments and launchers (cuda_kernels.cu).
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "vdev/allreduce.h"
#include "vdev/session.h"

namespace vdev::internal {

// Everything a kernel needs, by value: fixed per workspace and call shape, so graphs can replay it.
struct KernelArgs {
  const void* in = nullptr;
  void* out = nullptr;
  size_t count = 0;
  int rank = 0;
  int world = 0;
  char* data[kMaxWorkers] = {};           // each worker's data region, mapped here
  uint64_t* flags_in[kMaxWorkers] = {};   // each worker's barrier_in
  uint64_t* flags_out[kMaxWorkers] = {};  // each worker's barrier_out
  uint64_t* epochs = nullptr;             // this worker's barrier_flag
  size_t half_bytes = 0;
  size_t slot_bytes = 0;
  size_t chunk_elems = 0;                 // two-shot
  unsigned long long timeout_ns = 0;
  int* error = nullptr;                   // host-mapped; set to peer + 1 on a timed-out wait
};

// Grid shape for a call; equal on all workers for equal calls (the barriers pair block b with b).
int OneShotBlocks(size_t count, size_t elem);
int OneShotLLBlocks(size_t count, size_t elem);
int OneShotLL128Blocks(size_t count, size_t elem);
int TwoShotLLBlocks(size_t count, int world, size_t elem);
int TwoShotBlocks(size_t count, int world, size_t elem);

inline constexpr int kThreads = 512;
struct LaunchOptions {
  int blocks = 1;
  cudaStream_t stream = nullptr;
  bool programmatic = false;  // programmatic dependent launch (see FollowPreviousGrid in cuda_kernels.cu)
};

cudaError_t LaunchOneShot(DataType type, const KernelArgs& args, const LaunchOptions& options);
cudaError_t LaunchOneShotLL(DataType type, const KernelArgs& args, const LaunchOptions& options);
cudaError_t LaunchOneShotLL128(DataType type, const KernelArgs& args, const LaunchOptions& options);
cudaError_t LaunchTwoShotLL(DataType type, const KernelArgs& args, const LaunchOptions& options);
cudaError_t LaunchTwoShot(DataType type, const KernelArgs& args, const LaunchOptions& options);
// args.data[j]: worker j's input (in IPC memory); args.epochs and flags: that memory's.
cudaError_t LaunchZeroCopyOneShot(DataType type, const KernelArgs& args, const LaunchOptions& options);

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_
