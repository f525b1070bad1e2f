// The host backend of vdev/executor/executor.h: host memory, CPU kernels, shm or in-process all-reduces.
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "session_reduce.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/executor/executor.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

std::optional<DataType> HostAllReduceType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return DataType::kF32;
    case ir::DType::kF64: return DataType::kF64;
    case ir::DType::kI32: return DataType::kI32;
    default: return std::nullopt;
  }
}

AllReduceAlgorithm HostAlgorithm(AllReduceStrategy strategy) {
  switch (strategy.kind) {
    case AllReduceStrategy::kOneShot: return AllReduceAlgorithm::kOneShot;
    case AllReduceStrategy::kTwoShot: return AllReduceAlgorithm::kTwoShot;
    default: return AllReduceAlgorithm::kAuto;  // auto, and NCCL, which the host backend lacks
  }
}

class HostBackend final : public ExecutionBackend {
 public:
  HostBackend(PeerGroup* session, std::unique_ptr<IPCAllocator> ipc, ThreadGroup* group, int rank, int world_size)
      : session_(session), ipc_(std::move(ipc)), group_(group) {
    rank_ = rank;
    world_size_ = world_size;
  }
  ~HostBackend() override {
    plans_.clear();
    if (workspace_ != nullptr) ipc_->Free(workspace_);
  }

  std::string name() const override { return "host"; }
  DeviceType KernelDevice(const VirtualDevice&) const override { return DeviceType::kCPU; }
  absl::StatusOr<KernelContext*> Context(const VirtualDevice&) override { return &cpu_; }

  absl::StatusOr<std::shared_ptr<DeviceBuffer>> Allocate(const VirtualDevice& device, size_t bytes) override {
    auto buffer = std::make_shared<DeviceBuffer>();
    buffer->bytes = bytes;
    if (device.memory_scope() == "ipc_memory" && ipc_ != nullptr) {
      VDEV_ASSIGN_OR_RETURN(IPCMemory * memory, ipc_->Allocate(bytes));
      buffer->data = memory->remote_data[rank_];
      buffer->ipc = memory;
      buffer->release = [allocator = ipc_.get(), memory] { allocator->Free(memory); };
      return buffer;
    }
    constexpr size_t kAlign = 64;
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* data = std::aligned_alloc(kAlign, rounded);
    if (data == nullptr)
      return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
    std::memset(data, 0, rounded);
    buffer->data = data;
    buffer->release = [data] { std::free(data); };
    return buffer;
  }

  absl::Status Copy(void* dst, const void* src, size_t bytes) override {
    if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* host, const void* src, size_t bytes) override { return Copy(host, src, bytes); }
  absl::Status CopyFromHost(void* dst, const void* host, size_t bytes) override { return Copy(dst, host, bytes); }

  absl::Status AllReduce(const TensorRef& in, const IPCBuffer*, const TensorRef& out, ReduceOp op,
                         AllReduceStrategy strategy, const VirtualDevice&) override {
    if (group_ != nullptr) return group_->AllReduce(rank_, in, out, op);
    if (world_size_ == 1) return Copy(out.data, in.data, static_cast<size_t>(in.NumBytes()));
    const size_t count = static_cast<size_t>(in.NumElements());
    std::optional<DataType> type = HostAllReduceType(in.dtype);
    if (op == ReduceOp::kSum && type && strategy.kind == AllReduceStrategy::kPlan)
      return PlanAllReduce(in, out, strategy, *type);
    if (op == ReduceOp::kSum && type) {
      const AllReduceAlgorithm algorithm = HostAlgorithm(strategy);
      const size_t need = AllReduceWorkspaceBytes(AllReduceAlgorithm::kAuto, world_size_, count, *type);
      if (workspace_ == nullptr || workspace_->size < need) {
        // Collective: every worker meets the same all-reduces in the same order, so all grow alike.
        if (workspace_ != nullptr) ipc_->Free(workspace_);
        workspace_ = nullptr;
        VDEV_ASSIGN_OR_RETURN(workspace_, ipc_->Allocate(std::max<size_t>(need, size_t{1} << 20)));
      }
      return HostAllReduce(*session_, *workspace_, in.data, out.data, count, *type, algorithm);
    }
    // Other reductions and dtypes: every worker's bytes over the session channel, reduced locally
    // in rank order (small tensors; what NCCL would do on a GPU).
    return internal::ReduceOverSession(*session_, in.data, out.data, in.NumElements(), in.dtype, op);
  }

  absl::Status Synchronize() override { return absl::OkStatus(); }

  // strategy="plan:NAME": the shipped channel plan NAME, run by the channels' host executor (one
  // per plan and dtype, made again — collectively, like every worker — when a larger count comes).
  absl::Status PlanAllReduce(const TensorRef& in, const TensorRef& out, const AllReduceStrategy& strategy,
                             DataType type) {
    const size_t count = static_cast<size_t>(in.NumElements());
    const std::string key = absl::StrCat(strategy.plan, "/", DataTypeName(type));
    PlanSlot& slot = plans_[key];
    if (slot.executor == nullptr || slot.max_count < count) {
      slot.executor.reset();
      VDEV_ASSIGN_OR_RETURN(slot.executor, channels::HostPlanExecutor::ForStrategy(
                                               *session_, *ipc_, AllReduceStrategyName(strategy), count, type));
      slot.max_count = count;
    }
    return slot.executor->Execute(in.data, out.data, count);
  }

  int Mark() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return static_cast<int>(marks_.size()) - 1;
  }
  double Seconds(int from, int to) override { return std::chrono::duration<double>(marks_[to] - marks_[from]).count(); }
  void ResetMarks() override { marks_.clear(); }

 private:
  PeerGroup* session_;
  std::unique_ptr<IPCAllocator> ipc_;
  ThreadGroup* group_;
  KernelContext cpu_;
  IPCMemory* workspace_ = nullptr;
  struct PlanSlot {
    std::unique_ptr<channels::HostPlanExecutor> executor;
    size_t max_count = 0;
  };
  absl::flat_hash_map<std::string, PlanSlot> plans_;
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateHostBackend(PeerGroup* session) {
  std::unique_ptr<IPCAllocator> ipc;
  int rank = 0, world_size = 1;
  if (session != nullptr) {
    rank = session->rank();
    world_size = session->world_size();
    if (world_size > 1) {
      VDEV_ASSIGN_OR_RETURN(ipc, CreateHostIPCAllocator(session));
    }
  }
  return std::unique_ptr<ExecutionBackend>(new HostBackend(session, std::move(ipc), nullptr, rank, world_size));
}

absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateThreadBackend(ThreadGroup* group, int rank) {
  if (group == nullptr || rank < 0 || rank >= group->world_size())
    return absl::InvalidArgumentError("a thread worker needs its group and a rank inside it");
  return std::unique_ptr<ExecutionBackend>(new HostBackend(nullptr, nullptr, group, rank, group->world_size()));
}

}  // namespace vdev
