// The controller's side of a session: commands, registers, waits and faults (see vdev/controller/controller.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "guardian/guardian.h"
#include "internal/ccl.h"
#include "internal/protocol.h"
#include "internal/staging.h"
#include "internal/transport.h"
#include "internal/value_codec.h"
#include "vdev/controller/controller.h"
#include "vdev/runtime/launch.h"
#include "vdev/runtime/peer_group.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace internal {

class ControllerCore : public std::enable_shared_from_this<ControllerCore> {
 public:
  ControllerCore(int n, const ControllerOptions& options, bool threaded)
      : n_(n),
        options_(options),
        threaded_(threaded),
        pending_frees_(std::max(n, 0)),
        sent_(std::max(n, 0)),
        acked_(std::max(n, 0)) {}
  ~ControllerCore() { Shutdown().IgnoreError(); }

  absl::Status Start();
  int num_workers() const { return n_; }
  const ControllerOptions& options() const { return options_; }
  std::vector<pid_t> pids() const { return transport_ ? transport_->pids() : std::vector<pid_t>(); }
  const std::string& ccl_session_id() const { return ccl_session_id_; }
  const std::string& ccl_dir() const { return ccl_dir_; }

  absl::StatusOr<RemoteFunc> GetGlobalFunc(absl::string_view name);
  absl::StatusOr<DRef> Call(const RemoteFunc& func, const std::vector<Value>& args);
  absl::Status Sync(int worker);
  absl::Status SyncAll();
  absl::Status CopyTo(const HostTensor& host, const DRef& dref);
  absl::Status CopyFrom(HostTensor* host, const DRef& dref);
  absl::StatusOr<Value> DebugGet(int64_t reg, int worker);
  absl::Status DebugSet(int64_t reg, const Value& value, int worker);
  absl::Status InitCcl(absl::string_view ccl, const std::vector<int>& device_ids);
  absl::Status Shutdown();
  void FreeRegister(int64_t reg);

 private:
  // OK when new commands may be sent: not shut down, no failure, none reported meanwhile.
  absl::Status Usable();
  absl::Status CheckWorker(int worker) const;
  absl::Status CheckRef(const DRef& ref, absl::string_view what) const;
  std::pair<Encoder, uint64_t> Begin(CommandKind kind);
  // `tail` is appended to `message` on its way (CopyToWorker0's bytes, sent from the caller's tensor).
  absl::Status SendTo(int worker, std::string message, absl::string_view tail = {});
  absl::Status SendAll(const std::string& message);
  // Waits for each worker i with targets[i] != 0: for the kValue reply to command targets[i], handed
  // to `take`; or, without `take`, until it has run command targets[i] (its acks say so).
  absl::Status Await(const std::vector<uint64_t>& targets, absl::string_view what,
                     const std::function<absl::Status(int, Decoder&)>& take);
  // Takes in a message no wait matched: an ack is noted, an error or an exit fails the session.
  void Note(const Incoming& in);
  absl::Status Fail(absl::Status status);
  void Reap();
  DRef NewRef();

  const int n_;
  const ControllerOptions options_;
  const bool threaded_;
  std::unique_ptr<Transport> transport_;
  absl::Status failure_;
  bool shut_down_ = false;
  uint64_t next_seq_ = 0;
  int64_t next_reg_ = 0;
  std::vector<int64_t> free_regs_;
  std::vector<std::vector<int64_t>> pending_frees_;  // per worker: freed, not yet sent
  std::vector<uint64_t> sent_;                       // per worker: the seq of the last command sent
  std::vector<uint64_t> acked_;                      // per worker: the seq up to which it has run everything
  uint64_t staged_seq_ = 0;                          // the last CopyToWorker0 whose bytes are in the staging area
  std::string ccl_session_id_;
  std::string ccl_dir_;
  // Removes the session's segments should this process be killed outright (SIGKILL) while a worker
  // is between creating a segment and sharing it; dismissed when the session ends normally.
  std::optional<Guardian> guardian_;
};

class RegisterHandle {
 public:
  RegisterHandle(int64_t reg, std::weak_ptr<ControllerCore> core) : reg_(reg), core_(std::move(core)) {}
  ~RegisterHandle() {
    if (auto core = core_.lock()) core->FreeRegister(reg_);
  }
  int64_t reg() const { return reg_; }
  std::shared_ptr<ControllerCore> core() const { return core_.lock(); }
  bool BelongsTo(const ControllerCore* core) const { return core_.lock().get() == core; }

