// A worker's registers and commands (see internal/worker.h).
#include "internal/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "absl/strings/str_cat.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

// What GetGlobalFunc puts in a register.
class FunctionObject final : public WorkerObject {
 public:
  FunctionObject(std::string name, std::shared_ptr<const WorkerFunction> function)
      : name_(std::move(name)), function_(std::move(function)) {}
  std::string TypeName() const override { return "vdev.function"; }
  const std::string& name() const { return name_; }
  const WorkerFunction& function() const { return *function_; }

 private:
  std::string name_;
  std::shared_ptr<const WorkerFunction> function_;
};

absl::Status Malformed(CommandKind kind) {
  return absl::InternalError(absl::StrCat("malformed ", CommandName(kind), " command"));
}

std::string Reply(ReplyKind kind, uint64_t seq) {
  Encoder out;
  out.U8(static_cast<uint8_t>(kind));
  out.U64(seq);
  return out.Take();
}

}  // namespace

void EncodeWorkerValue(const WorkerValue& value, Encoder* out) {
  std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<HostTensor>>) {
          out->Tagged(*v);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<WorkerObject>>) {
          out->U8(static_cast<uint8_t>(ValueTag::kObject));
          out->Str(v->TypeName());
        } else {
          out->Tagged(v);
        }
      },
      value);
}

Worker::~Worker() {
  // Objects in registers (IPC memory) go back to the allocator before it is destroyed.
  registers_.clear();
  ccl_.reset();
}

absl::string_view Worker::ccl() const { return ccl_ ? absl::string_view(ccl_->kind) : absl::string_view(); }
PeerGroup* Worker::session() { return ccl_ ? ccl_->session.get() : nullptr; }
IPCAllocator* Worker::ipc_allocator() { return ccl_ ? ccl_->allocator.get() : nullptr; }
int Worker::device_id() const { return ccl_ ? ccl_->device : -1; }
CudaCommunicator* Worker::cuda_communicator() { return ccl_ ? ccl_->communicator.get() : nullptr; }

int64_t Worker::live_registers() const {
  int64_t live = 0;
  for (const WorkerValue& v : registers_) live += std::holds_alternative<std::monostate>(v) ? 0 : 1;
  return live;
}

WorkerValue& Worker::Register(uint64_t reg) {
  if (reg >= registers_.size()) registers_.resize(reg + 1);
  return registers_[reg];
}

bool Worker::Handle(absl::string_view message, std::string* reply) {
  reply->clear();
  Decoder in(message);
  uint8_t kind_byte = 0;
  uint64_t seq = 0;
  if (!in.U8(&kind_byte) || !in.U64(&seq)) kind_byte = 0;
  const auto kind = static_cast<CommandKind>(kind_byte);
  if (kind == CommandKind::kShutdown) return false;
  if (failed_) return true;
  std::string what(CommandName(kind));
  if (page_ != nullptr) {
    page_->length.store(0, std::memory_order_relaxed);
    page_->started.store(seq, std::memory_order_release);
  }
  absl::Status status;
  try {
    status = Run(kind, in, reply, &what);
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("exception: ", e.what()));
  } catch (...) {
    status = absl::InternalError("exception of unknown type");
  }
  if (page_ != nullptr) page_->finished.store(seq, std::memory_order_release);
  if (status.ok()) {
    done_ = std::max(done_, seq);
    // Replies carry the seq of the command they answer.
    if (!reply->empty()) std::memcpy(reply->data() + 1, &seq, sizeof seq);
    return true;
  }
  failed_ = true;
  Encoder out;
  out.U8(static_cast<uint8_t>(ReplyKind::kError));
  out.U64(seq);
  out.I64(static_cast<int64_t>(status.code()));
  out.Str(absl::StrCat("worker ", identity_.worker_id, ": command #", seq, " (", what, "): ", status.message()));
  *reply = out.Take();
  return true;
}

std::string Worker::TakeAck() {
  if (failed_ || done_ <= acked_) return std::string();
  acked_ = done_;
  return Reply(ReplyKind::kDone, done_);
}

