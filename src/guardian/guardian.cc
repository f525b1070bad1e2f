#include "guardian/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"

namespace vdev::internal {
namespace {

// What the guardian uses after fork, all of it made before.
struct Prepared {
  int done_fd = -1;
  int null_fd = -1;
  int shm_dir_fd = -1;
  int job_dir_fd = -1;
  pid_t process_group = 0;
  std::vector<pid_t> workers;
  std::vector<int> pidfds;  // -1 where pidfd_open failed (old kernel): kill(pid, 0) is polled
  std::string job_dir;
  std::string segment_prefix;
  std::string farewell;
  std::vector<int> kept_fds;  // sorted: every descriptor above stays open, the rest are closed
};

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Another guardian forked later from the same owner must not hold this one's socket open (it would
// never see end of file), so the guardian keeps only what it needs.
void CloseAllBut(const std::vector<int>& kept) {
  unsigned first = 0;
  for (int fd : kept) {
    if (static_cast<unsigned>(fd) > first) syscall(SYS_close_range, first, static_cast<unsigned>(fd) - 1, 0u);
    first = static_cast<unsigned>(fd) + 1;
  }
  syscall(SYS_close_range, first, ~0u, 0u);
}

// Unlinks the entries of `dir_fd` whose names start with `prefix` (every entry for ""), rescanning
// until a pass finds none: unlinking while reading a directory may make the reading skip entries.
void UnlinkEntries(int dir_fd, const char* prefix, size_t prefix_len) {
  alignas(dirent64) char buf[4096];
  for (int pass = 0; pass < 16; ++pass) {
    bool removed = false;
    lseek(dir_fd, 0, SEEK_SET);
    ssize_t n;
    while ((n = getdents64(dir_fd, buf, sizeof buf)) > 0) {
      for (ssize_t off = 0; off < n;) {
        const dirent64* entry = reinterpret_cast<const dirent64*>(buf + off);
        off += entry->d_reclen;
        const char* name = entry->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
        if (std::strncmp(name, prefix, prefix_len) != 0) continue;
        if (unlinkat(dir_fd, name, 0) == 0) removed = true;
      }
    }
    if (!removed) return;
  }
}

// Kills the workers and waits until each has ended (a zombie has: it can create nothing more).
void KillAndAwait(const Prepared& p) {
  if (p.process_group > 0) kill(-p.process_group, SIGKILL);
  for (size_t i = 0; i < p.workers.size(); ++i) {
    if (p.pidfds[i] < 0 || syscall(SYS_pidfd_send_signal, p.pidfds[i], SIGKILL, nullptr, 0u) != 0) {
      kill(p.workers[i], SIGKILL);
    }
  }
  const int64_t deadline = NowMs() + 2000;
  for (size_t i = 0; i < p.workers.size(); ++i) {
    while (NowMs() < deadline) {
      if (p.pidfds[i] >= 0) {
        pollfd pfd{p.pidfds[i], POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(std::max<int64_t>(deadline - NowMs(), 0))) != 0) break;
      } else {
        if (kill(p.workers[i], 0) != 0 && errno == ESRCH) break;
        const timespec five_ms{0, 5000000};
        nanosleep(&five_ms, nullptr);
      }
    }
  }
}

[[noreturn]] void Guard(const Prepared& p) {
  setsid();  // deaf to the terminal's signals: Ctrl-C reaches the owner, which ends normally
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &ignore, nullptr);
  if (p.null_fd >= 0) {
    dup2(p.null_fd, STDIN_FILENO);
    dup2(p.null_fd, STDOUT_FILENO);
  }
  CloseAllBut(p.kept_fds);
  char byte = 0;
  ssize_t n;
  do {
    n = read(p.done_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1) _exit(0);
  KillAndAwait(p);
  if (p.job_dir_fd >= 0) {
    UnlinkEntries(p.job_dir_fd, "", 0);
    rmdir(p.job_dir.c_str());
  }
  if (p.shm_dir_fd >= 0) UnlinkEntries(p.shm_dir_fd, p.segment_prefix.c_str(), p.segment_prefix.size());
  if (!p.farewell.empty()) {
    ssize_t ignored = write(STDERR_FILENO, p.farewell.data(), p.farewell.size());
    (void)ignored;
  }
  _exit(0);
}

void CloseAll(const Prepared& p) {
  for (int fd : {p.done_fd, p.null_fd, p.shm_dir_fd, p.job_dir_fd}) {
    if (fd >= 0) close(fd);
  }
  for (int fd : p.pidfds) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace

absl::StatusOr<Guardian> Guardian::Start(const GuardianDuty& duty) {
  // A socket rather than a pipe: the done byte is sent with MSG_NOSIGNAL, so a guardian that died
  // first cannot kill its owner with SIGPIPE.
  int socket_fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socket_fds) != 0) {
    return absl::InternalError(absl::StrCat("the guardian's socket: ", std::strerror(errno)));
  }
  Prepared p;
  p.done_fd = socket_fds[0];
  p.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (!duty.session_id.empty()) {
    p.shm_dir_fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    p.segment_prefix = absl::StrCat("vdev-", duty.session_id, "-");
  }
  if (!duty.directory.empty()) {
    p.job_dir_fd = open(duty.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    p.job_dir = duty.directory;
  }
  p.process_group = duty.process_group;
  p.workers = duty.workers;
  for (pid_t pid : duty.workers) p.pidfds.push_back(static_cast<int>(syscall(SYS_pidfd_open, pid, 0u)));
  if (!duty.farewell.empty()) p.farewell = absl::StrCat(duty.farewell, "\n");
  p.kept_fds = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, p.done_fd, p.shm_dir_fd, p.job_dir_fd};
  p.kept_fds.insert(p.kept_fds.end(), p.pidfds.begin(), p.pidfds.end());
  p.kept_fds.erase(std::remove(p.kept_fds.begin(), p.kept_fds.end(), -1), p.kept_fds.end());
  std::sort(p.kept_fds.begin(), p.kept_fds.end());
  const pid_t pid = fork();
  if (pid == 0) Guard(p);
  const int saved = errno;
  CloseAll(p);
  if (pid < 0) {
    close(socket_fds[1]);
    return absl::InternalError(absl::StrCat("starting the guardian: fork: ", std::strerror(saved)));
  }
  return Guardian(socket_fds[1], pid);
}

Guardian& Guardian::operator=(Guardian&& other) noexcept {
  if (this != &other) {
    Dismiss();
    std::swap(done_fd_, other.done_fd_);
    std::swap(pid_, other.pid_);
  }
  return *this;
}

void Guardian::Dismiss() {
  if (done_fd_ >= 0) {
    const char done = 'd';
    ssize_t ignored = send(done_fd_, &done, 1, MSG_NOSIGNAL);
    (void)ignored;
    close(done_fd_);
    done_fd_ = -1;
  }
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

}  // namespace vdev::internal
