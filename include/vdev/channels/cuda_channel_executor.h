// Running execution plans (vdev/channels/channel_plan.h) on GPUs: one worker process per GPU (or several
// sharing one), each rank's region from a CUDA IPCAllocator, every execution one launch of the
// generic plan kernel or of the plan compiled for its shape (PlanKernel below; docs/channels.md,
// "The CUDA executor", "Compiled plans") on the caller's stream. The plans and
// their results are those of the host executor (vdev/channels/channel_executor.h): every reduce sums in f32
// and rounds once, so both executors give the same bits.
//
// Memory: the region holds input, output and two scratch halves laid out for `max_count`
// (as the host executor's); the semaphores are the region's `barrier_in` words (memory channels)
// and `barrier_out` words (port channels), the kernel's epoch counters its `barrier_flag` words, all
// zeroed at Create (a pooled region keeps what an
// earlier user left). Execute copies `in` into the region, runs the plan and copies the output to
// `out`, all on `stream`; nothing waits on the host. Inputs written into input() and outputs read
// from output() spare both copies.
//
// A wait that times out (a peer that never launched, or died) does not hang the GPU: the kernel
// records rank, thread block, op and peer in host-mapped memory and finishes; `CheckErrors` (after
// the stream is synchronised) turns it into DeadlineExceeded. After that the semaphores are out of
// step; make a new executor.
//
// Only built with the CUDA runtime backend (VDEV_HAVE_CHANNELS_CUDA).
//
// Example (in every worker, one GPU each):
//   VDEV_ASSIGN_OR_RETURN(auto ipc, vdev::CreateCudaIPCAllocator(&session, device));
//   VDEV_ASSIGN_OR_RETURN(auto exec, CudaPlanExecutor::ForStrategy(session, *ipc, "plan:one_shot_ll",
//                                                                  1 << 20, DataType::kBF16));
//   VDEV_RETURN_IF_ERROR(exec->Execute(in, out, count, stream));  // device pointers
//   cudaStreamSynchronize(stream);
//   VDEV_RETURN_IF_ERROR(exec->CheckErrors());
#ifndef VDEV_CUDA_CHANNEL_EXECUTOR_H_
#define VDEV_CUDA_CHANNEL_EXECUTOR_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/channels/channel_program.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::channels {
namespace internal {
struct PlanLaunchArgs;
}  // namespace internal

// Which kernel runs a plan: the generic kernel, which walks the plan's ops; or the plan compiled
// for each shape (count, type, instances) at run time with NVRTC into a kernel of its own, the
// same steps with every op a constant of its code (docs/channels.md, "Compiled plans"): faster,
// but each new count costs a compilation (~0.2-0.6 s) at its first Execute unless Precompile'd.
// Plans with port channels always run on the generic kernel. kAuto: compiled where NVRTC compiles
// the plan kernel's headers in this process (checked once; BUILD_NOTES.md, "NVRTC"), else the
// generic kernel. Ranks may differ: executions of the two kernels follow one another correctly.
enum class PlanKernel { kGeneric, kCompiled, kAuto };
// "generic", "compiled" or "auto" (VDEV_PLAN_KERNEL of vdev run's CUDA backend); InvalidArgument else.
absl::StatusOr<PlanKernel> PlanKernelFromName(absl::string_view name);

class CudaPlanExecutor {
 public:
  // Collective (allocates the IPC region). `plan` is validated again; its world size must be the
  // session's; `type` is f32, f16 or bf16; `allocator` a CUDA one of this session, whose device
  // becomes current; `max_count` elements of `type` per segment. `instances` (1..) replicates every
  // thread block (docs/channels.md); 0 picks by size at each execution: about 4 KB of a segment a
  // block, up to 32, above 1 MB up to the blocks every rank's GPU holds at once (one an SM; 32 where
  // ranks share a GPU); for plans with LL packets about 1 KB, up to 128; for plans with port channels
  // one. Every rank launches the same instances (a channel's semaphores are per instance), so they
  // are capped by the plan's busiest rank: its thread blocks times the instances within 256.
  static absl::StatusOr<std::unique_ptr<CudaPlanExecutor>> Create(PeerGroup& session, IPCAllocator& allocator,
                                                                  ProgramSpec plan, size_t max_count, DataType type,
                                                                  int instances = 0,
                                                                  PlanKernel kernel = PlanKernel::kGeneric);
  // `strategy="plan:NAME"`: the shipped plan NAME for the session's world size (NotFound for an
  // unknown name, InvalidArgument for a malformed one).
  static absl::StatusOr<std::unique_ptr<CudaPlanExecutor>> ForStrategy(PeerGroup& session, IPCAllocator& allocator,
                                                                       absl::string_view strategy, size_t max_count,
                                                                       DataType type,
                                                                       PlanKernel kernel = PlanKernel::kGeneric);
  ~CudaPlanExecutor();

  // Enqueues one execution for `count` elements per segment (1..max_count) on `stream`: `in` holds
  // InputSegments(...) * count elements, `out` receives OutputSegments(...) * count (device memory
  // of the allocator's GPU; `in` may equal `out` when both have the same size). Every worker
  // enqueues the same executions in the same order, each after the previous one (one stream, or
  // streams that wait for each other): two executions of one executor never run at once. With
  // kCompiled or kAuto, the first Execute of each count also compiles and loads this rank's kernel
  // (unless Precompile'd) and meets every worker (a session barrier) before launching: where workers
  // share a process, a kernel's load waits for the running kernels, a peer's plan polling for it.
  absl::Status Execute(const void* in, void* out, size_t count, cudaStream_t stream);
  // This rank's input and output segments in the region (device memory). An Execute whose `in` is
  // input() copies nothing in and is launched as a programmatic dependent launch (the kernel's
  // prologue overlaps the stream's previous kernel); one whose `out` is output() copies nothing out:
  // the result stays there until the next Execute is enqueued.
  void* input() const;
  void* output() const;
  // PlanKernel::kCompiled: compiles now the kernels that executions of these counts will run, on
  // every core at once (no-op for the generic kernel).
  absl::Status Precompile(const std::vector<size_t>& counts);
  // A wait of an earlier execution that timed out, once the stream has reached it.
  absl::Status CheckErrors();

  const ProgramSpec& plan() const { return plan_; }
  // The kernel this rank runs: kGeneric or kCompiled (kAuto resolved at Create).
  PlanKernel kernel() const;

  struct State;  // opaque: the region, the uploaded plan, the port proxy

 private:
  CudaPlanExecutor() = default;
  // InvalidArgument unless 1 <= count <= max_count.
  absl::Status CheckCount(size_t count) const;
  // The launch arguments of an execution of `count` elements per segment.
  internal::PlanLaunchArgs ArgsFor(size_t count) const;
  PeerGroup* session_ = nullptr;
  ProgramSpec plan_;
  std::unique_ptr<State> state_;
};

}  // namespace vdev::channels

#endif  // VDEV_CUDA_CHANNEL_EXECUTOR_H_
