// The CUDA backend of vdev/executor/executor.h: GPU memory and kernels, CUDA IPC pools, vdev's all-reduce.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "cuda_common/cuda_common.h"
#include "prepared_op.h"
#include "session_reduce.h"
#include "stream_delay.h"
#include "vdev/runtime/cuda_allreduce.h"
#if VDEV_HAVE_CHANNELS_CUDA
#include "vdev/channels/cuda_channel_executor.h"
#endif
#include "vdev/executor/executor.h"
#include "vdev/kernels/cuda_kernels.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using internal::CudaKernelDataType;
using internal::CudaStatus;

// One GPU a worker uses: the kernels' state and — created on first need, collectively — IPC memory
// and the communicator.
struct Gpu {
  int device = 0;
  std::unique_ptr<CudaKernelBackend> kernels;
  std::unique_ptr<IPCAllocator> ipc;
  std::unique_ptr<CudaCommunicator> comm;
#if VDEV_HAVE_CHANNELS_CUDA
  // strategy="plan:NAME": one executor per plan and dtype, made again (collectively, like every
  // worker) when a larger count comes.
  struct PlanSlot {
    std::unique_ptr<channels::CudaPlanExecutor> executor;
    size_t max_count = 0;
  };
  absl::flat_hash_map<std::string, PlanSlot> plans;
#endif
};

// A stream work is enqueued on: one per GPU, or one per virtual device (CudaStreams::
// kPerVirtualDevice). `done` is recorded on it when another lane must wait for its work.
struct Lane {
  Gpu* gpu = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  KernelContext context;
};

class CudaBackend final : public ExecutionBackend {
 public:
  CudaBackend(PeerGroup* session, int virtual_devices, int gpus, bool shared, const CudaBackendOptions& options)
      : session_(session), virtual_devices_(virtual_devices), gpus_(gpus), shared_gpu_(shared), options_(options) {
    if (session != nullptr) {
      rank_ = session->rank();
      world_size_ = session->world_size();
    }
  }
  ~CudaBackend() override {
    for (auto& [key, lane] : lanes_) {
      cudaSetDevice(lane->gpu->device);
      cudaStreamSynchronize(lane->stream);
    }
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
    for (auto& [e, device] : marks_) cudaEventDestroy(e);
    for (auto& [key, lane] : lanes_) {
      cudaEventDestroy(lane->done);
      cudaStreamDestroy(lane->stream);
    }
  }

  std::string name() const override { return "cuda"; }
  DeviceType KernelDevice(const VirtualDevice& d) const override {
    return d.device_type() == DeviceType::kCUDA ? DeviceType::kCUDA : DeviceType::kCPU;
  }

  absl::StatusOr<KernelContext*> Context(const VirtualDevice& d) override {
    if (KernelDevice(d) == DeviceType::kCPU) return &cpu_;
    VDEV_ASSIGN_OR_RETURN(Lane * lane, Use(d));
    return &lane->context;
  }

