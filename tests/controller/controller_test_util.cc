// The controller tests' helpers and worker functions, and their main: worker processes re-run this
// binary, so main hands them to vdev::MaybeRunWorker before GoogleTest sees them.
#include "controller/controller_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "vdev/controller/worker_function.h"
#include "vdev/support/status_macros.h"

namespace vdev::testing {

std::string BackendName(Backend backend) { return backend == Backend::kThreaded ? "Threaded" : "Process"; }

absl::StatusOr<std::unique_ptr<ControllerSession>> MakeSession(Backend backend, int n, int num_groups) {
  ControllerOptions options;
  options.num_groups = num_groups;
  options.timeout = absl::Seconds(20);
  return backend == Backend::kThreaded ? ControllerSession::Threaded(n, options)
                                       : ControllerSession::Process(n, options);
}

bool ProcessAlive(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

bool PathExists(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0;
}

WorkerGate::WorkerGate() : dir_(MakePrivateDir()), path_(dir_ + "/gate") {
  if (dir_.empty() || mkfifo(path_.c_str(), 0600) != 0) ADD_FAILURE() << "cannot make the FIFO " << path_;
}

WorkerGate::~WorkerGate() {
  unlink(path_.c_str());
  rmdir(dir_.c_str());
}

void WorkerGate::Open() {
  const int fd = open(path_.c_str(), O_WRONLY);  // blocks until the worker waits at the gate
  if (fd < 0) {
    ADD_FAILURE() << "cannot open the FIFO " << path_;
    return;
  }
  close(fd);  // the worker's read ends
}

namespace {

using Result = absl::StatusOr<WorkerValue>;

class Counter final : public WorkerObject {
 public:
  std::string TypeName() const override { return "test.counter"; }
  int64_t value = 0;
};

// Fails, throws or aborts on the worker named by argument 0 only.
bool Chosen(WorkerContext& ctx, const WorkerArgs& args) {
  absl::StatusOr<int64_t> who = args.Int(0);
  return who.ok() && *who == ctx.worker_id();
}

VDEV_REGISTER_WORKER_FUNCTION("test.add", [](WorkerContext&, const WorkerArgs& args) -> Result {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(2));
  VDEV_ASSIGN_OR_RETURN(int64_t a, args.Int(0));
  VDEV_ASSIGN_OR_RETURN(int64_t b, args.Int(1));
  return a + b;
});
VDEV_REGISTER_WORKER_FUNCTION("test.next_worker", [](WorkerContext& ctx, const WorkerArgs&) -> Result {
  return int64_t{(ctx.worker_id() + 1) % ctx.num_workers()};
});
VDEV_REGISTER_WORKER_FUNCTION("test.echo", [](WorkerContext&, const WorkerArgs& args) -> Result {
  VDEV_RETURN_IF_ERROR(args.ExpectCount(1));
  return args[0];
});
VDEV_REGISTER_WORKER_FUNCTION("test.counter.new",
                              [](WorkerContext&, const WorkerArgs&) -> Result { return std::make_shared<Counter>(); });
VDEV_REGISTER_WORKER_FUNCTION("test.counter.add", [](WorkerContext&, const WorkerArgs& args) -> Result {
  VDEV_ASSIGN_OR_RETURN(auto counter, args.Object<Counter>(0, "test.counter"));
  VDEV_ASSIGN_OR_RETURN(int64_t k, args.Int(1));
  counter->value += k;
  return WorkerValue();
});
VDEV_REGISTER_WORKER_FUNCTION("test.counter.get", [](WorkerContext&, const WorkerArgs& args) -> Result {
  VDEV_ASSIGN_OR_RETURN(auto counter, args.Object<Counter>(0, "test.counter"));
  return counter->value;
});
VDEV_REGISTER_WORKER_FUNCTION("test.fail_on", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
  if (Chosen(ctx, args)) return absl::FailedPreconditionError("asked to fail");
  return WorkerValue();
});
VDEV_REGISTER_WORKER_FUNCTION("test.throw_on", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
  if (Chosen(ctx, args)) throw std::runtime_error("asked to throw");
  return WorkerValue();
});
VDEV_REGISTER_WORKER_FUNCTION("test.abort_on", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
  if (Chosen(ctx, args)) std::abort();
  return WorkerValue();
});
// test.gate_on(W, PATH): worker W waits until the WorkerGate at PATH opens; the others go on.
VDEV_REGISTER_WORKER_FUNCTION("test.gate_on", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
  if (!Chosen(ctx, args)) return WorkerValue();
  VDEV_ASSIGN_OR_RETURN(std::string path, args.String(1));
  const int fd = open(path.c_str(), O_RDONLY);  // blocks until the gate's writer opens
  if (fd < 0) return absl::InternalError(absl::StrCat("test.gate_on: cannot open ", path));
  char byte;
  while (read(fd, &byte, 1) > 0) {
  }
  close(fd);
  return WorkerValue();
});
// (worker, fifo, ms): the chosen worker writes one byte to the FIFO (an event the test waits for:
// it is inside this command now), then sleeps ms; the others return at once.
VDEV_REGISTER_WORKER_FUNCTION("test.announce_then_sleep", [](WorkerContext& ctx, const WorkerArgs& args) -> Result {
  if (!Chosen(ctx, args)) return WorkerValue();
  VDEV_ASSIGN_OR_RETURN(std::string fifo, args.String(1));
  VDEV_ASSIGN_OR_RETURN(int64_t ms, args.Int(2));
  std::ofstream(fifo) << 'x';
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return WorkerValue();
});
VDEV_REGISTER_WORKER_FUNCTION("test.sleep_ms", [](WorkerContext&, const WorkerArgs& args) -> Result {
  VDEV_ASSIGN_OR_RETURN(int64_t ms, args.Int(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return WorkerValue();
});

}  // namespace
}  // namespace vdev::testing

int main(int argc, char** argv) {
  vdev::MaybeRunWorker(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
