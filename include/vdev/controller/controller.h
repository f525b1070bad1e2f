// Controller sessions: one program (the controller) owns N workers and drives them, as TVM Disco's
// `Session` does. (vdev::PeerGroup, vdev/runtime/peer_group.h, is the workers' rendezvous with their
// peers, which the workers of a controller session use among themselves after InitCCL.)
//
// Every call is queued: CallPacked sends the command to every worker and returns a DRef at once;
// each worker runs its commands in order. SyncWorker(i) waits until worker i has run everything sent
// before it. A DRef names one numbered register on every worker, holding that worker's own value; a
// DRef passed as an argument arrives on each worker as that worker's value. The register is freed on
// every worker when the last controller-side copy of the DRef goes (the free travels with the next
// command to each worker), and its number is reused.
//
// Two back ends:
//   Threaded(n): one thread per worker in this process. A worker cannot crash alone: a crash in a
//     worker function takes the controller with it (use a process session to isolate one).
//   Process(n): n worker processes, started by re-running this program (fork + exec of
//     /proc/self/exe) with an environment variable that vdev::MaybeRunWorker recognises: a program
//     that creates process sessions must call MaybeRunWorker(argc, argv) first in main, after
//     registering its worker functions. Commands go over one Unix socket per worker; large copies
//     through a shared-memory area that the controller and worker 0 both map.
// Both reach collectives through InitCCL: "host" (POSIX shared memory and the host all-reduce),
// "vdev" / "nccl" (the CUDA runtime: process sessions in CUDA builds only).
//
// Faults: a worker function that fails (bad name, wrong argument types, an error Status, an
// exception) or a worker process that dies turns into a Status naming the worker, the function and
// the command; it is returned by the call that notices it (every call checks for news from the
// workers, and every wait — SyncWorker, the copies, the debug reads — is bounded by
// ControllerOptions::timeout). The session then refuses all calls with that Status and has already
// reaped its workers. Worker processes die with the controller (PR_SET_PDEATHSIG, and end of file on
// their socket), and no rendezvous directory or shared-memory segment outlives a session: InitCCL
// forks a guardian process that removes them should the controller be killed outright (SIGKILL).
//
// Not thread-safe: one thread drives a session (the one that created it, for a process session: the
// workers' parent-death signal fires when the creating thread exits).
//
// Example:
//   int main(int argc, char** argv) {
//     vdev::MaybeRunWorker(argc, argv);  // in a worker process: runs commands, never returns
//     auto session = vdev::ControllerSession::Process(4, {});
//     vdev::RemoteFunc id = *(*session)->GetGlobalFunc("vdev.worker.id");
//     vdev::DRef ids = *(*session)->CallPacked(id);
//     absl::Status synced = (*session)->SyncWorker(0);
//     absl::StatusOr<vdev::Value> three = ids.DebugGetFromRemote(3);  // int64_t{3}
//   }
#ifndef VDEV_CONTROLLER_H_
#define VDEV_CONTROLLER_H_

#include <sys/types.h>

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vdev/kernels/tensor.h"

namespace vdev {

namespace internal {
class ControllerCore;
class RegisterHandle;
}  // namespace internal

struct Value;

// A register on every worker of one session (see the top of this file). Copies share the register.
class DRef {
 public:
  DRef() = default;  // names no register
  bool valid() const { return handle_ != nullptr; }
  int64_t reg_id() const;  // -1 when !valid()

  // Forwards to the session's DebugGetFromRemote / DebugSetRegister.
  absl::StatusOr<Value> DebugGetFromRemote(int worker) const;
  absl::Status DebugCopyFrom(int worker, const Value& value) const;

 private:
  friend class internal::ControllerCore;
  explicit DRef(std::shared_ptr<internal::RegisterHandle> handle) : handle_(std::move(handle)) {}
  std::shared_ptr<internal::RegisterHandle> handle_;
};

// A controller-side value: an argument of CallPacked, or what DebugGetFromRemote reads.
// Integers of any width become int64_t, floating-point numbers double; strings, shapes (Shape),
// host tensors (copied to every worker) and DRefs (each worker sees its own value) are passed as
// they are. A default Value is none.
struct Value {
  using Variant = std::variant<std::monostate, int64_t, double, std::string, Shape, HostTensor, DRef>;
  Variant v;