absl::Status Worker::DecodeArgument(Decoder& in, WorkerValue* value) {
  uint8_t tag = 0;
  if (!in.U8(&tag)) return absl::InternalError("malformed argument");
  switch (static_cast<ValueTag>(tag)) {
    case ValueTag::kNone: *value = std::monostate(); return absl::OkStatus();
    case ValueTag::kInt: {
      int64_t v = 0;
      if (!in.I64(&v)) break;
      *value = v;
      return absl::OkStatus();
    }
    case ValueTag::kFloat: {
      double v = 0;
      if (!in.F64(&v)) break;
      *value = v;
      return absl::OkStatus();
    }
    case ValueTag::kString: {
      std::string v;
      if (!in.Str(&v)) break;
      *value = std::move(v);
      return absl::OkStatus();
    }
    case ValueTag::kShape: {
      Shape v;
      if (!in.ShapeOf(&v)) break;
      *value = std::move(v);
      return absl::OkStatus();
    }
    case ValueTag::kTensor: {
      auto t = std::make_shared<HostTensor>();
      if (!in.Tensor(t.get())) break;
      *value = std::move(t);
      return absl::OkStatus();
    }
    case ValueTag::kRegister: {
      uint64_t reg = 0;
      if (!in.U64(&reg)) break;
      *value = Register(reg);
      return absl::OkStatus();
    }
    case ValueTag::kObject:
    case ValueTag::kStagedTensor: break;
  }
  return absl::InternalError("malformed argument");
}

absl::Status Worker::RunCall(Decoder& in, std::string* what) {
  uint64_t func_reg = 0, result_reg = 0, count = 0;
  if (!in.U64(&func_reg) || !in.U64(&result_reg) || !in.U64(&count)) return Malformed(CommandKind::kCall);
  // Held by value: decoding the arguments may grow registers_.
  std::shared_ptr<const FunctionObject> function;
  if (const auto* object = std::get_if<std::shared_ptr<WorkerObject>>(&Register(func_reg))) {
    function = std::dynamic_pointer_cast<const FunctionObject>(*object);
  }
  if (function == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("register ", func_reg, " holds no function"));
  }
  *what = absl::StrCat("CallPacked \"", function->name(), "\"");
  if (page_ != nullptr) {
    size_t n = std::min(what->size(), sizeof(page_->what));
    std::memcpy(page_->what, what->data(), n);
    page_->length.store(static_cast<uint32_t>(n), std::memory_order_release);
  }
  std::vector<WorkerValue> args(count);
  for (WorkerValue& arg : args) VDEV_RETURN_IF_ERROR(DecodeArgument(in, &arg));
  const WorkerArgs worker_args(std::move(args));
  VDEV_ASSIGN_OR_RETURN(WorkerValue result, function->function()(*this, worker_args));
  Register(result_reg) = std::move(result);
  return absl::OkStatus();
}

// GetGlobalFunc: a register holds the named worker function.
absl::Status Worker::RunGetFunc(Decoder& in, std::string* what) {
  uint64_t reg = 0;
  std::string name;
  if (!in.U64(&reg) || !in.Str(&name)) return Malformed(CommandKind::kGetFunc);
  *what = absl::StrCat("GetGlobalFunc \"", name, "\"");
  std::shared_ptr<const WorkerFunction> function = FindWorkerFunction(name);
  if (function == nullptr) return absl::NotFoundError(absl::StrCat("no worker function named \"", name, "\""));
  Register(reg) = std::make_shared<FunctionObject>(name, std::move(function));
  return absl::OkStatus();
}

// Frees registers.
absl::Status Worker::RunFree(Decoder& in) {
  uint64_t count = 0;
  if (!in.U64(&count)) return Malformed(CommandKind::kFree);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t reg = 0;
    if (!in.U64(&reg)) return Malformed(CommandKind::kFree);
    Register(reg) = std::monostate();
  }
  return absl::OkStatus();
}

// CopyToWorker0: a register holds the tensor sent (in the command or in the staging area).
absl::Status Worker::RunCopyTo(Decoder& in) {
  uint64_t reg = 0;
  uint8_t staged = 0;
  if (!in.U64(&reg) || !in.U8(&staged)) return Malformed(CommandKind::kCopyTo);
  WorkerValue& slot = Register(reg);
  auto* existing = std::get_if<std::shared_ptr<HostTensor>>(&slot);
  // A tensor shared with another register is replaced, not overwritten, so only this one changes.
  std::shared_ptr<HostTensor> target =
      existing != nullptr && existing->use_count() == 1 ? *existing : std::make_shared<HostTensor>();
  if (staged == 0) {
    if (!in.Tensor(target.get())) return Malformed(CommandKind::kCopyTo);
  } else {
    const char* bytes = nullptr;
    if (!in.TensorHeader(target.get()) || staging_ == nullptr ||
        (bytes = staging_->Map(target->bytes.size())) == nullptr) {
      return absl::InternalError("the staged tensor cannot be read");
    }
    std::memcpy(target->bytes.data(), bytes, target->bytes.size());
  }
  slot = std::move(target);
  return absl::OkStatus();
}

