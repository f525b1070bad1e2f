// One worker of a controller session: its registers and the loop body that runs its commands.
// Both back ends drive it the same way: the threaded one from a thread, the process one from
// MaybeRunWorker in a worker process.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_WORKER_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_WORKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "internal/ccl.h"
#include "internal/protocol.h"
#include "internal/staging.h"
#include "vdev/controller/worker_function.h"

namespace vdev::internal {

// Shared memory between a worker process and its controller: the command the worker is running,
// so that a worker that dies can be reported with the command it died in.
struct CommandPage {
  std::atomic<uint64_t> started{0};   // seq of the last command begun
  std::atomic<uint64_t> finished{0};  // seq of the last command ended
  std::atomic<uint32_t> length{0};    // of `what`, the last CallPacked begun
  char what[236];
};
inline constexpr size_t kCommandPageBytes = 4096;
static_assert(sizeof(CommandPage) <= kCommandPageBytes);

struct WorkerIdentity {
  int worker_id = 0;
  int num_workers = 1;
  int num_groups = 1;
};

class Worker final : public WorkerContext {
 public:
  // `page` may be null (threaded sessions: a worker cannot die alone there); so may `staging`
  // (large copies then travel in the messages).
  Worker(WorkerIdentity identity, CommandPage* page, Staging* staging = nullptr)
      : identity_(identity), page_(page), staging_(staging) {}
  ~Worker() override;

  // Runs one command. Sets `*reply` (else leaves it empty) when the controller expects an answer
  // or the command failed; returns false after kShutdown.
  bool Handle(absl::string_view message, std::string* reply);
  // A kDone reply for the commands run since the last one (empty when there are none, or after a
  // failure). The back ends send it whenever the worker has run everything it received.
  std::string TakeAck();

  int worker_id() const override { return identity_.worker_id; }
  int num_workers() const override { return identity_.num_workers; }
  int num_groups() const override { return identity_.num_groups; }
  absl::string_view ccl() const override;
  PeerGroup* session() override;
  IPCAllocator* ipc_allocator() override;
  int device_id() const override;
  CudaCommunicator* cuda_communicator() override;

  // For the built-ins: the all-reduce of InitCCL's kind (null before InitCCL); registers in use.
  CclState* ccl_state() { return ccl_.get(); }
  int64_t live_registers() const;

 private:
  absl::Status Run(CommandKind kind, Decoder& in, std::string* reply, std::string* what);
  absl::Status RunCall(Decoder& in, std::string* what);
  absl::Status RunGetFunc(Decoder& in, std::string* what);
  absl::Status RunFree(Decoder& in);
  absl::Status RunCopyTo(Decoder& in);
  absl::Status RunCopyFrom(CommandKind kind, Decoder& in, std::string* reply);
  absl::Status RunInitCcl(Decoder& in, std::string* what);
  absl::Status DecodeArgument(Decoder& in, WorkerValue* value);
  WorkerValue& Register(uint64_t reg);

  WorkerIdentity identity_;
  CommandPage* page_;
  Staging* staging_;
  bool failed_ = false;  // after a failure only kShutdown is obeyed
  uint64_t done_ = 0;    // the highest seq of a command run
  uint64_t acked_ = 0;   // the highest seq reported by TakeAck
  std::vector<WorkerValue> registers_;
  std::unique_ptr<CclState> ccl_;
};

// Encodes a register's value for the controller (an object as its type name).
void EncodeWorkerValue(const WorkerValue& value, Encoder* out);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_WORKER_H_