 private:
  int64_t reg_;
  std::weak_ptr<ControllerCore> core_;
};

namespace {

void RemoveDir(const std::string& dir) {
  if (dir.empty()) return;
  unlink(absl::StrCat(dir, "/session.sock").c_str());
  rmdir(dir.c_str());
}

}  // namespace

absl::Status ControllerCore::Start() {
  if (n_ < 1 || n_ > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("a session has 1..", kMaxWorkers, " workers, not ", n_));
  }
  if (options_.num_groups < 1 || n_ % options_.num_groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(n_, " workers cannot be split into ", options_.num_groups, " groups of equal size"));
  }
  if (options_.timeout <= absl::ZeroDuration()) return absl::InvalidArgumentError("the timeout must be positive");
  if (threaded_) {
    VDEV_ASSIGN_OR_RETURN(transport_, StartThreads(n_, options_.num_groups));
  } else {
    VDEV_ASSIGN_OR_RETURN(transport_, StartProcesses(n_, options_.num_groups, options_.program,
                                                     absl::Now() + std::max(options_.timeout, kWorkerStartTimeout),
                                                     options_.stopped_limit));
  }
  return absl::OkStatus();
}

absl::Status ControllerCore::Usable() {
  if (shut_down_) return absl::FailedPreconditionError("the session was shut down");
  if (!failure_.ok()) return failure_;
  while (std::optional<Incoming> in = transport_->Receive(absl::InfinitePast())) {
    Note(*in);
  }
  return failure_;
}

absl::Status ControllerCore::CheckWorker(int worker) const {
  if (worker < 0 || worker >= n_) {
    return absl::InvalidArgumentError(absl::StrCat("no worker ", worker, " in a session of ", n_));
  }
  return absl::OkStatus();
}

absl::Status ControllerCore::CheckRef(const DRef& ref, absl::string_view what) const {
  if (!ref.valid()) return absl::InvalidArgumentError(absl::StrCat(what, ": a null DRef"));
  if (!ref.handle_->BelongsTo(this))
    return absl::InvalidArgumentError(absl::StrCat(what, ": a DRef of another session"));
  return absl::OkStatus();
}

std::pair<Encoder, uint64_t> ControllerCore::Begin(CommandKind kind) {
  Encoder out;
  const uint64_t seq = ++next_seq_;
  out.U8(static_cast<uint8_t>(kind));
  out.U64(seq);
  return {std::move(out), seq};
}

absl::Status ControllerCore::SendTo(int worker, std::string message, absl::string_view tail) {
  std::vector<std::string> messages;
  if (!pending_frees_[worker].empty()) {
    Encoder frees;
    frees.U8(static_cast<uint8_t>(CommandKind::kFree));
    frees.U64(0);
    frees.U64(pending_frees_[worker].size());
    for (int64_t reg : pending_frees_[worker]) frees.U64(static_cast<uint64_t>(reg));
    pending_frees_[worker].clear();
    messages.push_back(frees.Take());
  }
  messages.push_back(std::move(message));
  absl::Status status = transport_->Send(worker, std::move(messages), absl::Now() + options_.timeout, tail);
  if (status.ok()) {
    sent_[worker] = next_seq_;  // every command is sent right after Begin numbered it
    return status;
  }
  // A dead worker's own account (its exit, or the error it sent before) says more than a failed send.
  while (failure_.ok()) {
    std::optional<Incoming> in = transport_->Receive(absl::Now() + absl::Milliseconds(500));
    if (!in) break;
    Note(*in);
  }
  if (!failure_.ok()) return failure_;
  return Fail(absl::Status(status.code(), absl::StrCat("worker ", worker, ": ", status.message())));
}

absl::Status ControllerCore::SendAll(const std::string& message) {
  for (int i = 0; i < n_; ++i) VDEV_RETURN_IF_ERROR(SendTo(i, message));
  return absl::OkStatus();
}

