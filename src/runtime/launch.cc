// `vdev launch`: fork/exec N workers of one session and supervise them (see vdev/launch.h).
#include "vdev/launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "guardian/guardian.h"

namespace vdev {

std::string NewSessionId() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd() ^ static_cast<unsigned>(getpid()));
  return buf;
}

void RemoveSessionSegments(absl::string_view session_id) {
  if (session_id.empty()) return;
  const std::string prefix = absl::StrCat("vdev-", session_id, "-");
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, prefix)) shm_unlink(absl::StrCat("/", e->d_name).c_str());
    }
    closedir(d);
  }
}

namespace {

void RemoveTree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

// How a worker ended, from waitid (which leaves it a zombie: see Launch).
struct Ending {
  bool signaled = false;
  int code = 0;  // exit status, or the signal
  bool ok() const { return !signaled && code == 0; }
  int ExitCode() const { return signaled ? 128 + code : code; }
};

std::string DescribeExit(int rank, pid_t pid, const Ending& e) {
  if (e.signaled) {
    return absl::StrCat("worker ", rank, " (pid ", pid, ") was killed by signal ", e.code, " (", strsignal(e.code), ")");
  }
  return absl::StrCat("worker ", rank, " (pid ", pid, ") exited with status ", e.code);
}

// One write per line: workers share our stderr, and pieces would interleave with theirs. A closed
// stderr (`2>&1 | head`) is no reason to stop: SIGPIPE is ignored while the job runs.
void Say(const std::string& line) {
  std::string text = absl::StrCat("vdev launch: ", line, "\n");
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

// Set by SIGINT/SIGTERM/SIGHUP: the job is being stopped; the workers go with it.
volatile sig_atomic_t stop_signal = 0;
void OnStop(int sig) { stop_signal = sig; }

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Restores the launcher's signal dispositions and mask when the job is over.
class SignalScope {
 public:
  SignalScope() {
    struct sigaction stop = {};
    stop.sa_handler = OnStop;
    sigaction(SIGINT, &stop, &old_int_);
    sigaction(SIGTERM, &stop, &old_term_);
    sigaction(SIGHUP, &stop, &old_hup_);
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe_);
    // Blocked except inside ppoll, so a stop signal cannot slip in between a check and the wait.
    sigset_t stops;
    sigemptyset(&stops);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stops, sig);
    sigprocmask(SIG_BLOCK, &stops, &old_mask_);
    stop_signal = 0;
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  // In a forked worker, before exec: what the launcher's caller had (exec keeps ignored signals
  // ignored and the mask as it is).
  void RestoreInChild() const {
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  const sigset_t& wait_mask() const { return old_mask_; }

 private:
  struct sigaction old_int_, old_term_, old_hup_, old_pipe_;
  sigset_t old_mask_;
};

}  // namespace

absl::StatusOr<int> Launch(const LaunchOptions& options) {
  if (options.num_workers < 1 || options.num_workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("-n must be in 1..", kMaxWorkers));
  }
  if (options.argv.empty()) return absl::InvalidArgumentError("no program to launch");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/vdev-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {  // mode 0700 by definition
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
  }
  const std::string dir = templ;
  const std::string session_id = NewSessionId();

