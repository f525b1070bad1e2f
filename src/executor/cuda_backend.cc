// The CUDA backend of vdev/executor.h: GPU memory and kernels, CUDA IPC pools, vdev's all-reduce.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "prepared_op.h"
#include "session_reduce.h"
#include "cuda_common/cuda_common.h"
#include "vdev/cuda_allreduce.h"
#if VDEV_HAVE_CHANNELS_CUDA
#include "vdev/cuda_channel_executor.h"
#endif
#include "vdev/cuda_kernels.h"
#include "vdev/executor.h"
#include "vdev/status_macros.h"

namespace vdev {
namespace {

using internal::CudaKernelDataType;
using internal::CudaStatus;

// One GPU a worker uses: its stream (all of the worker's work on it, in program order), the
// kernels' state, and — created on first need, collectively — IPC memory and the communicator.
struct Gpu {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CudaKernelBackend> kernels;
  KernelContext context;
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

class CudaBackend final : public ExecutionBackend {
 public:
  CudaBackend(Session* session, int virtual_devices, int gpus, bool shared)
      : session_(session), virtual_devices_(virtual_devices), gpus_(gpus), shared_gpu_(shared) {
    if (session != nullptr) {
      rank_ = session->rank();
      world_size_ = session->world_size();
    }
  }
  ~CudaBackend() override {
    for (auto& [device, gpu] : by_device_) {
      cudaSetDevice(device);
      cudaStreamSynchronize(gpu->stream);
    }
    if (graph_exec_ != nullptr) cudaGraphExecDestroy(graph_exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }

  std::string name() const override { return "cuda"; }
  DeviceType KernelDevice(const VirtualDevice& d) const override {
    return d.device_type() == DeviceType::kCUDA ? DeviceType::kCUDA : DeviceType::kCPU;
  }

  absl::StatusOr<KernelContext*> Context(const VirtualDevice& d) override {
    if (KernelDevice(d) == DeviceType::kCPU) return &cpu_;
    VDEV_ASSIGN_OR_RETURN(Gpu * gpu, GpuOf(d));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(gpu->device), "cudaSetDevice"));
    return &gpu->context;
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
    VDEV_ASSIGN_OR_RETURN(Gpu * gpu, GpuOf(d));
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
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&data, bytes), absl::StrCat("cudaMalloc of ", bytes, " bytes on GPU ", gpu->device)));
    // On the worker's stream: the legacy stream's cudaMemset would not be ordered before the
    // kernels that write this buffer next (the stream is non-blocking), and could land after them.
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(data, 0, bytes, gpu->stream), "cudaMemsetAsync"));
    buffer->data = data;
    buffer->release = [data] { cudaFree(data); };
    return buffer;
  }

  // Copies run on the stream of the first GPU (the only one in the common case); a copy that
  // touches host memory is waited for, since the CPU kernels read host memory directly.
  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    if (dst == src || bytes == 0) return absl::OkStatus();
    cudaStream_t stream = MainStream();
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync"));
    // Inside a capture no CPU kernel runs (Executor's rule), so nothing on the host waits for it.
    if (!capturing_ && (IsHost(dst) || IsHost(src))) return CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* host, const void* src, size_t bytes) override { return Copy(host, src, bytes); }
  absl::Status CopyFromHost(void* dst, const void* host, size_t bytes) override {
    if (IsHost(dst)) {
      // A replayed graph may still read this pinned buffer (a parameter): wait for it first.
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(MainStream()), "cudaStreamSynchronize"));
      std::memcpy(dst, host, bytes);
      return absl::OkStatus();
    }
    return Copy(dst, host, bytes);
  }

  absl::Status AllReduce(const TensorRef& in, const IPCBuffer* in_ipc, const TensorRef& out, ReduceOp op,
                         AllReduceStrategy strategy, const VirtualDevice& d) override {
    const size_t bytes = static_cast<size_t>(in.NumBytes());
    if (world_size_ == 1) return Copy(out.data, in.data, bytes);
    std::optional<DataType> type = CudaKernelDataType(in.dtype);
#if VDEV_HAVE_CHANNELS_CUDA
    if (KernelDevice(d) == DeviceType::kCUDA && op == ReduceOp::kSum && type && strategy.kind == AllReduceStrategy::kPlan)
      return PlanAllReduce(in, out, strategy, *type, d);
#endif
    if (KernelDevice(d) != DeviceType::kCUDA || op != ReduceOp::kSum || !type || strategy.kind == AllReduceStrategy::kPlan)
      return StagedAllReduce(in, out, op);
    VDEV_ASSIGN_OR_RETURN(Gpu * gpu, GpuOf(d));
    if (gpu->comm == nullptr) {
      CudaCommunicatorOptions options;
      options.device = gpu->device;
      options.use_nccl = !shared_gpu_;  // NCCL refuses two ranks on one GPU
      VDEV_ASSIGN_OR_RETURN(gpu->comm, CudaCommunicator::Create(session_, options));
    }
    const size_t count = static_cast<size_t>(in.NumElements());
    if (in_ipc != nullptr && (strategy.kind == AllReduceStrategy::kAuto || strategy.kind == AllReduceStrategy::kOneShot))
      return gpu->comm->AllReduceZeroCopy(*in_ipc, out.data, count, *type, gpu->stream);
    AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto;
    if (strategy.kind == AllReduceStrategy::kOneShot) algorithm = AllReduceAlgorithm::kOneShot;
    if (strategy.kind == AllReduceStrategy::kTwoShot) algorithm = AllReduceAlgorithm::kTwoShot;
    if (strategy.kind == AllReduceStrategy::kNccl && !shared_gpu_) algorithm = AllReduceAlgorithm::kNccl;
    return gpu->comm->AllReduce(in.data, out.data, count, *type, algorithm, gpu->stream);
  }