void ControllerCore::Note(const Incoming& in) {
  if (in.exited) {
    Fail(absl::UnavailableError(in.message)).IgnoreError();
    return;
  }
  Decoder d(in.message);
  uint8_t kind = 0;
  uint64_t seq = 0;
  int64_t code = 0;
  std::string text;
  if (d.U8(&kind) && d.U64(&seq) && static_cast<ReplyKind>(kind) == ReplyKind::kDone) {
    acked_[in.worker] = std::max(acked_[in.worker], seq);
    return;
  }
  if (static_cast<ReplyKind>(kind) == ReplyKind::kError && d.I64(&code) && d.Str(&text)) {
    Fail(absl::Status(static_cast<absl::StatusCode>(code), text)).IgnoreError();
    return;
  }
  Fail(absl::InternalError(absl::StrCat("worker ", in.worker, " sent a reply nobody asked for"))).IgnoreError();
}

absl::Status ControllerCore::Fail(absl::Status status) {
  if (failure_.ok()) {
    failure_ = std::move(status);
    Reap();
  }
  return failure_;
}

void ControllerCore::Reap() {
  if (transport_ == nullptr) return;
  Encoder out;
  out.U8(static_cast<uint8_t>(CommandKind::kShutdown));
  out.U64(++next_seq_);
  const std::string message = out.Take();
  // Workers busy elsewhere get a short grace only: the session is over either way.
  const absl::Time deadline = absl::Now() + std::min(options_.timeout, absl::Seconds(5));
  for (int i = 0; i < n_; ++i) transport_->Send(i, {message}, deadline).IgnoreError();
  transport_->Stop(deadline);
  RemoveDir(ccl_dir_);
  RemoveSessionSegments(ccl_session_id_);
  guardian_.reset();
}

absl::Status ControllerCore::Await(const std::vector<uint64_t>& targets, absl::string_view what,
                                   const std::function<absl::Status(int, Decoder&)>& take) {
  std::vector<bool> taken(n_, false);
  auto pending = [&](int i) { return targets[i] != 0 && (take ? !taken[i] : acked_[i] < targets[i]); };
  const absl::Time deadline = absl::Now() + options_.timeout;
  while (true) {
    int late = -1;
    for (int i = 0; i < n_ && late < 0; ++i) late = pending(i) ? i : -1;
    if (late < 0) return absl::OkStatus();
    std::optional<Incoming> in = transport_->Receive(deadline);
    if (!in) {
      // Every worker still owed an answer, as each stands now: the one that holds the others up
      // is among them, and its state and command tell it apart.
      std::string late_ones;
      for (int i = 0; i < n_; ++i) {
        if (pending(i)) absl::StrAppend(&late_ones, late_ones.empty() ? "" : "; ", transport_->Describe(i));
      }
      return Fail(absl::DeadlineExceededError(
          absl::StrCat("worker ", late, " did not finish ", what, " (command #", targets[late], ") within ",
                       absl::FormatDuration(options_.timeout), "; still waiting for: ", late_ones)));
    }
    Decoder d(in->message);
    uint8_t kind = 0;
    uint64_t seq = 0;
    if (take && !in->exited && d.U8(&kind) && d.U64(&seq) && static_cast<ReplyKind>(kind) == ReplyKind::kValue &&
        seq == targets[in->worker] && !taken[in->worker]) {
      taken[in->worker] = true;
      absl::Status status = take(in->worker, d);
      if (absl::IsDataLoss(status)) return Fail(status);
      if (!status.ok()) return status;
      continue;
    }
    Note(*in);
    if (!failure_.ok()) return failure_;
  }
}

DRef ControllerCore::NewRef() {
  int64_t reg;
  if (!free_regs_.empty()) {
    reg = free_regs_.back();
    free_regs_.pop_back();
  } else {
    reg = next_reg_++;
  }
  return DRef(std::make_shared<RegisterHandle>(reg, weak_from_this()));
}

void ControllerCore::FreeRegister(int64_t reg) {
  if (shut_down_ || !failure_.ok()) return;
  // The free travels with the next message to each worker (one write instead of two), so it reaches
  // every worker before any later use of the number: reusing it at once is safe.
  for (std::vector<int64_t>& pending : pending_frees_) pending.push_back(reg);
  free_regs_.push_back(reg);
}

absl::StatusOr<RemoteFunc> ControllerCore::GetGlobalFunc(absl::string_view name) {
  VDEV_RETURN_IF_ERROR(Usable());
  RemoteFunc func{NewRef(), std::string(name)};
  auto [out, seq] = Begin(CommandKind::kGetFunc);
  out.U64(static_cast<uint64_t>(func.ref.reg_id()));
  out.Str(name);
  VDEV_RETURN_IF_ERROR(SendAll(out.Take()));
  return func;
}

