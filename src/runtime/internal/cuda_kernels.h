// The CUDA all-reduce kernels' arguments and launchers (cuda_kernels.cu; the kernels in one
// file per family, see cuda_kernel_families.h).
#ifndef VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_
#define VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "internal/allreduce_layout.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/peer_group.h"

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
  size_t chunk_elems = 0;  // two-shot
  unsigned long long timeout_ns = 0;
  int* error = nullptr;  // host-mapped; set to peer + 1 on a timed-out wait
};

// A kernel instance and its grid. A null kernel: no kernel for that algorithm or data type.
using KernelFn = void (*)(KernelArgs);
struct KernelLaunch {
  KernelFn kernel = nullptr;
  int blocks = 0;
  int threads = 0;
};
// What LaunchAllReduce enqueues for `algorithm` on args.count elements of `type`: the kernel instance
// (for args.world workers) and its grid, with args.slot_bytes and args.chunk_elems set. Tests that
// run several workers on one GPU ask it how many blocks must be resident together.
KernelLaunch PlanAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs& args);

// Enqueues the kernel of `algorithm` (any but kAuto and kNccl) for args.count elements of `type`, as
// PlanAllReduce plans it; the grid is equal on all workers for equal calls (the barriers pair block b
// with block b).
// `programmatic`: programmatic dependent launch (see FollowPreviousGrid in cuda_kernel_device.cuh).
cudaError_t LaunchAllReduce(AllReduceAlgorithm algorithm, DataType type, KernelArgs args, cudaStream_t stream,
                            bool programmatic);
// The zero-copy one-shot kernel for `count` elements of `type` and its grid.
KernelLaunch PlanZeroCopyOneShot(DataType type, size_t count);
// args.data[j]: worker j's input (in IPC memory); args.epochs and flags: that memory's.
cudaError_t LaunchZeroCopyOneShot(DataType type, const KernelArgs& args, cudaStream_t stream, bool programmatic);

// The fused all-reduce + add + rms_norm (cuda_fused_norm_kernel.cu): all_reduce.in is this worker's
// partial x, all_reduce.out receives h = residual + sum(x), `normed` n = h * rsqrt(mean(h^2) + epsilon)
// * gamma; rows x hidden elements, every pointer 16-byte aligned, the sentinel workspace's slots.
struct FusedNormArgs {
  KernelArgs all_reduce;
  const void* residual = nullptr;
  const void* gamma = nullptr;
  void* normed = nullptr;
  size_t rows = 0;
  size_t hidden = 0;
  float epsilon = 0;
};
// Enqueues it on `grid` (PlanFusedNormGrid in allreduce_layout.h); args.all_reduce.slot_bytes and
// half_bytes as the one-shot sentinel kernel's.
cudaError_t LaunchAllReduceAddRmsNorm(DataType type, const FusedNormArgs& args, const FusedNormGrid& grid,
                                      cudaStream_t stream, bool programmatic);

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_CUDA_KERNELS_H_