  absl::StatusOr<std::shared_ptr<DeviceBuffer>> Allocate(const VirtualDevice& d, size_t bytes) override {
    auto buffer = std::make_shared<DeviceBuffer>();
    buffer->bytes = bytes;
    if (KernelDevice(d) == DeviceType::kCPU) {
      // Pinned, so copies to and from it are asynchronous and a graph can hold them.
      void* data = nullptr;
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaHostAlloc(&data, std::max<size_t>(bytes, 1), cudaHostAllocPortable),
                                      absl::StrCat("cudaHostAlloc of ", bytes, " bytes")));
      std::memset(data, 0, bytes);
      buffer->data = data;
      buffer->release = [data] { cudaFreeHost(data); };
      return buffer;
    }
    VDEV_ASSIGN_OR_RETURN(Lane * lane, LaneOf(d));
    Gpu* gpu = lane->gpu;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(gpu->device), "cudaSetDevice"));
    if (d.memory_scope() == "ipc_memory" && world_size_ > 1) {
      if (gpu->ipc == nullptr) {
        VDEV_ASSIGN_OR_RETURN(gpu->ipc, CreateCudaIPCAllocator(session_, gpu->device));
      }
      VDEV_ASSIGN_OR_RETURN(IPCMemory * memory, gpu->ipc->Allocate(bytes));
      buffer->data = memory->remote_data[rank_];
      buffer->ipc = memory;
      buffer->release = [allocator = gpu->ipc.get(), memory] { allocator->Free(memory); };
      return buffer;
    }
    void* data = nullptr;
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMalloc(&data, bytes), absl::StrCat("cudaMalloc of ", bytes, " bytes on GPU ", gpu->device)));
    // Stream-ordered like the rest of the program: the legacy stream's cudaMemset would not be
    // ordered before the kernels that write this buffer next (the streams are non-blocking).
    VDEV_ASSIGN_OR_RETURN(lane, Use(d));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(data, 0, bytes, lane->stream), "cudaMemsetAsync"));
    buffer->data = data;
    buffer->release = [data] { cudaFree(data); };
    return buffer;
  }

  // A copy runs on the lane of the work before it (so a device_copy's source is ready without a
  // wait), and the work after it waits for that lane when it runs elsewhere (Use). A copy that
  // touches host memory is waited for, since the CPU kernels read host memory directly.
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    if (dst == src || bytes == 0) return absl::OkStatus();
    VDEV_ASSIGN_OR_RETURN(Lane * lane, CurrentLane());
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(lane->gpu->device), "cudaSetDevice"));
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, lane->stream), "cudaMemcpyAsync"));
    // Inside a capture no CPU kernel runs (Executor's rule), so nothing on the host waits for it.
    if (!capturing_ && (IsHost(dst) || IsHost(src)))
      return CudaStatus(cudaStreamSynchronize(lane->stream), "cudaStreamSynchronize");
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* host, const void* src, size_t bytes) override { return Copy(host, src, bytes); }
  absl::Status CopyFromHost(void* dst, const void* host, size_t bytes) override {
    if (IsHost(dst)) {
      // A replayed graph may still read this pinned buffer (a parameter): wait for it first. The
      // current lane's work is ordered after every other lane's (Use), so one wait covers all.
      VDEV_ASSIGN_OR_RETURN(Lane * lane, CurrentLane());
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(lane->stream), "cudaStreamSynchronize"));
      std::memcpy(dst, host, bytes);
      return absl::OkStatus();
    }
    return Copy(dst, host, bytes);
  }

  absl::Status AllReduce(const TensorRef& in, const IPCBuffer* in_ipc, const TensorRef& out, ReduceOp op,
                         AllReduceStrategy strategy, const VirtualDevice& d) override {
    const size_t bytes = static_cast<size_t>(in.NumBytes());
    if (world_size_ == 1) {
      if (KernelDevice(d) == DeviceType::kCUDA) VDEV_RETURN_IF_ERROR(Use(d).status());
      return Copy(out.data, in.data, bytes);
    }
    std::optional<DataType> type = CudaKernelDataType(in.dtype);
#if VDEV_HAVE_CHANNELS_CUDA
    if (KernelDevice(d) == DeviceType::kCUDA && op == ReduceOp::kSum && type &&
        strategy.kind == AllReduceStrategy::kPlan)
      return PlanAllReduce(in, out, strategy, *type, d);
#endif
    if (KernelDevice(d) != DeviceType::kCUDA || op != ReduceOp::kSum || !type ||
        strategy.kind == AllReduceStrategy::kPlan)
      return StagedAllReduce(in, out, op);
    VDEV_ASSIGN_OR_RETURN(Lane * lane, Use(d));
    Gpu* gpu = lane->gpu;
    VDEV_RETURN_IF_ERROR(EnsureCommunicator(*gpu));
    const size_t count = static_cast<size_t>(in.NumElements());
    if (in_ipc != nullptr &&
        (strategy.kind == AllReduceStrategy::kAuto || strategy.kind == AllReduceStrategy::kOneShot))
      return gpu->comm->AllReduceZeroCopy(*in_ipc, out.data, count, *type, lane->stream);
    AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto;
    if (strategy.kind == AllReduceStrategy::kOneShot) algorithm = AllReduceAlgorithm::kOneShot;
    if (strategy.kind == AllReduceStrategy::kTwoShot) algorithm = AllReduceAlgorithm::kTwoShot;
    if (strategy.kind == AllReduceStrategy::kNccl && !shared_gpu_) algorithm = AllReduceAlgorithm::kNccl;
    return gpu->comm->AllReduce(in.data, out.data, count, *type, algorithm, lane->stream);
  }

  absl::StatusOr<bool> AllReduceAddRmsNorm(const TensorRef& in, const TensorRef& residual, const TensorRef& gamma,
                                           const TensorRef& h, const TensorRef& n, float epsilon,
                                           AllReduceStrategy strategy, const VirtualDevice& d) override {
    const std::optional<DataType> type = CudaKernelDataType(in.dtype);
    if (world_size_ == 1 || KernelDevice(d) != DeviceType::kCUDA || !type || in.shape.empty() ||
        (strategy.kind != AllReduceStrategy::kAuto && strategy.kind != AllReduceStrategy::kOneShot))
      return false;
    VDEV_ASSIGN_OR_RETURN(Lane * lane, Use(d));
    VDEV_RETURN_IF_ERROR(EnsureCommunicator(*lane->gpu));
    AddRmsNormBuffers b{.in = in.data,
                        .residual = residual.data,
                        .gamma = gamma.data,
                        .sum = h.data,
                        .normed = n.data,
                        .hidden = static_cast<size_t>(in.shape.back()),
                        .epsilon = epsilon};
    b.rows = b.hidden == 0 ? 0 : static_cast<size_t>(in.NumElements()) / b.hidden;
    if (!lane->gpu->comm->FusesAddRmsNorm(b, *type)) return false;
    VDEV_RETURN_IF_ERROR(lane->gpu->comm->AllReduceAddRmsNorm(b, *type, lane->stream));
    return true;
  }

  // The GPU's communicator, created (collectively, like every worker) on first need.
  absl::Status EnsureCommunicator(Gpu& gpu) {
    if (gpu.comm != nullptr) return absl::OkStatus();
    CudaCommunicatorOptions options;
    options.device = gpu.device;
    options.use_nccl = !shared_gpu_;  // NCCL refuses two ranks on one GPU
    VDEV_ASSIGN_OR_RETURN(gpu.comm, CudaCommunicator::Create(session_, options));
    return absl::OkStatus();
  }