// CopyFromWorker0 and DebugGetFromRemote: the reply carries a register's value (a large tensor
// through the staging area, when the command allows it).
absl::Status Worker::RunCopyFrom(CommandKind kind, Decoder& in, std::string* reply) {
  uint64_t reg = 0;
  uint8_t may_stage = 0;
  if (!in.U64(&reg) || (kind == CommandKind::kCopyFrom && !in.U8(&may_stage))) return Malformed(kind);
  static const WorkerValue kEmpty;
  const WorkerValue& value = reg < registers_.size() ? registers_[reg] : kEmpty;
  const auto* tensor = std::get_if<std::shared_ptr<HostTensor>>(&value);
  if (kind == CommandKind::kCopyFrom && tensor == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("register ", reg, " holds ", WorkerValueKind(value), ", not a tensor"));
  }
  Encoder out;
  out.U8(static_cast<uint8_t>(ReplyKind::kValue));
  out.U64(0);
  char* staged = nullptr;
  if (may_stage != 0 && staging_ != nullptr && (*tensor)->bytes.size() >= kStagedCopyBytes &&
      (staged = staging_->Map((*tensor)->bytes.size())) != nullptr) {
    std::memcpy(staged, (*tensor)->bytes.data(), (*tensor)->bytes.size());
    out.U8(static_cast<uint8_t>(ValueTag::kStagedTensor));
    out.TensorHeader(**tensor);
    *reply = out.Take();
    return absl::OkStatus();
  }
  EncodeWorkerValue(value, &out);
  *reply = out.Take();
  return absl::OkStatus();
}

// InitCCL: this worker joins the collectives.
absl::Status Worker::RunInitCcl(Decoder& in, std::string* what) {
  CclRequest request;
  int64_t device = -1, timeout_ms = 0;
  if (!in.Str(&request.kind) || !in.I64(&device) || !in.Str(&request.rendezvous_dir) || !in.Str(&request.session_id) ||
      !in.I64(&timeout_ms)) {
    return Malformed(CommandKind::kInitCcl);
  }
  *what = absl::StrCat("InitCCL \"", request.kind, "\"");
  if (ccl_ != nullptr) return absl::FailedPreconditionError("InitCCL was called before");
  request.rank = worker_id();
  request.world_size = num_workers();
  request.local_rank = local_worker_id();
  request.device = static_cast<int>(device);
  request.timeout = absl::Milliseconds(timeout_ms);
  VDEV_ASSIGN_OR_RETURN(ccl_, CreateCcl(request));
  // Everyone has joined, and worker 0 has removed the socket: the directory has served.
  if (worker_id() == 0) rmdir(request.rendezvous_dir.c_str());
  return absl::OkStatus();
}

absl::Status Worker::Run(CommandKind kind, Decoder& in, std::string* reply, std::string* what) {
  switch (kind) {
    case CommandKind::kCall: return RunCall(in, what);
    case CommandKind::kGetFunc: return RunGetFunc(in, what);
    case CommandKind::kFree: return RunFree(in);
    case CommandKind::kCopyTo: return RunCopyTo(in);
    case CommandKind::kCopyFrom:
    case CommandKind::kDebugGet: return RunCopyFrom(kind, in, reply);
    case CommandKind::kDebugSet: {
      uint64_t reg = 0;
      if (!in.U64(&reg)) return Malformed(kind);
      WorkerValue value;
      VDEV_RETURN_IF_ERROR(DecodeArgument(in, &value));
      Register(reg) = std::move(value);
      return absl::OkStatus();
    }
    case CommandKind::kInitCcl: return RunInitCcl(in, what);
    case CommandKind::kShutdown: return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("unknown command kind ", static_cast<int>(kind)));
}

}  // namespace vdev::internal
