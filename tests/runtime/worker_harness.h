// Runs a test body in N real worker processes (fork), each with its own PeerGroup, and collects how
// each one ended: its exit status and the message of the absl::Status it returned.
#ifndef VDEV_TESTS_RUNTIME_WORKER_HARNESS_H_
#define VDEV_TESTS_RUNTIME_WORKER_HARNESS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::testing {

struct WorkerResult {
  bool exited = false;  // false: killed by a signal
  int exit_code = -1;   // 0: the body returned OK
  int signal = 0;
  std::string message;  // the body's status message when it failed
  double seconds = 0;   // the body's own measure, if it reported one (see ReportSeconds)
};

// VDEV_HARNESS_TIMEOUT_S, when set, replaces the durations a test left at their defaults with that
// many seconds (kill_after with four times it), for runs under a tool that slows every process down
// (compute-sanitizer): a fixed 5 s then ends a rendezvous before a slow worker arrives.
// The defaults are far above what any step takes on a loaded machine: they end only runs that hang.
// A test that provokes a timeout sets its own bound with PeerGroup::set_timeout after the setup
// (rendezvous, allocation), which then keeps the generous one.
struct HarnessOptions {
  absl::Duration timeout = absl::Seconds(30);      // the sessions' peer timeout
  absl::Duration kill_after = absl::Seconds(120);  // the parent kills workers still running then
};

// A signal from some workers to others, for tests that need one worker to act only after another
// has (events, not sleeps). Made before RunWorkers, so that every worker inherits it (a pipe).
class WorkerSignal {
 public:
  WorkerSignal();
  ~WorkerSignal();
  WorkerSignal(const WorkerSignal&) = delete;
  WorkerSignal& operator=(const WorkerSignal&) = delete;
  // Counts one notification.
  void Notify();
  // Blocks until `count` notifications have come (the harness's kill_after ends a wait for a
  // worker that died before notifying).
  void Wait(int count = 1);

 private:
  int fds_[2];
};

// A unique session id for a test; segments are then named /dev/shm/vdev-<id>-*.
std::string UniqueSessionId();

// Forks `n` workers; worker r runs body(session) in a session of rank r. `session_id` names the
// session (see UniqueSessionId).
std::vector<WorkerResult> RunWorkers(int n, const std::string& session_id,
                                     const std::function<absl::Status(PeerGroup&)>& body,
                                     const HarnessOptions& options = {});

// Called inside a body: reports a duration to the parent (WorkerResult::seconds).
void ReportSeconds(double seconds);

// Names of /dev/shm entries of this session (should be none once the workers are gone).
std::vector<std::string> LeftoverSegments(const std::string& session_id);

// Expects every worker to have exited with status 0, naming each one that did not.
void ExpectAllOk(const std::vector<WorkerResult>& results);

// Makes a fresh 0700 directory.
std::string MakePrivateDir();

}  // namespace vdev::testing

#endif  // VDEV_TESTS_RUNTIME_WORKER_HARNESS_H_
