// Running execution plans (vdev/channels/channel_plan.h) on the host backend: every rank is a worker
// process of a PeerGroup, every thread block a thread, and a rank's port channels are served by one
// proxy thread. CI runs every plan this way; the CUDA executor (vdev/channels/cuda_channel_executor.h) runs
// the same plans with one generic kernel.
//
// Memory: each rank's input, output and scratch (two halves: execution e uses half e & 1) live in
// one region from the collective IPC allocator, laid out for `max_count`; semaphores are the
// region's `barrier_in` words for memory channels and its `barrier_out` words for port channels,
// which count apart (word [tag * 8 + src] counts rank src's signals on `tag`; the k-th
// signal of execution e stores (e-1)·W + k, W signals per execution, and the matching wait waits for
// that count; counts are never reset), an LL
// packet carries the execution's flag (0x80000000 | e, repeating after 2^31 executions; so that no
// line left from 2^31 executions ago passes for new, every 1,024th execution of each parity zeroes
// a 64th of the rank's scratch half, sparing what that execution's ops touch).
// `instances` replicates the plan: each thread block runs as `instances` threads, each taking an
// equal part of every op's data and its own semaphores (tag * instances + i), so a plan written for
// one thread block per peer can use more; the plan's tags times `instances` must stay below 256.
//
// Every wait is bounded by the session's timeout: a signal or packet that never comes is an error
// naming the execution, rank, thread block, op and the peer (a dead peer is named at once).
// After an error the semaphores are out of step; make a new executor.
//
// Example (in every worker):
//   VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan("two_shot", session.world_size()));
//   VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(session, *allocator, plan, 1 << 20, DataType::kF32));
//   VDEV_RETURN_IF_ERROR(exec->Execute(in, out, count));   // out = sum of every worker's in
#ifndef VDEV_CHANNEL_EXECUTOR_H_
#define VDEV_CHANNEL_EXECUTOR_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vdev/channels/channel_program.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::channels {

class HostPlanExecutor {
 public:
  // Collective (allocates the IPC region). `plan` is validated again; its world size must be the
  // session's; `type` is any DataType: i32 wraps around; f16 and bf16 are summed in f32 and rounded
  // once per reduce op (to nearest even), so a reduce over every rank's value gives the bits of
  // the all-reduce backends; `allocator` is a host one; `max_count` elements of `type` (one
  // segment) at most kMaxSegmentBytes.
  static constexpr size_t kMaxSegmentBytes = size_t{1} << 40;
  static absl::StatusOr<std::unique_ptr<HostPlanExecutor>> Create(PeerGroup& session, IPCAllocator& allocator,
                                                                  ProgramSpec plan, size_t max_count, DataType type,
                                                                  int instances = 1);
  ~HostPlanExecutor();

  // One execution for `count` elements per segment: `in` holds InputSegments(...) * count elements,
  // `out` receives OutputSegments(...) * count (vdev/channels/channel_program.h). `in` may equal `out` when
  // both have the same size.
  absl::Status Execute(const void* in, void* out, size_t count);

  // `strategy="plan:NAME"` of the lowered form (docs/lowered-form.md): Create with the shipped
  // plan NAME for the session's world size. An unknown name is NotFound, a malformed one
  // InvalidArgument.
  static absl::StatusOr<std::unique_ptr<HostPlanExecutor>> ForStrategy(PeerGroup& session, IPCAllocator& allocator,
                                                                       absl::string_view strategy, size_t max_count,
                                                                       DataType type);

  const ProgramSpec& plan() const { return plan_; }
  uint64_t executions() const;
  // This rank's IPC region: input, output and the two scratch halves, laid out for max_count as
  // src/channels/internal/layout.h's MakeRegionLayout says.
  const IPCMemory& region() const { return *region_; }

  struct State;  // opaque: the executor's layout and wait counts

 private:
  HostPlanExecutor() = default;
  PeerGroup* session_ = nullptr;
  IPCAllocator* allocator_ = nullptr;
  IPCMemory* region_ = nullptr;
  ProgramSpec plan_;
  std::unique_ptr<State> state_;
};

// Runs `plan` `executions` times in a row on the host executor with every rank a thread of this
// process, each in a session of its own over a fresh rendezvous directory, with a host IPC
// allocator: `inputs[r]` holds rank r's InputSegments(...) * count elements of `type`, `outputs[r]`
// receives OutputSegments(...) * count (every execution takes the same inputs). For running a plan
// without launching worker processes (`vdev channels run`, Python's run_channel_plan). An error
// names the rank that failed first.
absl::Status RunPlanInThreads(const ProgramSpec& plan, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs, size_t count, DataType type, int instances,
                              absl::Duration timeout, int executions = 1);

}  // namespace vdev::channels

#endif  // VDEV_CHANNEL_EXECUTOR_H_
