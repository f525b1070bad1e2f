// The CUDA executor of channel plans: a plan flattened for one rank into device memory, the
// arguments of the generic kernel (cuda_executor.cu) and its launcher. One block per thread block
// and instance walks its op list; see docs/channels.md.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_H_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "internal/cuda_plan_args.h"
#include "internal/cuda_proxy.h"
#include "internal/layout.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::channels {
struct ProgramSpec;  // vdev/channels/channel_program.h (C++20, which this header's CUDA users are not)
}  // namespace vdev::channels

namespace vdev::channels::internal {

// "rank R tb T op O waiting for rank P (read S, waits for W)": a recorded timeout, for messages.
std::string DescribeTimeout(const ChannelError& e);

// Where the kernel records a launch's first timeout: host-mapped memory (device() for the launch).
class MappedChannelError {
 public:
  static absl::StatusOr<std::unique_ptr<MappedChannelError>> Create();
  ~MappedChannelError();
  ChannelError* device() const { return device_; }
  // The recorded timeout (code 0: none), cleared for the next.
  ChannelError Take();
  // Whether a timeout is recorded (kernels may still run).
  bool Raised() const { return static_cast<volatile ChannelError*>(host_)->code != 0; }

 private:
  MappedChannelError() = default;
  ChannelError* host_ = nullptr;
  ChannelError* device_ = nullptr;
};

// One rank's ops flattened for the kernel, as UploadedPlan::Upload copies them to the device (no GPU
// needed): a run of signals or of waits with no data sync inside it is one step (batch), and so is
// a run of puts (or put_packets) of one source, at most KernelSources(max_srcs) of them; a signal
// run takes the wait run right after it along (then_wait), a put_packets run the reduce that sums
// its source (then_reduce); k and
// per_call count each semaphore's signals and waits per execution, port channels' with memory
// channels' (as the host executor).
struct FlatPlan {
  std::vector<DeviceOp> ops;
  std::vector<int> tb_begin;  // ops of thread block t: [tb_begin[t], tb_begin[t + 1])
  int max_srcs = 0;
  int max_tb_ops = 0;
  bool uses_ports = false;
  std::vector<DeviceRef> spares;  // internal/packet_sweep.h: empty when the plan has no packets
};
absl::StatusOr<FlatPlan> FlattenPlan(const ProgramSpec& plan, int rank);

// One rank's plan in device memory (UploadedPlan::Upload; Free releases it), with the table where
// each block keeps its ops resolved for the last shape it ran (cuda_executor.cu): a UploadedPlan
// therefore serves one set of regions and semaphores.
struct UploadedPlan {
  DeviceOp* ops = nullptr;
  int* tb_begin = nullptr;  // ops of thread block t: [tb_begin[t], tb_begin[t + 1])
  int tbs = 0;
  int max_srcs = 0;             // the widest reduce's sources
  int max_tb_ops = 0;           // the most ops of one thread block
  bool uses_ports = false;      // launches need a PortFifo served by a PortProxy
  DeviceRef* spares = nullptr;  // FlatPlan::spares
  int num_spares = 0;
  void* table = nullptr;
  ResolvedTableKey* table_keys = nullptr;  // kMaxPlanBlocks
  absl::Status Upload(const ProgramSpec& plan, int rank);
  void Free();
  // Launch arguments with this plan's fields set (LaunchArgs below): the caller adds the rest.
  struct PlanLaunchArgs LaunchArgs() const;
};

inline PlanLaunchArgs UploadedPlan::LaunchArgs() const {
  PlanLaunchArgs a;
  a.ops = ops;
  a.tb_begin = tb_begin;
  a.tbs = tbs;
  a.max_srcs = max_srcs;
  a.max_tb_ops = max_tb_ops;
  a.table = table;
  a.table_keys = table_keys;
  a.spares = spares;
  a.num_spares = num_spares;
  a.uses_ports = uses_ports;
  return a;
}

// Enqueues one execution (sums of args.dtype). `programmatic`: programmatic dependent launch, as the
// hand-written kernels use it. `kernel`: the generic kernel when null, else the plan compiled for
// args (CompiledPlan::Kernel, internal/compiled_plan.h).
cudaError_t LaunchPlan(const PlanLaunchArgs& args, cudaStream_t stream, bool programmatic,
                       const void* kernel = nullptr);
// Bytes of a UploadedPlan's table: kMaxPlanBlocks blocks of max_tb_ops resolved ops.
size_t ResolvedTableBytes(int max_srcs, int max_tb_ops);
// The kernel that LaunchPlan launches for these arguments, for occupancy queries.
const void* PlanKernel(const PlanLaunchArgs& args);

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PLAN_H_