absl::StatusOr<DRef> ControllerCore::Call(const RemoteFunc& func, const std::vector<Value>& args) {
  VDEV_RETURN_IF_ERROR(Usable());
  VDEV_RETURN_IF_ERROR(CheckRef(func.ref, absl::StrCat("CallPacked \"", func.name, "\"")));
  for (const Value& arg : args) {
    if (const DRef* ref = std::get_if<DRef>(&arg.v)) {
      VDEV_RETURN_IF_ERROR(CheckRef(*ref, absl::StrCat("CallPacked \"", func.name, "\"")));
    }
  }
  DRef result = NewRef();
  auto [out, seq] = Begin(CommandKind::kCall);
  out.U64(static_cast<uint64_t>(func.ref.reg_id()));
  out.U64(static_cast<uint64_t>(result.reg_id()));
  out.U64(args.size());
  for (const Value& arg : args) VDEV_RETURN_IF_ERROR(EncodeValue(arg, &out));
  VDEV_RETURN_IF_ERROR(SendAll(out.Take()));
  return result;
}

absl::Status ControllerCore::Sync(int worker) {
  VDEV_RETURN_IF_ERROR(CheckWorker(worker));
  VDEV_RETURN_IF_ERROR(Usable());
  std::vector<uint64_t> targets(n_, 0);
  targets[worker] = sent_[worker];
  return Await(targets, "SyncWorker", nullptr);
}

absl::Status ControllerCore::SyncAll() {
  VDEV_RETURN_IF_ERROR(Usable());
  return Await(sent_, "SyncWorker", nullptr);
}

absl::Status ControllerCore::CopyTo(const HostTensor& host, const DRef& dref) {
  VDEV_RETURN_IF_ERROR(Usable());
  VDEV_RETURN_IF_ERROR(CheckRef(dref, "CopyToWorker0"));
  VDEV_RETURN_IF_ERROR(CheckShape(host.shape));
  if (host.bytes.size() != static_cast<size_t>(host.NumElements()) * DTypeBytes(host.dtype)) {
    return absl::InvalidArgumentError("CopyToWorker0: the host tensor's bytes do not match its shape and dtype");
  }
  Staging* staging = transport_->staging();
  if (staging != nullptr && host.bytes.size() >= kStagedCopyBytes) {
    // Worker 0 must have read the previous staged copy before this one overwrites it.
    std::vector<uint64_t> targets(n_, 0);
    targets[0] = staged_seq_;
    VDEV_RETURN_IF_ERROR(Await(targets, "CopyToWorker0", nullptr));
    char* area = staging->Map(host.bytes.size());
    if (area != nullptr) {
      std::memcpy(area, host.bytes.data(), host.bytes.size());
      auto [out, seq] = Begin(CommandKind::kCopyTo);
      out.U64(static_cast<uint64_t>(dref.reg_id()));
      out.U8(1);
      out.TensorHeader(host);
      staged_seq_ = seq;
      return SendTo(0, out.Take());
    }
    // Without the mapping (out of memory in /dev/shm) the bytes go through the socket.
  }
  auto [out, seq] = Begin(CommandKind::kCopyTo);
  out.U64(static_cast<uint64_t>(dref.reg_id()));
  out.U8(0);
  out.TensorHeader(host);
  return SendTo(0, out.Take(), absl::string_view(reinterpret_cast<const char*>(host.bytes.data()), host.bytes.size()));
}

absl::Status ControllerCore::CopyFrom(HostTensor* host, const DRef& dref) {
  VDEV_RETURN_IF_ERROR(Usable());
  VDEV_RETURN_IF_ERROR(CheckRef(dref, "CopyFromWorker0"));
  Staging* staging = transport_->staging();
  auto [out, seq] = Begin(CommandKind::kCopyFrom);
  out.U64(static_cast<uint64_t>(dref.reg_id()));
  out.U8(staging != nullptr ? 1 : 0);  // worker 0 may answer through the staging area
  VDEV_RETURN_IF_ERROR(SendTo(0, out.Take()));
  std::vector<uint64_t> seqs(n_, 0);
  seqs[0] = seq;
  return Await(seqs, "CopyFromWorker0", [host, staging](int, Decoder& d) -> absl::Status {
    uint8_t tag = 0;
    if (d.U8(&tag) && static_cast<ValueTag>(tag) == ValueTag::kTensor && d.Tensor(host)) return absl::OkStatus();
    const char* area = nullptr;
    if (static_cast<ValueTag>(tag) == ValueTag::kStagedTensor && staging != nullptr && d.TensorHeader(host) &&
        (area = staging->Map(host->bytes.size())) != nullptr) {
      std::memcpy(host->bytes.data(), area, host->bytes.size());
      return absl::OkStatus();
    }
    return absl::DataLossError("CopyFromWorker0: malformed tensor from worker 0");
  });
}

