// Helpers shared by the controller-session tests: both back ends, the test's worker functions, and
// checks that nothing outlives a session.
#ifndef VDEV_TESTS_CONTROLLER_CONTROLLER_TEST_UTIL_H_
#define VDEV_TESTS_CONTROLLER_CONTROLLER_TEST_UTIL_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/worker_harness.h"  // LeftoverSegments
#include "vdev/controller/controller.h"

namespace vdev::testing {

enum class Backend { kThreaded, kProcess };
std::string BackendName(Backend backend);

// A session with a timeout short enough for tests that expect failures.
absl::StatusOr<std::unique_ptr<ControllerSession>> MakeSession(Backend backend, int n, int num_groups = 1);

// True while `pid` exists and is not a zombie.
bool ProcessAlive(pid_t pid);

bool PathExists(const std::string& path);

// A gate a worker function waits at until the test opens it (a FIFO in a private directory), for
// scenarios that need a worker busy while the controller acts: `test.gate_on(W, gate.path())`
// blocks worker W until Open(). An event, not a sleep: the scenario holds on any machine.
class WorkerGate {
 public:
  WorkerGate();
  ~WorkerGate();
  WorkerGate(const WorkerGate&) = delete;
  WorkerGate& operator=(const WorkerGate&) = delete;
  const std::string& path() const { return path_; }
  // Lets the waiting worker go on (blocks until it has reached the gate).
  void Open();

 private:
  std::string dir_, path_;
};

}  // namespace vdev::testing

#endif  // VDEV_TESTS_CONTROLLER_CONTROLLER_TEST_UTIL_H_