#if VDEV_HAVE_CHANNELS_CUDA
  // The shipped channel plan NAME on the lane's stream (its region from the GPU's IPC allocator),
  // compiled for each count where NVRTC works here, else on the generic kernel (PlanKernel::kAuto;
  // VDEV_PLAN_KERNEL=generic|compiled|auto chooses).
  absl::Status PlanAllReduce(const TensorRef& in, const TensorRef& out, const AllReduceStrategy& strategy,
                             DataType type, const VirtualDevice& d) {
    VDEV_ASSIGN_OR_RETURN(Lane * lane, Use(d));
    Gpu* gpu = lane->gpu;
    if (gpu->ipc == nullptr) {
      VDEV_ASSIGN_OR_RETURN(gpu->ipc, CreateCudaIPCAllocator(session_, gpu->device));
    }
    const size_t count = static_cast<size_t>(in.NumElements());
    Gpu::PlanSlot& slot = gpu->plans[absl::StrCat(strategy.plan, "/", DataTypeName(type))];
    if (slot.executor == nullptr || slot.max_count < count) {
      slot.executor.reset();
      const char* env = std::getenv("VDEV_PLAN_KERNEL");
      const absl::StatusOr<channels::PlanKernel> kernel =
          channels::PlanKernelFromName(env != nullptr && *env != 0 ? env : "auto");
      if (!kernel.ok())
        return absl::InvalidArgumentError(absl::StrCat("VDEV_PLAN_KERNEL: ", kernel.status().message()));
      VDEV_ASSIGN_OR_RETURN(
          slot.executor, channels::CudaPlanExecutor::ForStrategy(*session_, *gpu->ipc, AllReduceStrategyName(strategy),
                                                                 count, type, *kernel));
      slot.max_count = count;
    }
    return slot.executor->Execute(in.data, out.data, count, lane->stream);
  }
