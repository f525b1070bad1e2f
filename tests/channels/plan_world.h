// N ranks of a channel plan on one GPU, in one process (as tests/runtime/cuda_one_gpu_world_test.cc
// does for the hand-written kernels): each rank's region, semaphores and epoch counters are separate
// allocations, each rank launches the plan kernel on its own stream, and the kernels meet through
// the same semaphores and packet lines as across GPUs. Shared by the one-GPU test and benchmark.
#ifndef VDEV_TESTS_CHANNELS_PLAN_WORLD_H_
#define VDEV_TESTS_CHANNELS_PLAN_WORLD_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "internal/compiled_plan.h"
#include "internal/cuda_plan.h"
#include "internal/cuda_proxy.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels::testing {

absl::Status Cuda(cudaError_t e);

class PlanWorld {
 public:
  // `dtype`: the elements' type (internal::DeviceDType; f32 unless said).
  static absl::StatusOr<std::unique_ptr<PlanWorld>> Create(const ProgramSpec& plan, size_t max_count,
                                                           absl::Duration timeout = absl::Seconds(10),
                                                           int dtype = internal::kDevF32);
  ~PlanWorld();

  int world() const { return static_cast<int>(ranks_.size()); }
  // Whether every rank's grid (twice, under programmatic launch) can be resident at once, as the
  // plan's waits need.
  absl::StatusOr<bool> Fits(int instances, bool programmatic, size_t count) const;
  // Enqueues rank `rank`'s execution for `count` elements per segment.
  internal::PlanLaunchArgs Args(int rank, size_t count, int instances) const;
  absl::Status Enqueue(int rank, size_t count, int instances, bool programmatic);
  // From now on every rank runs its plan compiled (internal/compiled_plan.h) instead of on the
  // generic kernel; Prepare compiles the kernels of shapes to come beforehand.
  absl::Status UseCompiledKernels();
  absl::Status Prepare(size_t count, const std::vector<int>& instances);
  // After UseCompiledKernels: whether the next executions run compiled (true) or on the generic kernel.
  void set_use_compiled(bool on) { use_compiled_ = on; }
  bool compiled() const { return use_compiled_ && !ranks_.empty() && ranks_[0].compiled != nullptr; }
  // Rank `rank`'s launches stamp into `trace` (device memory, kPlanTraceSlots per block; null: none).
  void set_trace(int rank, long long* trace) { ranks_[rank].trace = trace; }
  float* Input(int rank) const { return reinterpret_cast<float*>(ranks_[rank].region + layout_.input); }
  float* Output(int rank) const { return reinterpret_cast<float*>(ranks_[rank].region + layout_.output); }
  int elem() const { return elem_; }
  cudaStream_t stream(int rank) const { return ranks_[rank].stream; }
  // Waits for every stream; a timed-out wait becomes DeadlineExceeded naming rank tb and op.
  absl::Status Synchronize();
  // Makes the next execution of every rank number done + 1 (its packet flag, scratch half and
  // semaphore counts), as if `done` had run: for tests of what happens far into a long run.
  absl::Status SetExecutions(uint64_t done);
  const ProgramSpec& plan() const { return plan_; }

 private:
  struct Rank {
    char* region = nullptr;
    uint64_t* semaphores = nullptr;
    uint64_t* port_semaphores = nullptr;
    uint64_t* counters = nullptr;
    internal::UploadedPlan device;
    cudaStream_t stream = nullptr;
    long long* trace = nullptr;
    std::unique_ptr<internal::PortEndpoint> ports;     // plans with port channels
    std::unique_ptr<internal::CompiledPlan> compiled;  // UseCompiledKernels
  };
  PlanWorld() = default;

  ProgramSpec plan_;
  internal::RegionLayout layout_;
  std::vector<Rank> ranks_;
  absl::Duration timeout_;
  int sms_ = 0;
  bool use_compiled_ = true;
  int dtype_ = internal::kDevF32;
  int elem_ = 4;
  std::unique_ptr<internal::MappedChannelError> error_;
};

}  // namespace vdev::channels::testing

#endif  // VDEV_TESTS_CHANNELS_PLAN_WORLD_H_
