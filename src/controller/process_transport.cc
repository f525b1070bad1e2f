// The process back end: worker processes that re-run this program (fork + exec), each talking to
// the controller over its own Unix stream socket in frames of [length u64][message].
//
// Why exec rather than fork alone: a forked copy of a multi-threaded controller inherits locks held
// by threads that do not exist in it, and a CUDA context that it cannot use; a fresh program has
// neither. The price is that the program must call vdev::MaybeRunWorker first in main.
//
// Each worker also shares a page (memfd) with the controller where it notes the command it runs, so
// a worker that dies is reported with the command it died in. Workers die with the controller:
// PR_SET_PDEATHSIG(SIGKILL) while busy, end of file on the socket while idle.
//
// Liveness: while the controller waits for replies it reads each worker's state in /proc/PID/stat
// every quarter second. A worker found stopped (state T: SIGSTOP, SIGTSTP) throughout the stopped
// limit can make no progress, and its peers wait for it in their collectives however long the
// timeout: it is killed and reported as the worker that failed, with its pid, its state and its
// command. A debugger's tracing stop (state t) is left alone, and a worker that is merely slow (an
// honest long kernel) is bounded only by the timeout.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "internal/frame_reader.h"
#include "internal/transport.h"
#include "vdev/controller/controller.h"

extern char** environ;

namespace vdev::internal {
namespace {

// FD,PAGE_FD,WORKER,NUM_WORKERS,NUM_GROUPS,PARENT_PID,STAGING_FD (-1 but for worker 0)
constexpr char kWorkerEnv[] = "VDEV_CONTROLLER_WORKER";

// How often a waiting controller looks at its workers' process states.
constexpr absl::Duration kLivenessPeriod = absl::Milliseconds(250);

// The state letter of /proc/PID/stat (R running, S sleeping, D disk wait, T stopped, t tracing
// stop, Z zombie, …), or '?' when it cannot be read. The command name before it is in parentheses
// and may itself hold spaces and parentheses: the state follows the last ')'.
char ProcessState(pid_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream text;
  text << file.rdbuf();
  const std::string stat = text.str();
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '?';
  return stat[paren + 2];
}

// For poll(): -1 (no limit) for an infinite deadline.
int RemainingMs(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return -1;
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left), 1 << 30) + 1);
}

