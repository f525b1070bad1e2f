// The built-in worker functions: the worker's identity, tensor creation and copy, the IPC
// allocator and the collectives. The executor's ("vdev.executor.*") are registered by the executor.
#include "internal/builtins.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "internal/protocol.h"
#include "internal/worker.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

using Result = absl::StatusOr<WorkerValue>;

Worker& Self(WorkerContext& ctx) { return static_cast<Worker&>(ctx); }

absl::StatusOr<ir::DType> DTypeArg(const WorkerArgs& args, size_t i) {
  VDEV_ASSIGN_OR_RETURN(std::string name, args.String(i));
  std::optional<ir::DType> dtype = ir::DTypeFromName(name);
  if (!dtype) return absl::InvalidArgumentError(absl::StrCat("argument ", i, ": unknown dtype \"", name, "\""));
  return *dtype;
}

absl::StatusOr<CclState*> RequireCcl(WorkerContext& ctx) {
  CclState* ccl = Self(ctx).ccl_state();
  if (ccl == nullptr) return absl::FailedPreconditionError("the collectives need InitCCL first");
  return ccl;
}

// Stores `value` as element i of `t`, rounded to its dtype.
void StoreAs(HostTensor& t, int64_t i, double value) {
  auto put = [&](auto v) { std::memcpy(t.bytes.data() + i * sizeof v, &v, sizeof v); };
  switch (t.dtype) {
    case ir::DType::kF64: return put(value);
    case ir::DType::kF32: return put(static_cast<float>(value));
    case ir::DType::kF16: return put(FloatToHalf(static_cast<float>(value)));
    case ir::DType::kBF16: return put(FloatToBF16(static_cast<float>(value)));
    case ir::DType::kI64: return put(static_cast<int64_t>(value));
    case ir::DType::kI32: return put(static_cast<int32_t>(value));
    case ir::DType::kI8: return put(static_cast<int8_t>(value));
    case ir::DType::kU8: return put(static_cast<uint8_t>(value));
    case ir::DType::kBool: return put(static_cast<uint8_t>(value != 0));
  }
}

// IPC memory from the session's allocator, returned to it with the register.
class IpcMemoryObject final : public WorkerObject {
 public:
  IpcMemoryObject(IPCAllocator* allocator, IPCMemory* memory) : allocator_(allocator), memory_(memory) {}
  ~IpcMemoryObject() override { allocator_->Free(memory_); }
  std::string TypeName() const override { return "vdev.ipc_memory"; }
  IPCMemory& memory() const { return *memory_; }

 private:
  IPCAllocator* allocator_;
  IPCMemory* memory_;
};

Result TensorFull(WorkerContext&, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(3));
  VDEV_ASSIGN_OR_RETURN(Shape shape, args.ShapeArg(0));
  VDEV_ASSIGN_OR_RETURN(ir::DType dtype, DTypeArg(args, 1));
  VDEV_ASSIGN_OR_RETURN(double value, args.Float(2));
  auto t = std::make_shared<HostTensor>(HostTensor::Zeros(dtype, std::move(shape)));
  for (int64_t i = 0; i < t->NumElements(); ++i) StoreAs(*t, i, value);
  return t;
}

Result IpcAlloc(WorkerContext& ctx, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
  VDEV_ASSIGN_OR_RETURN(int64_t bytes, args.Int(0));
  VDEV_RETURN_IF_ERROR(RequireCcl(ctx).status());
  if (bytes <= 0) return absl::InvalidArgumentError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  if (ctx.ipc_allocator()->backend() != MemoryBackend::kHost) {
    return absl::UnimplementedError("vdev.ipc.* reads and writes host IPC memory (InitCCL(\"host\"))");
  }
  VDEV_ASSIGN_OR_RETURN(IPCMemory * memory, ctx.ipc_allocator()->Allocate(static_cast<size_t>(bytes)));
  return std::make_shared<IpcMemoryObject>(ctx.ipc_allocator(), memory);
}

// vdev.ipc.write(mem, tensor): the tensor's bytes into this worker's region, from offset 0.
Result IpcWrite(WorkerContext&, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(2));
  VDEV_ASSIGN_OR_RETURN(auto mem, args.Object<IpcMemoryObject>(0, "vdev.ipc_memory"));
  VDEV_ASSIGN_OR_RETURN(auto t, args.Tensor(1));
  IPCMemory& m = mem->memory();
  if (t->bytes.size() > m.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(t->bytes.size(), " bytes do not fit ", m.size, " bytes of IPC memory"));
  }
  std::memcpy(m.remote_data[m.worker_id], t->bytes.data(), t->bytes.size());
  return WorkerValue();
}

