// `vdev launch`: fork/exec N workers of one session and supervise them (see vdev/launch.h).
#include "vdev/launch.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
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

std::string DescribeExit(int rank, pid_t pid, int status) {
  if (WIFSIGNALED(status)) {
    return absl::StrCat("worker ", rank, " (pid ", pid, ") was killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return absl::StrCat("worker ", rank, " (pid ", pid, ") exited with status ", WEXITSTATUS(status));
}

// One write per line: workers share our stderr, and pieces would interleave with theirs.
void Say(const std::string& line) {
  std::string text = absl::StrCat("vdev launch: ", line, "\n");
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

// Set by SIGINT/SIGTERM/SIGHUP: the job is being stopped; the workers go with it.
volatile sig_atomic_t stop_signal = 0;
void OnStop(int sig) { stop_signal = sig; }

int ExitCode(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

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
  std::vector<pid_t> pids(options.num_workers, -1);
  std::fflush(nullptr);
  for (int r = 0; r < options.num_workers; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      for (pid_t p : pids) {
        if (p > 0) kill(p, SIGKILL);
      }
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    }
    if (pid == 0) {
      setenv(kEnvRank, std::to_string(r).c_str(), 1);
      setenv(kEnvLocalRank, std::to_string(r).c_str(), 1);
      setenv(kEnvWorldSize, std::to_string(options.num_workers).c_str(), 1);
      setenv(kEnvRendezvous, dir.c_str(), 1);
      setenv(kEnvSessionId, session_id.c_str(), 1);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "vdev launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    pids[r] = pid;
  }

  struct sigaction stop = {};
  stop.sa_handler = OnStop;
  struct sigaction old_int, old_term, old_hup;
  sigaction(SIGINT, &stop, &old_int);
  sigaction(SIGTERM, &stop, &old_term);
  sigaction(SIGHUP, &stop, &old_hup);
  stop_signal = 0;
  bool forwarded = false;

  int result = 0;
  int running = options.num_workers;
  absl::Time kill_at = absl::InfiniteFuture();
  int failed_rank = -1;
  while (running > 0) {
    bool reaped = false;
    for (int r = 0; r < options.num_workers; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got != pids[r]) continue;
      reaped = true;
      --running;
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        Say(DescribeExit(r, pids[r], status));
        if (result == 0) {
          result = ExitCode(status);
          failed_rank = r;
          kill_at = absl::Now() + options.grace;
        }
      }
      pids[r] = -1;
    }
    if (stop_signal != 0 && !forwarded) {
      Say(absl::StrCat("stopping the workers (", strsignal(stop_signal), ")"));
      for (pid_t p : pids) {
        if (p > 0) kill(p, SIGTERM);
      }
      forwarded = true;
      if (result == 0) result = 128 + stop_signal;
      kill_at = std::min(kill_at, absl::Now() + absl::Seconds(2));
    }
    if (running > 0 && absl::Now() >= kill_at) {
      for (int r = 0; r < options.num_workers; ++r) {
        if (pids[r] < 0) continue;
        Say(failed_rank >= 0 ? absl::StrCat("killing worker ", r, " (pid ", pids[r], "): still running ",
                                            absl::FormatDuration(options.grace), " after worker ", failed_rank,
                                            " failed")
                             : absl::StrCat("killing worker ", r, " (pid ", pids[r], "): still running after SIGTERM"));
        kill(pids[r], SIGKILL);
      }
      kill_at = absl::InfiniteFuture();
    }
    if (!reaped) absl::SleepFor(absl::Milliseconds(2));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  RemoveTree(dir);
  RemoveSessionSegments(session_id);  // a worker killed between creating and sharing a segment
  return result;
}

}  // namespace vdev