absl::StatusOr<Value> ControllerCore::DebugGet(int64_t reg, int worker) {
  VDEV_RETURN_IF_ERROR(CheckWorker(worker));
  if (reg < 0) return absl::InvalidArgumentError(absl::StrCat("no register ", reg));
  VDEV_RETURN_IF_ERROR(Usable());
  if (reg >= next_reg_) return Value();  // never allocated: empty on every worker
  auto [out, seq] = Begin(CommandKind::kDebugGet);
  out.U64(static_cast<uint64_t>(reg));
  VDEV_RETURN_IF_ERROR(SendTo(worker, out.Take()));
  std::vector<uint64_t> seqs(n_, 0);
  seqs[worker] = seq;
  absl::StatusOr<Value> value;
  VDEV_RETURN_IF_ERROR(Await(seqs, "DebugGetFromRemote", [&value](int, Decoder& d) -> absl::Status {
    value = DecodeValue(d);
    return absl::IsDataLoss(value.status()) ? value.status() : absl::OkStatus();
  }));
  return value;
}

absl::Status ControllerCore::DebugSet(int64_t reg, const Value& value, int worker) {
  VDEV_RETURN_IF_ERROR(CheckWorker(worker));
  if (reg < 0) return absl::InvalidArgumentError(absl::StrCat("no register ", reg));
  if (std::holds_alternative<DRef>(value.v)) {
    return absl::InvalidArgumentError("DebugSetRegister takes a value, not a DRef");
  }
  if (reg >= next_reg_) {
    return absl::InvalidArgumentError(absl::StrCat("register ", reg, " was never allocated (", next_reg_, " so far)"));
  }
  VDEV_RETURN_IF_ERROR(Usable());
  auto [out, seq] = Begin(CommandKind::kDebugSet);
  out.U64(static_cast<uint64_t>(reg));
  VDEV_RETURN_IF_ERROR(EncodeValue(value, &out));
  return SendTo(worker, out.Take());
}

absl::Status ControllerCore::InitCcl(absl::string_view ccl, const std::vector<int>& device_ids) {
  if (ccl != "host" && ccl != "vdev" && ccl != "nccl") {
    return absl::InvalidArgumentError(
        absl::StrCat("InitCCL: unknown collective library \"", ccl, "\" (expected \"host\", \"vdev\" or \"nccl\")"));
  }
  const int per_group = n_ / options_.num_groups;
  if (!device_ids.empty() && static_cast<int>(device_ids.size()) != per_group) {
    return absl::InvalidArgumentError(
        absl::StrCat("InitCCL: ", device_ids.size(), " device ids for groups of ", per_group, " workers"));
  }
  if (ccl != "host" && !CudaCclBuilt()) {
    return absl::UnimplementedError(
        absl::StrCat("InitCCL(\"", ccl, "\"): this build of vdev has no CUDA runtime (nvcc and NCCL)"));
  }
  if (ccl != "host" && threaded_) {
    return absl::UnimplementedError(absl::StrCat(
        "InitCCL(\"", ccl, "\"): a threaded session supports \"host\" only (CUDA IPC needs one process per GPU)"));
  }
  if (!ccl_session_id_.empty()) return absl::FailedPreconditionError("InitCCL was called before");
  VDEV_RETURN_IF_ERROR(Usable());
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/vdev-ctl-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("InitCCL: mkdtemp ", dir, ": ", std::strerror(errno)));
  }
  ccl_dir_ = dir;
  ccl_session_id_ = NewSessionId();
  absl::StatusOr<Guardian> guardian = Guardian::Start(
      {.workers = transport_->pids(),
       .directory = ccl_dir_,
       .session_id = ccl_session_id_,
       .farewell = "vdev: the controller is gone: its workers were killed and their shared memory removed"});
  if (!guardian.ok()) {
    RemoveDir(ccl_dir_);
    return guardian.status();
  }
  guardian_ = std::move(*guardian);
  std::vector<uint64_t> seqs(n_, 0);
  for (int i = 0; i < n_; ++i) {
    const int local = i % per_group;
    auto [out, seq] = Begin(CommandKind::kInitCcl);
    out.Str(ccl);
    out.I64(ccl == "host" ? -1 : (device_ids.empty() ? local : device_ids[local]));
    out.Str(ccl_dir_);
    out.Str(ccl_session_id_);
    out.I64(absl::ToInt64Milliseconds(options_.timeout));
    VDEV_RETURN_IF_ERROR(SendTo(i, out.Take()));
    seqs[i] = seq;
  }
  absl::Status status = Await(seqs, "InitCCL", nullptr);
  RemoveDir(ccl_dir_);
  return status;
}

