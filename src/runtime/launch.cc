// `vdev launch`: fork/exec N workers of one session and supervise them (see vdev/runtime/launch.h).
#include "vdev/runtime/launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
    return absl::StrCat("worker ", rank, " (pid ", pid, ") was killed by signal ", e.code, " (", strsignal(e.code),
                        ")");
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

// A started job: its workers (one process group, led by worker 0) and what they share.
struct Job {
  std::string dir;         // the rendezvous directory
  std::string session_id;  // names the job's shared-memory segments
  std::vector<pid_t> pids;
  pid_t group = 0;  // the workers' process group: worker 0's pid

  // Kills every worker and removes what they shared: the end of a job that could not be started.
  void Abandon() const {
    if (group > 0) kill(-group, SIGKILL);
    for (pid_t p : pids) {
      if (p > 0) waitpid(p, nullptr, 0);
    }
    RemoveTree(dir);
  }
};

// The rendezvous directory, mode 0700 (mkdtemp's), under $TMPDIR or /tmp.
absl::StatusOr<std::string> MakeRendezvousDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/vdev-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
  }
  return templ;
}

// In the forked worker `rank`: joins the group, dies with the launcher, and execs the program
// with the job's environment. Never returns.
[[noreturn]] void ExecWorker(const LaunchOptions& options, const Job& job, int rank, pid_t launcher,
                             const SignalScope& signals, const std::vector<char*>& argv) {
  setpgid(0, job.group);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(1);  // the launcher died before the line above
  signals.RestoreInChild();
  setenv(kEnvRank, std::to_string(rank).c_str(), 1);
  setenv(kEnvLocalRank, std::to_string(rank).c_str(), 1);
  setenv(kEnvWorldSize, std::to_string(options.num_workers).c_str(), 1);
  setenv(kEnvRendezvous, job.dir.c_str(), 1);
  setenv(kEnvSessionId, job.session_id.c_str(), 1);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "vdev launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// Forks the workers into one process group; on failure, none is left running.
absl::Status StartWorkers(const LaunchOptions& options, const SignalScope& signals, Job* job) {
  std::vector<char*> argv;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  job->pids.assign(options.num_workers, -1);
  const pid_t launcher = getpid();
  std::fflush(nullptr);
  for (int r = 0; r < options.num_workers; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      const int saved = errno;
      job->Abandon();
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(saved)));
    }
    if (pid == 0) ExecWorker(options, *job, r, launcher, signals, argv);
    setpgid(pid, job->group);  // also here: whichever of the two runs first, the group exists before the next fork
    if (job->group == 0) job->group = pid;
    job->pids[r] = pid;
  }
  return absl::OkStatus();
}

// Watches the workers until all have ended: the first failure gives the job's status and, after
// the grace period, the survivors are killed; a stop signal is passed on to the whole group.
class Supervisor {
 public:
  Supervisor(const LaunchOptions& options, const Job& job, const SignalScope& signals)
      : options_(options),
        job_(job),
        signals_(signals),
        n_(options.num_workers),
        pidfds_(n_, -1),
        ended_(n_, false),
        running_(n_) {
    for (int r = 0; r < n_; ++r) pidfds_[r] = PidfdOpen(job.pids[r]);
  }
  ~Supervisor() {
    for (int fd : pidfds_) {
      if (fd >= 0) close(fd);
    }
  }

  int Run() {
    while (running_ > 0) {
      Wait();
      NoteEndings();
      if (stop_signal != 0 && !forwarded_) ForwardStop();
      if (running_ > 0 && absl::Now() >= kill_at_) KillSurvivors();
    }
    return result_;
  }

 private:
  // Wakes at the first exit (a pidfd becomes readable), a stop signal, or the kill deadline; a
  // worker without a pidfd (old kernel) is looked at every millisecond.
  void Wait() {
    std::vector<pollfd> fds;
    bool unwatched = false;
    for (int r = 0; r < n_; ++r) {
      if (ended_[r]) continue;
      if (pidfds_[r] >= 0) fds.push_back({pidfds_[r], POLLIN, 0});
      else unwatched = true;
    }
    absl::Duration wait = kill_at_ == absl::InfiniteFuture() ? absl::Hours(1) : kill_at_ - absl::Now();
    if (unwatched) wait = std::min(wait, absl::Milliseconds(1));
    const timespec timeout = absl::ToTimespec(std::max(wait, absl::ZeroDuration()));
    ppoll(fds.data(), fds.size(), &timeout, &signals_.wait_mask());
  }

