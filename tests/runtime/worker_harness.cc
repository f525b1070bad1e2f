#include "runtime/worker_harness.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace vdev::testing {
namespace {

int report_fd = -1;  // in a worker: the pipe to the parent

void WriteAllFd(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

WorkerSignal::WorkerSignal() {
  if (pipe(fds_) != 0) std::abort();
}

WorkerSignal::~WorkerSignal() {
  close(fds_[0]);
  close(fds_[1]);
}

void WorkerSignal::Notify() { WriteAllFd(fds_[1], "!"); }

void WorkerSignal::Wait(int count) {
  char byte;
  for (int got = 0; got < count;) {
    const ssize_t n = read(fds_[0], &byte, 1);
    if (n == 1) ++got;
    if (n == 0 || (n < 0 && errno != EINTR)) return;
  }
}

std::string UniqueSessionId() {
  static std::atomic<int> counter{0};
  return absl::StrCat("t", getpid(), "x", counter++);
}

std::string MakePrivateDir() {
  char templ[] = "/tmp/vdev-test-XXXXXX";
  char* dir = mkdtemp(templ);
  return dir != nullptr ? dir : "";
}

void ReportSeconds(double seconds) {
  if (report_fd >= 0) WriteAllFd(report_fd, absl::StrCat("S", seconds, "\n"));
}

std::vector<std::string> LeftoverSegments(const std::string& session_id) {
  std::vector<std::string> out;
  const std::string prefix = absl::StrCat("vdev-", session_id, "-");
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, prefix)) out.push_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

std::vector<WorkerResult> RunWorkers(int n, const std::string& session_id,
                                     const std::function<absl::Status(PeerGroup&)>& body, const HarnessOptions& given) {
  HarnessOptions options = given;
  if (const char* set = std::getenv("VDEV_HARNESS_TIMEOUT_S"); set != nullptr && std::atof(set) > 0) {
    // Only the defaults: a test that chose its own durations (a timeout it provokes) keeps them.
    if (given.timeout == HarnessOptions{}.timeout) options.timeout = absl::Seconds(std::atof(set));
    if (given.kill_after == HarnessOptions{}.kill_after) options.kill_after = 4 * absl::Seconds(std::atof(set));
  }
  const std::string dir = MakePrivateDir();
  std::vector<pid_t> pids(n, -1);
  std::vector<int> fds(n, -1);
  fflush(nullptr);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      report_fd = p[1];
      PeerGroupOptions so;
      so.rank = r;
      so.world_size = n;
      so.local_rank = r;
      so.rendezvous_dir = dir;
      so.session_id = session_id;
      so.timeout = options.timeout;
      absl::Status status;
      absl::StatusOr<std::unique_ptr<PeerGroup>> session = PeerGroup::Create(so);
      status = session.ok() ? body(**session) : session.status();
      if (!status.ok()) WriteAllFd(report_fd, absl::StrCat("M", status.ToString(), "\n"));
      _exit(status.ok() ? 0 : 1);
    }
    close(p[1]);
    pids[r] = pid;
    fds[r] = p[0];
  }
  std::vector<WorkerResult> results(n);
  const absl::Time kill_at = absl::Now() + options.kill_after;
  int running = n;
  while (running > 0) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      results[r].exited = WIFEXITED(status);
      results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      results[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      pids[r] = -1;
      --running;
    }
    if (absl::Now() > kill_at) {
      for (pid_t p : pids) {
        if (p > 0) kill(p, SIGKILL);
      }
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  for (int r = 0; r < n; ++r) {
    std::string text;
    char buf[4096];
    ssize_t got;
    while ((got = read(fds[r], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(got));
    close(fds[r]);
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(start + 1, nl - start - 1);
      if (text[start] == 'M') results[r].message += line;
      if (text[start] == 'S') results[r].seconds = std::atof(line.c_str());
      start = nl + 1;
    }
  }
  unlink((dir + "/session.sock").c_str());
  rmdir(dir.c_str());
  return results;
}

void ExpectAllOk(const std::vector<WorkerResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].exit_code, 0) << "worker " << r << ": " << results[r].message;
  }
}

}  // namespace vdev::testing