absl::Status ControllerCore::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  if (failure_.ok()) Reap();  // a failed session was reaped when it failed
  shut_down_ = true;
  transport_.reset();
  return absl::OkStatus();
}

}  // namespace internal

int64_t DRef::reg_id() const { return handle_ ? handle_->reg() : -1; }

absl::StatusOr<Value> DRef::DebugGetFromRemote(int worker) const {
  auto core = handle_ ? handle_->core() : nullptr;
  if (core == nullptr) return absl::FailedPreconditionError("the DRef's session is gone");
  return core->DebugGet(reg_id(), worker);
}

absl::Status DRef::DebugCopyFrom(int worker, const Value& value) const {
  auto core = handle_ ? handle_->core() : nullptr;
  if (core == nullptr) return absl::FailedPreconditionError("the DRef's session is gone");
  return core->DebugSet(reg_id(), value, worker);
}

absl::StatusOr<std::unique_ptr<ControllerSession>> ControllerSession::Threaded(int n,
                                                                               const ControllerOptions& options) {
  auto core = std::make_shared<internal::ControllerCore>(n, options, /*threaded=*/true);
  VDEV_RETURN_IF_ERROR(core->Start());
  return std::unique_ptr<ControllerSession>(new ControllerSession(std::move(core)));
}

absl::StatusOr<std::unique_ptr<ControllerSession>> ControllerSession::Process(int n, const ControllerOptions& options) {
  auto core = std::make_shared<internal::ControllerCore>(n, options, /*threaded=*/false);
  VDEV_RETURN_IF_ERROR(core->Start());
  return std::unique_ptr<ControllerSession>(new ControllerSession(std::move(core)));
}

ControllerSession::~ControllerSession() { core_->Shutdown().IgnoreError(); }
int ControllerSession::num_workers() const { return core_->num_workers(); }
int ControllerSession::num_groups() const { return core_->options().num_groups; }
absl::StatusOr<RemoteFunc> ControllerSession::GetGlobalFunc(absl::string_view name) {
  return core_->GetGlobalFunc(name);
}
absl::StatusOr<DRef> ControllerSession::CallPackedArgs(const RemoteFunc& func, std::vector<Value> args) {
  return core_->Call(func, args);
}
absl::Status ControllerSession::SyncWorker(int worker) { return core_->Sync(worker); }
absl::Status ControllerSession::SyncAllWorkers() { return core_->SyncAll(); }
absl::Status ControllerSession::CopyToWorker0(const HostTensor& host, const DRef& dref) {
  return core_->CopyTo(host, dref);
}
absl::Status ControllerSession::CopyFromWorker0(HostTensor* host, const DRef& dref) {
  return core_->CopyFrom(host, dref);
}
absl::StatusOr<Value> ControllerSession::DebugGetFromRemote(int64_t reg_id, int worker) {
  return core_->DebugGet(reg_id, worker);
}
absl::Status ControllerSession::DebugSetRegister(int64_t reg_id, const Value& value, int worker) {
  return core_->DebugSet(reg_id, value, worker);
}
absl::Status ControllerSession::InitCCL(absl::string_view ccl, const std::vector<int>& device_ids) {
  return core_->InitCcl(ccl, device_ids);
}
absl::Status ControllerSession::Shutdown() { return core_->Shutdown(); }
std::vector<pid_t> ControllerSession::worker_pids() const { return core_->pids(); }
std::string ControllerSession::ccl_session_id() const { return core_->ccl_session_id(); }
std::string ControllerSession::ccl_rendezvous_dir() const { return core_->ccl_dir(); }

}  // namespace vdev
