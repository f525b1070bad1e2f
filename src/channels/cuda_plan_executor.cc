// CudaPlanExecutor (vdev/channels/cuda_channel_executor.h): a rank's plan uploaded for the generic kernel
// (internal/cuda_plan.h), its region, semaphores and epoch counters from a CUDA IPCAllocator, and
// its port proxy.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "cuda_common/cuda_common.h"
#include "internal/compiled_plan.h"
#include "internal/cuda_plan.h"
#include "internal/cuda_proxy.h"
#include "internal/packet_sweep.h"
#include "internal/plan_checks.h"
#include "internal/plan_instances.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/cuda_channel_executor.h"
#include "vdev/support/checked_size.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {

using vdev::internal::CudaStatus;

struct CudaPlanExecutor::State {
  IPCAllocator* allocator = nullptr;
  IPCMemory* region = nullptr;
  int device = 0;
  internal::UploadedPlan plan;
  // Every launch's arguments but its count and instances, set once at Create.
  internal::PlanLaunchArgs args;
  size_t max_count = 0;
  int instances = 0;        // 0: by size (InstancesBySize)
  bool packets = false;     // the plan sends LL packets (InstancesBySize)
  int resident_blocks = 0;  // CommonResidentBlocks of the ranks' GPUs (InstancesBySize)
  std::unique_ptr<internal::MappedChannelError> error;
  std::unique_ptr<internal::PortEndpoint> ports;     // port plans
  std::unique_ptr<internal::CompiledPlan> compiled;  // PlanKernel::kCompiled
  // kCompiled or kAuto asked for: the first Execute of each count meets every worker once its
  // kernel is loaded (Execute); `met` holds the counts that did.
  bool meet_per_count = false;
  absl::flat_hash_set<size_t> met;

  ~State() {
    if (region != nullptr) {
      cudaSetDevice(device);
      cudaDeviceSynchronize();  // no launch of this executor may still run
    }
    ports.reset();
    compiled.reset();
    plan.Free();
    if (region != nullptr) allocator->Free(region);
  }
};

namespace {

absl::StatusOr<int> KernelDType(DataType type) {
  switch (type) {
    case DataType::kF32: return internal::kDevF32;
    case DataType::kF16: return internal::kDevF16;
    case DataType::kBF16: return internal::kDevBF16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("the CUDA plan executor sums f32, f16 and bf16, not ", DataTypeName(type)));
  }
}

// CommonResidentBlocks of the session's GPUs (`device` is this rank's): every rank reports its
// GPU's multiprocessors and PCI bus id.
absl::StatusOr<int> ResidentBlocks(PeerGroup& session, int device) {
  int sms = 0;
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute"));
  char bus[32] = {};
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaDeviceGetPCIBusId(bus, sizeof(bus), device), "cudaDeviceGetPCIBusId"));
  std::vector<std::string> reports;
  VDEV_RETURN_IF_ERROR(session.AllGather("cuda channels executor GPUs", absl::StrCat(sms, " ", bus), &reports));
  return internal::CommonResidentBlocks(reports);
}

