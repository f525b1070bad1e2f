// Compiled plans: one rank's plan specialised, for one shape (element count, type, instances), into
// a kernel of its own, compiled at run time with NVRTC. The kernel runs the generic kernel's steps
// (cuda_plan_steps.cuh) on its ops resolved as the generic kernel's ResolveOp (cuda_plan_args.h)
// resolves them, with every offset into the launch's regions and semaphores a constant of its
// code: no op table to load, no dispatch on op kinds, no address arithmetic but an instance's part,
// registers for nothing but the steps. Same launch arguments, same epoch
// counters, semaphores, packet flags, timeouts and stale-packet sweep as the generic kernel, so
// executions of the two may follow one another. Plans with port channels run on the generic kernel.
// docs/channels.md, "Compiled plans".
#ifndef VDEV_SRC_CHANNELS_INTERNAL_COMPILED_PLAN_H_
#define VDEV_SRC_CHANNELS_INTERNAL_COMPILED_PLAN_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "internal/cuda_plan.h"

namespace vdev::channels::internal {

// The CUDA source of the kernel of `flat` (rank a.rank's ops) for launches of a's shape: its count,
// element type, instances and chunks per segment (any regions and semaphores). No GPU needed. Port
// ops are refused (Unimplemented).
absl::StatusOr<std::string> CompiledPlanSource(const FlatPlan& flat, const PlanLaunchArgs& a);

// Compiles `source` (CompiledPlanSource) with NVRTC for compute capability `arch` (90: sm_90) into
// a CUBIN. No GPU needed; an error carries NVRTC's log.
absl::StatusOr<std::string> CompilePlanCubin(const std::string& source, int arch);

// Whether NVRTC compiles the plan kernel's headers here for the current device (the toolkit's
// include directory found, the options accepted), checked once per process: PlanKernel::kAuto.
absl::Status PlanCompilerWorks();
// The same check for compute capability `arch`, each time (no GPU needed).
absl::Status ProbePlanCompiler(int arch);

// A rank's compiled kernels, one per shape, compiled at first use. Not thread-safe.
class CompiledPlan {
 public:
  // `flat`: FlattenPlan(plan, rank).
  static absl::StatusOr<std::unique_ptr<CompiledPlan>> Create(FlatPlan flat, int rank, int chunks_per_segment);
  ~CompiledPlan();
  CompiledPlan(const CompiledPlan&) = delete;
  CompiledPlan& operator=(const CompiledPlan&) = delete;

  // The kernel for `a` on the current device, to pass to LaunchPlan (compiled now if its shape is
  // new: ~0.2-0.6 s). Loading a kernel waits for the kernels running in the device's context: where
  // several ranks share one (ranks as threads of one process on one GPU), compile every rank's
  // kernel of a shape before any of them launches, or a rank's plan polls for a peer whose load
  // waits for it.
  absl::StatusOr<const void*> Kernel(const PlanLaunchArgs& a);
  // Whether `a`'s shape is compiled and loaded.
  bool Has(const PlanLaunchArgs& a) const { return kernels_.contains(ShapeOf(a)); }
  // Compiles the kernels of launches to come, on every core at once.
  absl::Status Prepare(const std::vector<PlanLaunchArgs>& launches);

 private:
  struct Shape {
    uint64_t count;
    int dtype, instances;
    template <typename H>
    friend H AbslHashValue(H h, const Shape& s) {
      return H::combine(std::move(h), s.count, s.dtype, s.instances);
    }
    bool operator==(const Shape& o) const { return count == o.count && dtype == o.dtype && instances == o.instances; }
  };
  CompiledPlan(FlatPlan flat, int rank, int chunks_per_segment)
      : flat_(std::move(flat)), rank_(rank), chunks_per_segment_(chunks_per_segment) {}
  static Shape ShapeOf(const PlanLaunchArgs& a) { return {a.count, a.dtype, a.instances}; }
  // Checks that `a` is this plan's, and learns the device's compute capability.
  absl::Status Bind(const PlanLaunchArgs& a);
  absl::Status Load(const PlanLaunchArgs& a, const std::string& cubin);

  FlatPlan flat_;
  int rank_;
  int chunks_per_segment_;
  int arch_ = 0;  // compute capability, 90 for sm_90 (0: not asked yet)
  absl::flat_hash_map<Shape, std::pair<cudaLibrary_t, cudaKernel_t>> kernels_;
};

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_COMPILED_PLAN_H_