  // Workers are observed with WNOWAIT and reaped only at the end: an unreaped worker 0 keeps the
  // group's id from being reused, so killing the group can never hit an unrelated process.
  void NoteEndings() {
    // Exits seen in one wake-up happened within microseconds: a worker killed by a signal is put
    // first (peers that fail because of it exit with a status), then by rank.
    std::vector<std::pair<int, Ending>> seen;
    for (int r = 0; r < n_; ++r) {
      if (ended_[r]) continue;
      siginfo_t info = {};
      if (waitid(P_PID, job_.pids[r], &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != job_.pids[r]) continue;
      seen.push_back({r, Ending{info.si_code != CLD_EXITED, info.si_status}});
    }
    std::stable_sort(seen.begin(), seen.end(),
                     [](const auto& a, const auto& b) { return a.second.signaled && !b.second.signaled; });
    for (const auto& [r, ending] : seen) {
      ended_[r] = true;
      --running_;
      if (ending.ok()) continue;
      Say(DescribeExit(r, job_.pids[r], ending));
      if (result_ == 0) {
        result_ = ending.ExitCode();
        failed_rank_ = r;
        kill_at_ = absl::Now() + options_.grace;
      }
    }
  }

  void ForwardStop() {
    Say(absl::StrCat("stopping the workers (", strsignal(stop_signal), ")"));
    kill(-job_.group, SIGTERM);  // the group: their children too
    forwarded_ = true;
    if (result_ == 0) result_ = 128 + stop_signal;
    kill_at_ = std::min(kill_at_, absl::Now() + absl::Seconds(2));
  }

  void KillSurvivors() {
    for (int r = 0; r < n_; ++r) {
      if (ended_[r]) continue;
      Say(failed_rank_ >= 0
              ? absl::StrCat("killing worker ", r, " (pid ", job_.pids[r], "): still running ",
                             absl::FormatDuration(options_.grace), " after worker ", failed_rank_, " failed")
              : absl::StrCat("killing worker ", r, " (pid ", job_.pids[r], "): still running after SIGTERM"));
    }
    kill(-job_.group, SIGKILL);
    kill_at_ = absl::InfiniteFuture();
  }

  const LaunchOptions& options_;
  const Job& job_;
  const SignalScope& signals_;
  const int n_;
  std::vector<int> pidfds_;
  std::vector<bool> ended_;
  int running_;
  int result_ = 0;
  absl::Time kill_at_ = absl::InfiniteFuture();
  int failed_rank_ = -1;
  bool forwarded_ = false;
};

}  // namespace

absl::StatusOr<int> Launch(const LaunchOptions& options) {
  if (options.num_workers < 1 || options.num_workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("-n must be in 1..", kMaxWorkers));
  }
  if (options.argv.empty()) return absl::InvalidArgumentError("no program to launch");
  Job job;
  absl::StatusOr<std::string> dir = MakeRendezvousDir();
  if (!dir.ok()) return dir.status();
  job.dir = *std::move(dir);
  job.session_id = NewSessionId();
  SignalScope signals;
  if (absl::Status started = StartWorkers(options, signals, &job); !started.ok()) return started;
  absl::StatusOr<internal::Guardian> guardian = internal::Guardian::Start(
      {.process_group = job.group,
       .workers = job.pids,
       .directory = job.dir,
       .session_id = job.session_id,
       .farewell = absl::StrCat("vdev launch: the launcher is gone: its workers (process group ", job.group,
                                ") were killed and the rendezvous directory removed")});
  if (!guardian.ok()) {
    job.Abandon();
    return guardian.status();
  }
  const int result = Supervisor(options, job, signals).Run();
  // What the workers left running in their group (a background child) ends with the job.
  kill(-job.group, SIGKILL);
  for (pid_t p : job.pids) waitpid(p, nullptr, 0);
  guardian->Dismiss();
  RemoveTree(job.dir);
  RemoveSessionSegments(job.session_id);  // a worker killed between creating and sharing a segment
  return result;
}

}  // namespace vdev