#if VDEV_HAVE_CHANNELS_CUDA
  // The shipped channel plan NAME on the worker's stream (its region from the GPU's IPC allocator),
  // compiled for each count where NVRTC works here, else on the generic kernel (PlanKernel::kAuto;
  // VDEV_PLAN_KERNEL=generic|compiled|auto chooses).
  absl::Status PlanAllReduce(const TensorRef& in, const TensorRef& out, const AllReduceStrategy& strategy, DataType type,
                             const VirtualDevice& d) {
    VDEV_ASSIGN_OR_RETURN(Gpu * gpu, GpuOf(d));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(gpu->device), "cudaSetDevice"));
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
      if (!kernel.ok()) return absl::InvalidArgumentError(absl::StrCat("VDEV_PLAN_KERNEL: ", kernel.status().message()));
      VDEV_ASSIGN_OR_RETURN(slot.executor,
                            channels::CudaPlanExecutor::ForStrategy(*session_, *gpu->ipc, AllReduceStrategyName(strategy),
                                                                    count, type, *kernel));
      slot.max_count = count;
    }
    return slot.executor->Execute(in.data, out.data, count, gpu->stream);
  }
#endif

  bool CanCaptureAllReduce(ReduceOp op, ir::DType dtype) const override {
    return op == ReduceOp::kSum && CudaKernelDataType(dtype).has_value();
  }

  absl::Status Synchronize() override {
    for (auto& [device, gpu] : by_device_) {
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
      VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(gpu->stream), "running the program"));
      VDEV_RETURN_IF_ERROR(gpu->kernels->CheckErrors());
      if (gpu->comm != nullptr) VDEV_RETURN_IF_ERROR(gpu->comm->CheckErrors());
#if VDEV_HAVE_CHANNELS_CUDA
      for (auto& [name, slot] : gpu->plans) VDEV_RETURN_IF_ERROR(slot.executor->CheckErrors());
#endif
    }
    return absl::OkStatus();
  }

  // One GPU only: a graph is one stream's work.
  bool SupportsCapture() const override { return by_device_.size() == 1; }
  absl::Status BeginCapture() override {
    capturing_ = true;
    return CudaStatus(cudaStreamBeginCapture(MainStream(), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  }
  absl::Status EndCapture() override {
    capturing_ = false;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamEndCapture(MainStream(), &graph_), "cudaStreamEndCapture"));
    return CudaStatus(cudaGraphInstantiate(&graph_exec_, graph_, 0), "cudaGraphInstantiate");
  }
  absl::Status Replay() override { return CudaStatus(cudaGraphLaunch(graph_exec_, MainStream()), "cudaGraphLaunch"); }

  int Mark() override {
    cudaEvent_t e;
    if (cudaEventCreate(&e) != cudaSuccess) return -1;
    cudaEventRecord(e, MainStream());
    events_.push_back(e);
    return static_cast<int>(events_.size()) - 1;
  }
  double Seconds(int from, int to) override {
    float ms = 0;
    if (from < 0 || to < 0 || cudaEventElapsedTime(&ms, events_[from], events_[to]) != cudaSuccess) return 0;
    return ms / 1e3;
  }
  void ResetMarks() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    events_.clear();
  }

 private:
  absl::StatusOr<Gpu*> GpuOf(const VirtualDevice& d) {
    const int virtual_id = d.has_id() ? d.virtual_device_id() : 0;
    const int device = (rank_ * virtual_devices_ + virtual_id) % gpus_;
    auto it = by_device_.find(device);
    if (it != by_device_.end()) return it->second.get();
    auto gpu = std::make_unique<Gpu>();
    gpu->device = device;
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    VDEV_ASSIGN_OR_RETURN(gpu->kernels, CudaKernelBackend::Create(device));
    gpu->context = KernelContext{DeviceType::kCUDA, device, gpu->stream, gpu->kernels.get()};
    if (first_device_ < 0) first_device_ = device;
    Gpu* raw = gpu.get();
    by_device_[device] = std::move(gpu);
    return raw;
  }

  cudaStream_t MainStream() {
    if (first_device_ < 0) {
      absl::StatusOr<Gpu*> gpu = GpuOf(VirtualDevice::ForDevice(DeviceType::kCUDA, 0));
      if (!gpu.ok()) return nullptr;
    }
    return by_device_[first_device_]->stream;
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
    VDEV_RETURN_IF_ERROR(internal::ReduceOverSession(*session_, mine.data(), mine.data(), in.NumElements(), in.dtype, op));
    return CopyFromHost(out.data, mine.data(), bytes);
  }

  Session* session_;
  const int virtual_devices_;
  const int gpus_;
  const bool shared_gpu_;
  KernelContext cpu_;
  absl::flat_hash_map<int, std::unique_ptr<Gpu>> by_device_;
  int first_device_ = -1;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<cudaEvent_t> events_;
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

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(Session* session, int virtual_cuda_devices) {
  VDEV_RETURN_IF_ERROR(internal::PrepareCudaBackend());
  int gpus = 0;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount"));
  const int workers = session == nullptr ? 1 : session->world_size();
  const int v = std::max(1, virtual_cuda_devices);
  // Workers share a GPU when the program's devices of all workers outnumber the GPUs.
  const bool shared = workers * v > gpus;
  return std::unique_ptr<ExecutionBackend>(new CudaBackend(session, v, gpus, shared));
}

}  // namespace vdev