// Create's arguments, checked before anything is allocated.
absl::Status CheckCreateArgs(PeerGroup& session, IPCAllocator& allocator, const ProgramSpec& plan, size_t max_count,
                             DataType type, int instances) {
  VDEV_RETURN_IF_ERROR(internal::CheckPlanForSession(plan, session));
  if (allocator.backend() != MemoryBackend::kCuda) {
    return absl::InvalidArgumentError("the CUDA plan executor needs a CUDA IPC allocator");
  }
  VDEV_RETURN_IF_ERROR(KernelDType(type).status());
  const std::optional<size_t> segment_bytes = CheckedMul(max_count, DataTypeSize(type));
  if (max_count == 0 || !segment_bytes || *segment_bytes > (size_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_count ", max_count, " of ", DataTypeName(type), ": a segment holds 1 element to 2^40 bytes"));
  }
  // Checked against the whole plan, so every rank refuses the same instances.
  if (instances < 0 || instances > internal::MostInstances(plan)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "instances ", instances, ": the plan's ", std::max(internal::MaxTag(plan), 0) + 1,
        " tags times the instances must stay within ", internal::kDeviceTags, ", its busiest rank's thread blocks (",
        internal::MostThreadBlocks(plan), ") times the instances within ", internal::kMaxPlanBlocks));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaPlanExecutor>> CudaPlanExecutor::Create(PeerGroup& session, IPCAllocator& allocator,
                                                                           ProgramSpec plan, size_t max_count,
                                                                           DataType type, int instances,
                                                                           PlanKernel kernel) {
  VDEV_RETURN_IF_ERROR(CheckCreateArgs(session, allocator, plan, max_count, type, instances));
  auto exec = std::unique_ptr<CudaPlanExecutor>(new CudaPlanExecutor());
  exec->session_ = &session;
  auto state = std::make_unique<State>();
  State& s = *state;
  s.allocator = &allocator;
  s.max_count = max_count;
  s.instances = instances;
  s.packets = internal::UsesPackets(plan);
  const size_t elem = DataTypeSize(type);
  const internal::RegionLayout layout = internal::MakeRegionLayout(
      max_count, elem, InputSegments(plan.collective, plan.world_size),
      OutputSegments(plan.collective, plan.world_size), plan.chunks_per_segment, plan.scratch_chunks);
  const int me = session.rank();
  VDEV_ASSIGN_OR_RETURN(s.region, allocator.Allocate(layout.total));
  cudaPointerAttributes where{};
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaPointerGetAttributes(&where, s.region->remote_data[me]), "cudaPointerGetAttributes"));
  s.device = where.device;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(s.device), "cudaSetDevice"));
  VDEV_RETURN_IF_ERROR(s.plan.Upload(plan, me));
  VDEV_ASSIGN_OR_RETURN(s.resident_blocks, ResidentBlocks(session, s.device));
  s.meet_per_count = kernel != PlanKernel::kGeneric && !s.plan.uses_ports;
  if (kernel == PlanKernel::kAuto) {
    kernel = !s.plan.uses_ports && internal::PlanCompilerWorks().ok() ? PlanKernel::kCompiled : PlanKernel::kGeneric;
  }
  if (kernel == PlanKernel::kCompiled && !s.plan.uses_ports) {
    VDEV_ASSIGN_OR_RETURN(internal::FlatPlan flat, internal::FlattenPlan(plan, me));
    VDEV_ASSIGN_OR_RETURN(s.compiled, internal::CompiledPlan::Create(std::move(flat), me, plan.chunks_per_segment));
  }
  VDEV_ASSIGN_OR_RETURN(s.error, internal::MappedChannelError::Create());
  internal::PlanLaunchArgs& a = s.args;
  a = s.plan.LaunchArgs();
  static_assert(internal::kPortSemaphoreWords == kBarrierWords);
  std::vector<uint64_t*> port_semaphores;  // the regions' barrier_out words
  for (int j = 0; j < plan.world_size; ++j) port_semaphores.push_back(s.region->barrier_out[j]);
  if (s.plan.uses_ports) {
    VDEV_RETURN_IF_ERROR(internal::CheckWorkQueues(2));  // the caller's stream and the proxy's
    VDEV_ASSIGN_OR_RETURN(s.ports, internal::PortEndpoint::Start(port_semaphores));
  }
  for (int j = 0; j < plan.world_size; ++j) {
    a.regions[j] = static_cast<char*>(s.region->remote_data[j]);
    a.semaphores[j] = s.region->barrier_in[j];
    a.port_semaphores[j] = s.region->barrier_out[j];
  }
  a.counters = s.region->barrier_flag;
  a.layout = layout;
  a.chunks_per_segment = plan.chunks_per_segment;
  a.elem = static_cast<int>(elem);
  a.dtype = *KernelDType(type);
  a.rank = me;
  a.timeout_ns = static_cast<unsigned long long>(absl::ToInt64Nanoseconds(session.timeout()));
  a.error = s.error->device();
  if (s.ports != nullptr) {
    a.port_fifo = s.ports->fifo_device();
    a.port_tickets = s.ports->tickets();
  }
  // Memory from the pool keeps what an earlier user left: semaphore counts, epochs and packet lines
  // whose flags this executor's first executions would take for their own. Zero them all, and let
  // no rank signal before every rank has.
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaMemset(s.region->remote_data[me], 0, layout.total), "cudaMemset"));
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaMemset(s.region->barrier_in[me], 0, kBarrierWords * sizeof(uint64_t)), "cudaMemset"));
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaMemset(s.region->barrier_out[me], 0, kBarrierWords * sizeof(uint64_t)), "cudaMemset"));
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaMemset(s.region->barrier_flag, 0, kMaxBarrierBlocks * sizeof(uint64_t)), "cudaMemset"));
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  VDEV_RETURN_IF_ERROR(session.Barrier("cuda channels executor"));
  exec->plan_ = std::move(plan);
  exec->state_ = std::move(state);
  return exec;
}

absl::StatusOr<std::unique_ptr<CudaPlanExecutor>> CudaPlanExecutor::ForStrategy(PeerGroup& session,
                                                                                IPCAllocator& allocator,
                                                                                absl::string_view strategy,
                                                                                size_t max_count, DataType type,
                                                                                PlanKernel kernel) {
  VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlanForStrategy(strategy, session.world_size()));
  return Create(session, allocator, std::move(plan), max_count, type, /*instances=*/0, kernel);
}

PlanKernel CudaPlanExecutor::kernel() const {
  return state_->compiled != nullptr ? PlanKernel::kCompiled : PlanKernel::kGeneric;
}