// vdev.ipc.read(mem, worker, dtype, shape): a copy of the start of `worker`'s region.
Result IpcRead(WorkerContext& ctx, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(4));
  VDEV_ASSIGN_OR_RETURN(auto mem, args.Object<IpcMemoryObject>(0, "vdev.ipc_memory"));
  VDEV_ASSIGN_OR_RETURN(int64_t worker, args.Int(1));
  VDEV_ASSIGN_OR_RETURN(ir::DType dtype, DTypeArg(args, 2));
  VDEV_ASSIGN_OR_RETURN(Shape shape, args.ShapeArg(3));
  if (worker < 0 || worker >= ctx.num_workers()) {
    return absl::InvalidArgumentError(absl::StrCat("argument 1: no worker ", worker));
  }
  auto t = std::make_shared<HostTensor>(HostTensor::Zeros(dtype, std::move(shape)));
  IPCMemory& m = mem->memory();
  if (t->bytes.size() > m.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(t->bytes.size(), " bytes do not fit ", m.size, " bytes of IPC memory"));
  }
  std::memcpy(t->bytes.data(), m.remote_data[worker], t->bytes.size());
  return t;
}

Result AllReduce(WorkerContext& ctx, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
  VDEV_ASSIGN_OR_RETURN(auto in, args.Tensor(0));
  VDEV_ASSIGN_OR_RETURN(CclState * ccl, RequireCcl(ctx));
  auto out = std::make_shared<HostTensor>(HostTensor::Zeros(in->dtype, in->shape));
  VDEV_RETURN_IF_ERROR(ccl->all_reduce(*in, out.get()));
  return out;
}

// Every worker's tensor, gathered through the session's control channel (vdev.ccl.allgather: all
// of them concatenated along the first axis; vdev.ccl.broadcast: worker 0's).
absl::StatusOr<std::vector<HostTensor>> GatherTensors(WorkerContext& ctx, absl::string_view tag,
                                                      const HostTensor& mine) {
  VDEV_ASSIGN_OR_RETURN(CclState * ccl, RequireCcl(ctx));
  Encoder out;
  out.Tensor(mine);
  std::vector<std::string> all;
  VDEV_RETURN_IF_ERROR(ccl->session->AllGather(tag, out.Take(), &all));
  std::vector<HostTensor> tensors(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    Decoder in(all[i]);
    if (!in.Tensor(&tensors[i])) return absl::InternalError("malformed tensor from a peer");
  }
  return tensors;
}

Result AllGather(WorkerContext& ctx, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
  VDEV_ASSIGN_OR_RETURN(auto mine, args.Tensor(0));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> all, GatherTensors(ctx, "vdev.ccl.allgather", *mine));
  Shape shape = mine->shape;
  if (shape.empty()) shape.push_back(1);
  shape[0] *= static_cast<int64_t>(all.size());
  auto out = std::make_shared<HostTensor>(HostTensor::Zeros(mine->dtype, shape));
  size_t offset = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].dtype != mine->dtype || all[i].shape != mine->shape) {
      return absl::InvalidArgumentError(absl::StrCat("worker ", i, "'s tensor differs in dtype or shape"));
    }
    std::memcpy(out->bytes.data() + offset, all[i].bytes.data(), all[i].bytes.size());
    offset += all[i].bytes.size();
  }
  return out;
}

Result Broadcast(WorkerContext& ctx, const WorkerArgs& args) {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
  VDEV_ASSIGN_OR_RETURN(auto mine, args.Tensor(0));
  VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> all, GatherTensors(ctx, "vdev.ccl.broadcast", *mine));
  return std::make_shared<HostTensor>(std::move(all[0]));
}

}  // namespace

void RegisterBuiltinWorkerFunctions(const std::function<absl::Status(absl::string_view, WorkerFunction)>& add) {
  auto builtin = [&add](absl::string_view name, WorkerFunction fn) { add(name, std::move(fn)).IgnoreError(); };
  builtin("vdev.worker.id", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(0));
    return int64_t{ctx.worker_id()};
  });
  builtin("vdev.worker.group", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(0));
    return int64_t{ctx.group_id()};
  });
  builtin("vdev.worker.live_registers", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(0));
    return Self(ctx).live_registers();
  });
  builtin("vdev.tensor.empty", [](WorkerContext&, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(2));
    VDEV_ASSIGN_OR_RETURN(Shape shape, args.ShapeArg(0));
    VDEV_ASSIGN_OR_RETURN(ir::DType dtype, DTypeArg(args, 1));
    return std::make_shared<HostTensor>(HostTensor::Zeros(dtype, std::move(shape)));
  });
  builtin("vdev.tensor.full", TensorFull);
  builtin("vdev.tensor.copy", [](WorkerContext&, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
    VDEV_ASSIGN_OR_RETURN(auto t, args.Tensor(0));
    return std::make_shared<HostTensor>(*t);
  });
  builtin("vdev.ipc.alloc", IpcAlloc);
  builtin("vdev.ipc.write", IpcWrite);
  builtin("vdev.ipc.read", IpcRead);
  builtin("vdev.ccl.barrier", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
    VDEV_RETURN_IF_ERROR(args.ExpectCount(0));
    VDEV_ASSIGN_OR_RETURN(CclState * ccl, RequireCcl(ctx));
    VDEV_RETURN_IF_ERROR(ccl->session->Barrier("vdev.ccl.barrier"));
    return WorkerValue();
  });
  builtin("vdev.ccl.allreduce", AllReduce);
  builtin("vdev.ccl.allgather", AllGather);
  builtin("vdev.ccl.broadcast", Broadcast);
}

}  // namespace vdev::internal
