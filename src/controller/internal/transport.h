// How a controller session reaches its workers: threads in this process or worker processes.
// Both carry the byte strings of internal/protocol.h, in order, each way.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_TRANSPORT_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_TRANSPORT_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "internal/worker.h"

namespace vdev::internal {

struct Incoming {
  int worker = -1;
  bool exited = false;   // the worker is gone; `message` says how (and in which command)
  std::string message;   // otherwise: a reply
  bool stopped = false;  // exited: killed by the transport after it stayed stopped (SIGSTOP)
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Queues `messages` for `worker`, in order, with `tail` appended to the last one (large payloads
  // go out from the caller's memory without a copy into the message). An error means the worker is
  // gone, or did not take them before `deadline` (its queue was full).
  virtual absl::Status Send(int worker, std::vector<std::string> messages, absl::Time deadline,
                            absl::string_view tail = {}) = 0;
  // The next reply or exit from any worker, or nullopt once `deadline` passed (a past deadline polls).
  virtual std::optional<Incoming> Receive(absl::Time deadline) = 0;
  // After kShutdown was sent to every worker: waits until they end or `deadline` passes; then kills
  // (processes) or abandons (threads) the rest. Idempotent.
  virtual void Stop(absl::Time deadline) = 0;
  virtual std::vector<pid_t> pids() const = 0;
  // "worker I" with what the transport knows of it (a process's pid, state and current command).
  virtual std::string Describe(int worker) const { return absl::StrCat("worker ", worker); }
  // The area shared with worker 0 for large copies; null where copies travel in the messages.
  virtual Staging* staging() { return nullptr; }
};

absl::StatusOr<std::unique_ptr<Transport>> StartThreads(int num_workers, int num_groups);
// Starts the worker processes and waits (until `deadline`) for each one's kHello. A worker found
// stopped (SIGSTOP) for `stopped_limit` while the controller waits is killed and reported as exited.
absl::StatusOr<std::unique_ptr<Transport>> StartProcesses(int num_workers, int num_groups, const std::string& program,
                                                          absl::Time deadline, absl::Duration stopped_limit);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_TRANSPORT_H_