  std::vector<char*> argv;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int n = options.num_workers;
  std::vector<pid_t> pids(n, -1);
  SignalScope signals;
  const pid_t launcher = getpid();
  pid_t group = 0;  // the workers' process group: worker 0's pid
  std::fflush(nullptr);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      const int saved = errno;
      if (group > 0) kill(-group, SIGKILL);
      for (pid_t p : pids) {
        if (p > 0) waitpid(p, nullptr, 0);
      }
      RemoveTree(dir);
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(saved)));
    }
    if (pid == 0) {
      setpgid(0, group);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(1);  // the launcher died before the line above
      signals.RestoreInChild();
      setenv(kEnvRank, std::to_string(r).c_str(), 1);
      setenv(kEnvLocalRank, std::to_string(r).c_str(), 1);
      setenv(kEnvWorldSize, std::to_string(n).c_str(), 1);
      setenv(kEnvRendezvous, dir.c_str(), 1);
      setenv(kEnvSessionId, session_id.c_str(), 1);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "vdev launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, group);  // also here: whichever of the two runs first, the group exists before the next fork
    if (group == 0) group = pid;
    pids[r] = pid;
  }
  absl::StatusOr<internal::Guardian> guardian = internal::Guardian::Start(
      {.process_group = group,
       .workers = pids,
       .directory = dir,
       .session_id = session_id,
       .farewell = absl::StrCat("vdev launch: the launcher is gone: its workers (process group ", group,
                                ") were killed and the rendezvous directory removed")});
  if (!guardian.ok()) {
    kill(-group, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
    RemoveTree(dir);
    return guardian.status();
  }

  // Workers are observed with WNOWAIT and reaped only at the end: an unreaped worker 0 keeps the
  // group's id from being reused, so killing the group can never hit an unrelated process.
  std::vector<int> pidfds(n, -1);
  for (int r = 0; r < n; ++r) pidfds[r] = PidfdOpen(pids[r]);
  std::vector<bool> ended(n, false);
  int result = 0;
  int running = n;
  absl::Time kill_at = absl::InfiniteFuture();
  int failed_rank = -1;
  bool forwarded = false;
  while (running > 0) {
    // Wake at the first exit (a pidfd becomes readable), a stop signal, or the kill deadline; a
    // worker without a pidfd (old kernel) is looked at every millisecond.
    std::vector<pollfd> fds;
    bool unwatched = false;
    for (int r = 0; r < n; ++r) {
      if (ended[r]) continue;
      if (pidfds[r] >= 0) fds.push_back({pidfds[r], POLLIN, 0});
      else unwatched = true;
    }
    absl::Duration wait = kill_at == absl::InfiniteFuture() ? absl::Hours(1) : kill_at - absl::Now();
    if (unwatched) wait = std::min(wait, absl::Milliseconds(1));
    const timespec timeout = absl::ToTimespec(std::max(wait, absl::ZeroDuration()));
    ppoll(fds.data(), fds.size(), &timeout, &signals.wait_mask());
    // Exits seen in one wake-up happened within microseconds: a worker killed by a signal is put
    // first (peers that fail because of it exit with a status), then by rank.
    std::vector<std::pair<int, Ending>> seen;
    for (int r = 0; r < n; ++r) {
      if (ended[r]) continue;
      siginfo_t info = {};
      if (waitid(P_PID, pids[r], &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pids[r]) continue;
      seen.push_back({r, Ending{info.si_code != CLD_EXITED, info.si_status}});
    }
    std::stable_sort(seen.begin(), seen.end(),
                     [](const auto& a, const auto& b) { return a.second.signaled && !b.second.signaled; });
    for (const auto& [r, ending] : seen) {
      ended[r] = true;
      --running;
      if (ending.ok()) continue;
      Say(DescribeExit(r, pids[r], ending));
      if (result == 0) {
        result = ending.ExitCode();
        failed_rank = r;
        kill_at = absl::Now() + options.grace;
      }
    }
    if (stop_signal != 0 && !forwarded) {
      Say(absl::StrCat("stopping the workers (", strsignal(stop_signal), ")"));
      kill(-group, SIGTERM);  // the group: their children too
      forwarded = true;
      if (result == 0) result = 128 + stop_signal;
      kill_at = std::min(kill_at, absl::Now() + absl::Seconds(2));
    }
    if (running > 0 && absl::Now() >= kill_at) {
      for (int r = 0; r < n; ++r) {
        if (ended[r]) continue;
        Say(failed_rank >= 0 ? absl::StrCat("killing worker ", r, " (pid ", pids[r], "): still running ",
                                            absl::FormatDuration(options.grace), " after worker ", failed_rank,
                                            " failed")
                             : absl::StrCat("killing worker ", r, " (pid ", pids[r], "): still running after SIGTERM"));
      }
      kill(-group, SIGKILL);
      kill_at = absl::InfiniteFuture();
    }
  }
  // What the workers left running in their group (a background child) ends with the job.
  kill(-group, SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (pidfds[r] >= 0) close(pidfds[r]);
    waitpid(pids[r], nullptr, 0);
  }
  guardian->Dismiss();
  RemoveTree(dir);
  RemoveSessionSegments(session_id);  // a worker killed between creating and sharing a segment
  return result;
}

}  // namespace vdev