// Sends `messages` as consecutive frames, in one system call when the socket takes them.
// `tail` is appended to the last frame.
absl::Status SendFrames(int fd, absl::Span<const std::string> messages, absl::Time deadline,
                        absl::string_view tail = {}) {
  std::vector<uint64_t> lengths(messages.size());
  std::vector<iovec> parts;
  for (size_t i = 0; i < messages.size(); ++i) {
    lengths[i] = messages[i].size() + (i + 1 == messages.size() ? tail.size() : 0);
    if (lengths[i] > kMaxFrameBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("a message of ", lengths[i], " bytes is over the session channel's limit of 2^36 bytes"));
    }
    parts.push_back({&lengths[i], sizeof(uint64_t)});
    if (!messages[i].empty()) parts.push_back({const_cast<char*>(messages[i].data()), messages[i].size()});
  }
  if (!tail.empty()) parts.push_back({const_cast<char*>(tail.data()), tail.size()});
  size_t first = 0;  // parts[first..] are still to send (the first one perhaps partly)
  while (first < parts.size()) {
    msghdr msg{};
    msg.msg_iov = &parts[first];
    msg.msg_iovlen = std::min<size_t>(parts.size() - first, IOV_MAX);
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      size_t sent = static_cast<size_t>(n);
      while (first < parts.size() && sent >= parts[first].iov_len) sent -= parts[first++].iov_len;
      if (sent > 0) {
        parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + sent;
        parts[first].iov_len -= sent;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      const int ms = RemainingMs(deadline);
      if (ms == 0) return absl::DeadlineExceededError("the worker did not take its commands in time");
      poll(&pfd, 1, ms);
      continue;
    }
    return absl::UnavailableError(absl::StrCat("the connection is lost: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SendFrame(int fd, std::string message, absl::Time deadline) {
  return SendFrames(fd, absl::MakeConstSpan(&message, 1), deadline);
}

std::string DescribeEnd(int status) {
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  return "ended";
}

// Waits for `pid` to exit until `deadline`, then kills it; returns its wait status.
int Reap(pid_t pid, absl::Time deadline) {
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return status;
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  CommandPage* page = nullptr;
  FrameReader reader;
  bool gone = false;                                  // end of file seen; reaped
  absl::Time stopped_since = absl::InfiniteFuture();  // first seen stopped, in the present stop
};

class ProcessTransport final : public Transport {
 public:
  ProcessTransport(int n, int groups, absl::Duration stopped_limit)
      : n_(n), groups_(groups), stopped_limit_(stopped_limit), children_(n) {}
  ~ProcessTransport() override { Stop(absl::Now()); }

  absl::Status Spawn(const std::string& program);
  absl::Status AwaitHellos(const std::string& program, absl::Time deadline);

  absl::Status Send(int worker, std::vector<std::string> messages, absl::Time deadline,
                    absl::string_view tail) override {
    Child& c = children_[worker];
    if (c.gone) return absl::UnavailableError("the worker process has ended");
    return SendFrames(c.fd, messages, deadline, tail);
  }

  std::optional<Incoming> Receive(absl::Time deadline) override;
  void Stop(absl::Time deadline) override;
  Staging* staging() override { return staging_.get(); }
  std::vector<pid_t> pids() const override {
    std::vector<pid_t> out;
    for (const Child& c : children_) out.push_back(c.pid);
    return out;
  }
  std::string Describe(int worker) const override {
    const Child& c = children_[worker];
    if (c.gone) return absl::StrCat("worker ", worker, " (pid ", c.pid, ", ended)");
    std::string command = CommandOf(c);
    return absl::StrCat("worker ", worker, " (pid ", c.pid, ", state ", std::string(1, ProcessState(c.pid)), ") ",
                        command.empty() ? "idle" : absl::StrCat("in ", command));
  }

 private:
  // Reaps a worker whose socket closed and says how it ended and in which command.
  std::string Bury(int worker);
  // "command #N (what)" while the worker runs a command; empty between commands.
  static std::string CommandOf(const Child& c);
  // A worker stopped throughout the stopped limit, killed and reaped; nullopt when none is. Looks
  // at most once per kLivenessPeriod.
  std::optional<Incoming> KillStopped();

  int n_;
  int groups_;
  absl::Duration stopped_limit_;
  absl::Time next_liveness_check_ = absl::InfinitePast();
  std::vector<Child> children_;
  std::unique_ptr<Staging> staging_;  // shared with worker 0
  size_t next_poll_ = 0;              // round-robin start, so one chatty worker cannot hide another
  bool stopped_ = false;
};

absl::Status ProcessTransport::Spawn(const std::string& program) {
  const pid_t parent = getpid();
  const int staging_fd = memfd_create("vdev-staging", MFD_CLOEXEC);
  if (staging_fd < 0) return absl::InternalError(absl::StrCat("the staging area: ", std::strerror(errno)));
  staging_ = std::make_unique<Staging>(staging_fd);
  for (int i = 0; i < n_; ++i) {
    Child& c = children_[i];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
    }
    int page_fd = memfd_create("vdev-worker-page", MFD_CLOEXEC);
    void* page = MAP_FAILED;
    if (page_fd >= 0 && ftruncate(page_fd, kCommandPageBytes) == 0) {
      page = mmap(nullptr, kCommandPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
    }
    if (page == MAP_FAILED) {
      int saved = errno;
      close(sv[0]);
      close(sv[1]);
      if (page_fd >= 0) close(page_fd);
      return absl::InternalError(absl::StrCat("the worker's command page: ", std::strerror(saved)));
    }
    c.fd = sv[0];
    c.page = new (page) CommandPage();
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    const int staging = i == 0 ? staging_fd : -1;
    std::string var =
        absl::StrCat(kWorkerEnv, "=", sv[1], ",", page_fd, ",", i, ",", n_, ",", groups_, ",", parent, ",", staging);
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, absl::StrCat(kWorkerEnv, "="))) envp.push_back(*e);
    }
    envp.push_back(var.data());
    envp.push_back(nullptr);
    std::string arg0 = absl::StrCat("vdev-worker-", i);
    char* argv[] = {arg0.data(), nullptr};
    const char* path = program.c_str();
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the controller died before the line above
      fcntl(sv[1], F_SETFD, 0);
      fcntl(page_fd, F_SETFD, 0);
      if (staging >= 0) fcntl(staging, F_SETFD, 0);
      execve(path, argv, envp.data());
      const char msg[] = "vdev: cannot start a worker process (execve failed)\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
      (void)ignored;
      _exit(127);
    }
    int saved = errno;
    close(sv[1]);
    close(page_fd);
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(saved)));
    c.pid = pid;
  }
  return absl::OkStatus();
}