absl::StatusOr<PlanKernel> PlanKernelFromName(absl::string_view name) {
  if (name == "generic") return PlanKernel::kGeneric;
  if (name == "compiled") return PlanKernel::kCompiled;
  if (name == "auto") return PlanKernel::kAuto;
  return absl::InvalidArgumentError(absl::StrCat("plan kernel '", name, "': expected generic, compiled or auto"));
}

CudaPlanExecutor::~CudaPlanExecutor() = default;

absl::Status CudaPlanExecutor::Execute(const void* in, void* out, size_t count, cudaStream_t stream) {
  State& s = *state_;
  VDEV_RETURN_IF_ERROR(CheckCount(count));
  const internal::PlanLaunchArgs a = ArgsFor(count);
  const size_t elem = static_cast<size_t>(a.elem);
  const size_t in_bytes = count * elem * static_cast<size_t>(InputSegments(plan_.collective, plan_.world_size));
  const size_t out_bytes = count * elem * static_cast<size_t>(OutputSegments(plan_.collective, plan_.world_size));
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(s.device), "cudaSetDevice"));
  const bool copy_in = in != input(), copy_out = out != output();
  if (copy_in && in_bytes > 0) {
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(input(), in, in_bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync"));
  }
  // Programmatic only after the caller's own work: the kernel reads its input after
  // griddepcontrol.wait, which waits for the stream's previous kernel; a copy in front of it is
  // no kernel to overlap.
  if (s.meet_per_count && s.met.insert(count).second) {
    // Every worker's kernel for this count compiled and loaded before any worker launches one:
    // workers that share a process (a threaded session) share its context, where a load waits for
    // the running kernels — a peer's plan polling for this worker. Every worker executes the same
    // counts in the same order, whichever kernel kAuto gave it.
    if (s.compiled != nullptr) VDEV_RETURN_IF_ERROR(s.compiled->Prepare({a}));
    VDEV_RETURN_IF_ERROR(session_->Barrier("compiled channel plan loaded"));
  }
  const void* kernel = nullptr;  // the generic kernel
  if (s.compiled != nullptr) {
    VDEV_ASSIGN_OR_RETURN(kernel, s.compiled->Kernel(a));
  }
  VDEV_RETURN_IF_ERROR(
      CudaStatus(internal::LaunchPlan(a, stream, /*programmatic=*/!copy_in, kernel), "launching the plan kernel"));
  if (!copy_out || out_bytes == 0) return absl::OkStatus();
  return CudaStatus(cudaMemcpyAsync(out, output(), out_bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
}

absl::Status CudaPlanExecutor::CheckCount(size_t count) const {
  if (count > 0 && count <= state_->max_count) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("count ", count, ": this executor takes 1..", state_->max_count));
}

internal::PlanLaunchArgs CudaPlanExecutor::ArgsFor(size_t count) const {
  const State& s = *state_;
  internal::PlanLaunchArgs a = s.args;
  a.count = count;
  a.instances = s.instances > 0 ? s.instances
                                : internal::InstancesBySize(plan_, count * static_cast<size_t>(a.elem), s.packets,
                                                            s.plan.uses_ports, s.resident_blocks);
  return a;
}

absl::Status CudaPlanExecutor::Precompile(const std::vector<size_t>& counts) {
  State& s = *state_;
  if (s.compiled == nullptr) return absl::OkStatus();
  std::vector<internal::PlanLaunchArgs> launches;
  for (const size_t count : counts) {
    VDEV_RETURN_IF_ERROR(CheckCount(count));
    launches.push_back(ArgsFor(count));
  }
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(s.device), "cudaSetDevice"));
  return s.compiled->Prepare(launches);
}

void* CudaPlanExecutor::input() const {
  const internal::PlanLaunchArgs& a = state_->args;
  return a.regions[a.rank] + a.layout.input;
}

void* CudaPlanExecutor::output() const {
  const internal::PlanLaunchArgs& a = state_->args;
  return a.regions[a.rank] + a.layout.output;
}

absl::Status CudaPlanExecutor::CheckErrors() {
  const internal::ChannelError e = state_->error->Take();
  if (e.code == 0) return absl::OkStatus();  // a port proxy's CUDA error shows as a wait that timed out
  std::string what = absl::StrCat("plan ", plan_.name, ": a wait timed out after ",
                                  absl::FormatDuration(session_->timeout()), ": ", internal::DescribeTimeout(e));
  if (state_->ports != nullptr) absl::StrAppend(&what, " (this rank's ", state_->ports->Progress(), ")");
  absl::Status alive = session_->CheckAlive(e.peer);
  return absl::DeadlineExceededError(alive.ok() ? absl::StrCat(what, " (running; the executor is out of step)")
                                                : absl::StrCat(what, ": ", alive.message()));
}

}  // namespace vdev::channels