  Value() = default;
  template <std::integral T>
  Value(T x) : v(static_cast<int64_t>(x)) {}  // NOLINT: implicit, so CallPacked(f, 1, 2.5, "a") works
  template <std::floating_point T>
  Value(T x) : v(static_cast<double>(x)) {}          // NOLINT
  Value(const char* s) : v(std::string(s)) {}        // NOLINT
  Value(std::string s) : v(std::move(s)) {}          // NOLINT
  Value(absl::string_view s) : v(std::string(s)) {}  // NOLINT
  Value(Shape s) : v(std::move(s)) {}                // NOLINT
  Value(HostTensor t) : v(std::move(t)) {}           // NOLINT
  Value(DRef r) : v(std::move(r)) {}                 // NOLINT
};

// A worker function looked up by name on every worker (a DRef to it, as in Disco).
struct RemoteFunc {
  DRef ref;
  std::string name;
};

// The least time process workers are given to start (see ControllerOptions::timeout).
inline constexpr absl::Duration kWorkerStartTimeout = absl::Seconds(60);

struct ControllerOptions {
  // Groups of equal size, one per host (Disco's num_groups); worker i belongs to group
  // i / (n / num_groups). This implementation starts every group on this host.
  int num_groups = 1;
  // Bound on every wait for a worker (SyncWorker, copies, debug reads, a full socket) and on the
  // workers' own collectives after InitCCL. A worker that exceeds it fails the session. The
  // workers' start is bounded by the larger of this and kWorkerStartTimeout: starting a process
  // takes seconds on a loaded machine, whatever bound a caller chose for its steps.
  absl::Duration timeout = absl::Seconds(120);
  // Process sessions: a worker found stopped (state T in /proc/PID/stat: SIGSTOP, SIGTSTP) this
  // long while the controller waits for any worker is killed and fails the session, named with its
  // pid and command, however long `timeout` is. A debugger's tracing stop is not counted.
  absl::Duration stopped_limit = absl::Seconds(2);
  // Process sessions: the program the workers run; empty: this program (/proc/self/exe). It must
  // call vdev::MaybeRunWorker first in main.
  std::string program;
};

class ControllerSession {
 public:
  // 1 <= n <= kMaxWorkers (vdev/runtime/peer_group.h), divisible by options.num_groups.
  static absl::StatusOr<std::unique_ptr<ControllerSession>> Threaded(int n, const ControllerOptions& options);
  // Returns once every worker process has started (or an error naming the one that did not).
  static absl::StatusOr<std::unique_ptr<ControllerSession>> Process(int n, const ControllerOptions& options);

  ~ControllerSession();  // Shutdown()
  ControllerSession(const ControllerSession&) = delete;
  ControllerSession& operator=(const ControllerSession&) = delete;

  int num_workers() const;
  int num_groups() const;

  // Looks `name` up on every worker. An unknown name is an error of the workers (the controller's
  // registry need not match theirs), reported like any other, at the next call that waits.
  absl::StatusOr<RemoteFunc> GetGlobalFunc(absl::string_view name);

  // Queues func(args...) on every worker and returns the DRef of its results at once.
  absl::StatusOr<DRef> CallPackedArgs(const RemoteFunc& func, std::vector<Value> args);
  template <typename... Args>
  absl::StatusOr<DRef> CallPacked(const RemoteFunc& func, Args&&... args) {
    return CallPackedArgs(func, std::vector<Value>{Value(std::forward<Args>(args))...});
  }

  // Waits until worker i has run every command sent before.
  absl::Status SyncWorker(int worker);
  // SyncWorker for every worker, the waits overlapped.
  absl::Status SyncAllWorkers();

  // Queues a copy of `host` into worker 0's register `dref`, which afterwards holds a tensor equal
  // to `host` (its buffer is reused when the byte size matches).
  absl::Status CopyToWorker0(const HostTensor& host, const DRef& dref);
  // Waits for worker 0's register `dref` (a tensor) and copies it, bit for bit, into `*host`.
  absl::Status CopyFromWorker0(HostTensor* host, const DRef& dref);

  // Reads / writes register `reg_id` of one worker (a read waits for it). An empty register (or one
  // never allocated) reads as none; a worker object cannot leave its worker (Unimplemented, the
  // session goes on). Writing a DRef, or a register no DRef ever had, is InvalidArgument.
  absl::StatusOr<Value> DebugGetFromRemote(int64_t reg_id, int worker);
  absl::Status DebugSetRegister(int64_t reg_id, const Value& value, int worker);

  // Sets up the collectives among the workers and waits until every worker has: "host" in any
  // session; "vdev" (vdev's kernels, NCCL beyond them) and "nccl" in process sessions of CUDA builds
  // (Unimplemented otherwise). `device_ids[j]` is the GPU of the workers with local id j (empty: j).
  // Once per session.
  absl::Status InitCCL(absl::string_view ccl, const std::vector<int>& device_ids);

  // Stops the workers (they finish what they were sent first, within the timeout; stragglers are
  // killed) and removes the session's rendezvous directory and shared-memory segments. Idempotent;
  // afterwards every call fails with FailedPrecondition.
  absl::Status Shutdown();

  // Diagnostics (tests check that nothing outlives the session): the worker processes (empty for a
  // threaded session), and the id and directory InitCCL gave the workers' vdev::PeerGroup (empty before).
  std::vector<pid_t> worker_pids() const;
  std::string ccl_session_id() const;
  std::string ccl_rendezvous_dir() const;

 private:
  explicit ControllerSession(std::shared_ptr<internal::ControllerCore> core) : core_(std::move(core)) {}
  std::shared_ptr<internal::ControllerCore> core_;
};

// In a worker process started by a process session (recognised by its environment), runs the
// worker until the controller shuts it down or goes away, then exits the process. Elsewhere it
// returns at once. Call it first in main, after registering worker functions.
void MaybeRunWorker(int argc, char** argv);

}  // namespace vdev

#endif  // VDEV_CONTROLLER_H_