absl::Status ProcessTransport::AwaitHellos(const std::string& program, absl::Time deadline) {
  std::vector<bool> ready(n_, false);
  int waiting = n_;
  while (waiting > 0) {
    std::optional<Incoming> in = Receive(deadline);
    if (!in) {
      for (int i = 0; i < n_; ++i) {
        if (!ready[i]) {
          return absl::DeadlineExceededError(absl::StrCat("worker ", i, " (pid ", children_[i].pid,
                                                          ") did not start in time: does ", program,
                                                          " call vdev::MaybeRunWorker(argc, argv) first in main?"));
        }
      }
      return absl::InternalError("the workers' start ended without their hellos");
    }
    if (in->exited && in->stopped) return absl::UnavailableError(absl::StrCat(in->message, " before it started"));
    if (in->exited) {
      return absl::UnavailableError(absl::StrCat(in->message, " before it started: does ", program,
                                                 " call vdev::MaybeRunWorker(argc, argv) first in main?"));
    }
    if (!in->message.empty() && static_cast<ReplyKind>(in->message[0]) == ReplyKind::kHello && !ready[in->worker]) {
      ready[in->worker] = true;
      --waiting;
    }
  }
  return absl::OkStatus();
}

std::optional<Incoming> ProcessTransport::Receive(absl::Time deadline) {
  while (true) {
    for (int k = 0; k < n_; ++k) {
      int i = static_cast<int>((next_poll_ + k) % n_);
      absl::string_view message;
      if (children_[i].reader.Next(&message)) {
        next_poll_ = i + 1;
        return Incoming{i, false, std::string(message)};
      }
    }
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int i = 0; i < n_; ++i) {
      if (children_[i].gone) continue;
      fds.push_back({children_[i].fd, POLLIN, 0});
      who.push_back(i);
    }
    if (fds.empty()) return std::nullopt;
    if (std::optional<Incoming> stopped = KillStopped()) return stopped;
    // Sleep until a reply, the deadline or the next look at the workers' states.
    const absl::Time wake = std::min(deadline, next_liveness_check_);
    int ready = poll(fds.data(), fds.size(), RemainingMs(wake));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && absl::Now() < deadline) continue;
    if (ready <= 0) return std::nullopt;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const int i = who[k];
      ssize_t got = children_[i].reader.Fill(children_[i].fd, MSG_DONTWAIT);
      if (got > 0 || (got < 0 && errno == EAGAIN)) continue;
      if (got < 0 && errno == EMSGSIZE) {  // its stream is corrupt: nothing more from it can be trusted
        kill(children_[i].pid, SIGKILL);
        return Incoming{i, true, absl::StrCat(Bury(i), " after it sent a frame longer than 2^36 bytes")};
      }
      // Replies it sent before it ended come first.
      absl::string_view message;
      if (children_[i].reader.Next(&message)) return Incoming{i, false, std::string(message)};
      return Incoming{i, true, Bury(i)};
    }
  }
}

std::string ProcessTransport::CommandOf(const Child& c) {
  const uint64_t started = c.page->started.load(std::memory_order_acquire);
  const uint64_t finished = c.page->finished.load(std::memory_order_acquire);
  if (started == 0 || started == finished) return "";
  std::string text = absl::StrCat("command #", started);
  const uint32_t length = c.page->length.load(std::memory_order_acquire);
  if (length > 0) absl::StrAppend(&text, " (", absl::string_view(c.page->what, length), ")");
  return text;
}

std::string ProcessTransport::Bury(int worker) {
  Child& c = children_[worker];
  c.gone = true;
  close(c.fd);
  c.fd = -1;
  const std::string command = CommandOf(c);
  // The socket closes when the process exits; give the exit a moment to be reapable, then insist.
  const int status = Reap(c.pid, absl::Now() + absl::Seconds(2));
  std::string text = absl::StrCat("worker ", worker, " (pid ", c.pid, ") ", DescribeEnd(status));
  if (!command.empty()) absl::StrAppend(&text, " during ", command);
  return text;
}

std::optional<Incoming> ProcessTransport::KillStopped() {
  const absl::Time now = absl::Now();
  if (now < next_liveness_check_) return std::nullopt;
  next_liveness_check_ = now + kLivenessPeriod;
  for (int i = 0; i < n_; ++i) {
    Child& c = children_[i];
    if (c.gone) continue;
    if (ProcessState(c.pid) != 'T') {
      c.stopped_since = absl::InfiniteFuture();
      continue;
    }
    c.stopped_since = std::min(c.stopped_since, now);
    if (now - c.stopped_since < stopped_limit_) continue;
    const std::string command = CommandOf(c);
    std::string text =
        absl::StrCat("worker ", i, " (pid ", c.pid, ") was stopped (state T: SIGSTOP or SIGTSTP) for ",
                     absl::FormatDuration(absl::Trunc(now - c.stopped_since, absl::Milliseconds(100))),
                     " while the controller waited, ",
                     command.empty() ? "between commands" : absl::StrCat("in ", command), "; it was killed");
    kill(c.pid, SIGKILL);
    c.gone = true;
    close(c.fd);
    c.fd = -1;
    waitpid(c.pid, nullptr, 0);
    return Incoming{i, true, std::move(text), true};
  }
  return std::nullopt;
}