#endif

  bool CanCaptureAllReduce(ReduceOp op, ir::DType dtype) const override {
    return op == ReduceOp::kSum && CudaKernelDataType(dtype).has_value();
  }

  absl::Status Synchronize() override {
    for (auto& [key, lane] : lanes_) {
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(lane->gpu->device), "cudaSetDevice"));
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(lane->stream), "running the program"));
    }
    for (auto& [device, gpu] : by_device_) {
      VDEV_RETURN_IF_ERROR(gpu->kernels->CheckErrors());
      if (gpu->comm != nullptr) VDEV_RETURN_IF_ERROR(gpu->comm->CheckErrors());
#if VDEV_HAVE_CHANNELS_CUDA
      for (auto& [name, slot] : gpu->plans) VDEV_RETURN_IF_ERROR(slot.executor->CheckErrors());
#endif
    }
    return absl::OkStatus();
  }

  // A graph of several lanes: the capture starts on the current lane (the origin); every other
  // lane joins it through the events Use records, and is joined back into the origin before the
  // capture ends, so the graph holds every lane's work with the same cross-lane edges as an eager run.
  // Without those events (a test's order_streams = false) the other lanes could not join: no capture.
  bool SupportsCapture() const override { return options_.order_streams; }
  absl::Status BeginCapture() override {
    VDEV_ASSIGN_OR_RETURN(origin_, CurrentLane());
    captured_lanes_.clear();
    capturing_ = true;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(origin_->gpu->device), "cudaSetDevice"));
    return CudaStatus(cudaStreamBeginCapture(origin_->stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  }
  absl::Status EndCapture() override {
    absl::Status joined = Switch(origin_);
    for (Lane* lane : captured_lanes_) {
      if (lane == origin_ || !joined.ok()) continue;
      joined = Wait(origin_, lane);
    }
    capturing_ = false;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(origin_->gpu->device), "cudaSetDevice"));
    absl::Status end = CudaStatus(cudaStreamEndCapture(origin_->stream, &graph_), "cudaStreamEndCapture");
    VDEV_RETURN_IF_ERROR(joined);
    VDEV_RETURN_IF_ERROR(end);
    return CudaStatus(cudaGraphInstantiate(&graph_exec_, graph_, 0), "cudaGraphInstantiate");
  }
  // The graph runs as one unit of the origin's stream: the origin waits for the work before it
  // (Switch), and the work after it, on any lane, waits for the origin.
  absl::Status Replay() override {
    VDEV_RETURN_IF_ERROR(Switch(origin_));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(origin_->gpu->device), "cudaSetDevice"));
    return CudaStatus(cudaGraphLaunch(graph_exec_, origin_->stream), "cudaGraphLaunch");
  }

  // Marks are recorded on the current lane; a span whose ends lie on different GPUs (an op that
  // moved the program to another GPU) has no common clock and counts 0.
  int Mark() override {
    absl::StatusOr<Lane*> lane = CurrentLane();
    if (!lane.ok()) return -1;
    cudaEvent_t e;
    if (cudaSetDevice((*lane)->gpu->device) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) return -1;
    if (hold_profile_) {  // the first timed op's stream holds the run (LineUpForProfile)
      hold_profile_ = false;
      internal::LaunchStreamDelay((*lane)->stream, kProfileHoldMicroseconds);
    }
    cudaEventRecord(e, (*lane)->stream);
    marks_.push_back({e, (*lane)->gpu->device});
    return static_cast<int>(marks_.size()) - 1;
  }
  // The hold is far longer than enqueueing one run of a few hundred ops takes (~5 ms for the
  // 10-layer transformer); the session barrier leaves the workers tens of microseconds apart.
  absl::Status LineUpForProfile() override {
    VDEV_RETURN_IF_ERROR(Synchronize());
    if (session_ != nullptr && world_size_ > 1) VDEV_RETURN_IF_ERROR(session_->Barrier("profile-line-up"));
    hold_profile_ = true;
    return absl::OkStatus();
  }
  double Seconds(int from, int to) override {
    float ms = 0;
    if (from < 0 || to < 0 || marks_[from].second != marks_[to].second) return 0;
    if (cudaEventElapsedTime(&ms, marks_[from].first, marks_[to].first) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return ms / 1e3;
  }
  void ResetMarks() override {
    for (auto& [e, device] : marks_) cudaEventDestroy(e);
    marks_.clear();
  }

 private:
  // The visible GPU of virtual `cuda:i` on this worker: (i * W + rank) mod G (docs/executor.md).
  int PhysicalDevice(int virtual_id) const { return (virtual_id * world_size_ + rank_) % gpus_; }

  absl::StatusOr<Gpu*> GpuOf(int device) {
    auto it = by_device_.find(device);
    if (it != by_device_.end()) return it->second.get();
    auto gpu = std::make_unique<Gpu>();
    gpu->device = device;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
    VDEV_ASSIGN_OR_RETURN(gpu->kernels, CudaKernelBackend::Create(device));
    for (const auto& [other, unused] : by_device_) {
      VDEV_RETURN_IF_ERROR(EnablePeerAccess(device, other));
      VDEV_RETURN_IF_ERROR(EnablePeerAccess(other, device));
    }
    Gpu* raw = gpu.get();
    by_device_[device] = std::move(gpu);
    return raw;
  }

  // A copy between two GPUs of one worker goes over their link (NVLink, PCIe) only where `from`
  // may access `to`'s memory; otherwise the driver stages it through host memory, slower. Where the
  // hardware cannot, or a GPU already has as many peers as it may (8), copies stay staged.
  static absl::Status EnablePeerAccess(int from, int to) {
    int can = 0;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer"));
    if (!can) return absl::OkStatus();
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(from), "cudaSetDevice"));
    const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    // Already enabled (by NCCL, a probe) or too many peers: the copy works either way.
    if (e == cudaErrorPeerAccessAlreadyEnabled || e == cudaErrorTooManyPeers) {
      cudaGetLastError();  // clears it
      return absl::OkStatus();
    }
    return CudaStatus(e, "cudaDeviceEnablePeerAccess");
  }

  // The lane of `d` (made on first use): the GPU's, or the virtual device's own in kPerVirtualDevice.
  absl::StatusOr<Lane*> LaneOf(const VirtualDevice& d) {
    const int virtual_id = d.has_id() ? d.virtual_device_id() : 0;
    if (virtual_id >= virtual_devices_)
      return absl::InvalidArgumentError(absl::StrCat("cuda:", virtual_id, " is not one of the program's ",
                                                     virtual_devices_,
                                                     " CUDA devices (CreateCudaBackend's virtual_cuda_devices)"));
    const int device = PhysicalDevice(virtual_id);
    const int key = options_.streams == CudaStreams::kPerVirtualDevice ? virtual_id : device;
    auto it = lanes_.find(key);
    if (it != lanes_.end()) return it->second.get();
    VDEV_ASSIGN_OR_RETURN(Gpu * gpu, GpuOf(device));
    auto lane = std::make_unique<Lane>();
    lane->gpu = gpu;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&lane->done, cudaEventDisableTiming), "cudaEventCreate"));
    lane->context = KernelContext{DeviceType::kCUDA, device, lane->stream, gpu->kernels.get()};
    Lane* raw = lane.get();
    lanes_[key] = std::move(lane);
    return raw;
  }

  // Makes `d`'s lane the current one, after the work enqueued before (Switch), and its GPU current.
  absl::StatusOr<Lane*> Use(const VirtualDevice& d) {
    VDEV_ASSIGN_OR_RETURN(Lane * lane, LaneOf(d));
    VDEV_RETURN_IF_ERROR(Switch(lane));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(lane->gpu->device), "cudaSetDevice"));
    if (options_.producer_delay_us > 0)
      VDEV_RETURN_IF_ERROR(
          CudaStatus(internal::LaunchStreamDelay(lane->stream, options_.producer_delay_us), "stream delay kernel"));
    return lane;
  }

  // The rule that orders a worker's work across GPUs: the executor enqueues in program order, and
  // when the next piece of work goes to another lane, that lane first waits for an event recorded
  // after everything the previous lane holds. By induction every lane's work is ordered after all
  // work enqueued before it, on any lane: a producer's kernels and copies always finish before a
  // consumer on another GPU starts. Lanes that follow each other run one after another; what
  // overlaps is the host's enqueueing with the GPUs' work.
  absl::Status Switch(Lane* next) {
    if (capturing_) captured_lanes_.insert(next);
    Lane* previous = current_;
    current_ = next;
    if (previous == nullptr || previous == next || !options_.order_streams) return absl::OkStatus();
    return Wait(next, previous);
  }
  absl::Status Wait(Lane* waiter, Lane* producer) {
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(producer->gpu->device), "cudaSetDevice"));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(producer->done, producer->stream), "cudaEventRecord"));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(waiter->gpu->device), "cudaSetDevice"));
    return CudaStatus(cudaStreamWaitEvent(waiter->stream, producer->done, 0), "cudaStreamWaitEvent");
  }

  // The lane of the work enqueued last (cuda:0's before any).
  absl::StatusOr<Lane*> CurrentLane() {
    if (current_ != nullptr) return current_;
    return Use(VirtualDevice::ForDevice(DeviceType::kCUDA, 0));
  }

  static bool IsHost(const void* p) {
    cudaPointerAttributes attributes;
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();
      return true;
    }
    return attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged;
  }

  // Reductions the kernels lack (other ops, dtypes, CPU tensors): through the host and the
  // session's channel, summed in rank order like every host all-reduce.
  absl::Status StagedAllReduce(const TensorRef& in, const TensorRef& out, ReduceOp op) {
    const size_t bytes = static_cast<size_t>(in.NumBytes());
    std::string mine(bytes, '\0');
    VDEV_RETURN_IF_ERROR(CopyToHost(mine.data(), in.data, bytes));
    VDEV_RETURN_IF_ERROR(
        internal::ReduceOverSession(*session_, mine.data(), mine.data(), in.NumElements(), in.dtype, op));
    return CopyFromHost(out.data, mine.data(), bytes);
  }

  PeerGroup* session_;
  const int virtual_devices_;
  const int gpus_;
  const bool shared_gpu_;
  const CudaBackendOptions options_;
  KernelContext cpu_;
  absl::flat_hash_map<int, std::unique_ptr<Gpu>> by_device_;
  absl::flat_hash_map<int, std::unique_ptr<Lane>> lanes_;
  Lane* current_ = nullptr;
  Lane* origin_ = nullptr;
  absl::flat_hash_set<Lane*> captured_lanes_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<std::pair<cudaEvent_t, int>> marks_;  // (event, GPU)
  static constexpr int kProfileHoldMicroseconds = 50000;
  bool hold_profile_ = false;  // LineUpForProfile: the next Mark holds its stream first
  bool capturing_ = false;
};

}  // namespace

absl::Status internal::PrepareCudaBackend() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    cudaGetLastError();
    return absl::FailedPreconditionError("--backend cuda: no CUDA device is visible (use --backend host)");
  }
  RegisterCudaKernels(KernelRegistry::Global());
  return absl::OkStatus();
}

bool HasCudaBackend() { return true; }

int VisibleCudaDevices() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return gpus;
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(PeerGroup* session, int virtual_cuda_devices,
                                                                    const CudaBackendOptions& options) {
  VDEV_RETURN_IF_ERROR(internal::PrepareCudaBackend());
  if (options.producer_delay_us < 0) return absl::InvalidArgumentError("producer_delay_us must be >= 0");
  int gpus = 0;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount"));
  const int workers = session == nullptr ? 1 : session->world_size();
  const int v = std::max(1, virtual_cuda_devices);
  // The workers of one virtual device lie on distinct GPUs unless they outnumber the GPUs; then
  // two ranks of a collective share a GPU, which NCCL refuses.
  const bool shared = workers > gpus;
  return std::unique_ptr<ExecutionBackend>(new CudaBackend(session, v, gpus, shared, options));
}

}  // namespace vdev