void ProcessTransport::Stop(absl::Time deadline) {
  if (stopped_) return;
  stopped_ = true;
  // Live workers end on kShutdown (sent by the caller) or on end of file, which closing says.
  for (Child& c : children_) {
    if (c.fd >= 0) shutdown(c.fd, SHUT_WR);
  }
  for (Child& c : children_) {
    if (c.pid <= 0) continue;
    if (!c.gone) {
      Reap(c.pid, deadline);
      c.gone = true;
    }
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }
  for (Child& c : children_) {
    if (c.page != nullptr) munmap(c.page, kCommandPageBytes);
    c.page = nullptr;
  }
}

// The worker's side of the socket: runs commands until kShutdown or end of file.
int ServeController(int fd, CommandPage* page, Staging* staging, WorkerIdentity identity) {
  Worker worker(identity, page, staging);
  Encoder hello;
  hello.U8(static_cast<uint8_t>(ReplyKind::kHello));
  hello.U64(0);
  if (!SendFrame(fd, hello.Take(), absl::InfiniteFuture()).ok()) return 1;
  FrameReader reader;
  absl::string_view message;
  std::string reply;
  while (true) {
    while (reader.Next(&message)) {
      if (!worker.Handle(message, &reply)) return 0;
      if (!reply.empty() && !SendFrame(fd, reply, absl::InfiniteFuture()).ok()) return 1;
    }
    // Everything received has run: say so before waiting for more (what SyncWorker waits for).
    if (std::string ack = worker.TakeAck(); !ack.empty() && !SendFrame(fd, ack, absl::InfiniteFuture()).ok()) {
      return 1;
    }
    ssize_t got = reader.Fill(fd, 0);
    if (got == 0) return 0;  // the controller is gone
    if (got < 0 && errno != EAGAIN) return 1;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> StartProcesses(int num_workers, int num_groups, const std::string& program,
                                                          absl::Time deadline, absl::Duration stopped_limit) {
  if (const char* nested = std::getenv(kWorkerEnv); nested != nullptr) {
    return absl::FailedPreconditionError(
        "this process is a session's worker whose main did not call vdev::MaybeRunWorker first; it may "
        "not start workers of its own");
  }
  const std::string path = program.empty() ? "/proc/self/exe" : program;
  auto transport = std::make_unique<ProcessTransport>(num_workers, num_groups, stopped_limit);
  absl::Status status = transport->Spawn(path);
  if (status.ok()) status = transport->AwaitHellos(path, deadline);
  if (!status.ok()) return status;  // the destructor kills and reaps whatever started
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace vdev::internal

namespace vdev {

void MaybeRunWorker(int argc, char** argv) {
  (void)argc;
  (void)argv;
  const char* spec = std::getenv(internal::kWorkerEnv);
  if (spec == nullptr) return;
  std::vector<std::string> parts = absl::StrSplit(spec, ',');
  int values[7] = {};
  bool ok = parts.size() == 7;
  for (size_t i = 0; ok && i < 7; ++i) ok = absl::SimpleAtoi(parts[i], &values[i]);
  unsetenv(internal::kWorkerEnv);  // nothing started from here is a worker by inheritance
  if (!ok || getppid() != values[5]) {
    std::fprintf(stderr, "vdev: %s=%s is not from a live controller\n", internal::kWorkerEnv, spec);
    _exit(2);
  }
  const int fd = values[0];
  void* page = mmap(nullptr, internal::kCommandPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, values[1], 0);
  close(values[1]);
  if (page == MAP_FAILED) _exit(2);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  std::unique_ptr<internal::Staging> staging;
  if (values[6] >= 0) {
    fcntl(values[6], F_SETFD, FD_CLOEXEC);
    staging = std::make_unique<internal::Staging>(values[6]);
  }
  int code = internal::ServeController(fd, static_cast<internal::CommandPage*>(page), staging.get(),
                                       internal::WorkerIdentity{values[2], values[3], values[4]});
  std::fflush(nullptr);
  // Not exit(): the program's static objects belong to its main, which never ran.
  _exit(code);
}

}  // namespace vdev
