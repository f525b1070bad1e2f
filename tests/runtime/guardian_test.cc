// The guardian: an owner killed outright (SIGKILL) leaves no worker, directory or segment behind;
// an owner that ends normally dismisses it and it touches nothing.
#include "guardian/guardian.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "vdev/runtime/launch.h"

namespace vdev::internal {
namespace {

bool SegmentExists(const std::string& name) { return access(absl::StrCat("/dev/shm", name).c_str(), F_OK) == 0; }

void CreateSegment(const std::string& name) {
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name;
  close(fd);
}

std::string MakeJobDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/vdev-guardian-test-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return "";
  int fd = open((dir + "/rendezvous").c_str(), O_CREAT | O_WRONLY, 0600);
  if (fd >= 0) close(fd);
  return dir;
}

// waitpid with a bound: the status, or -1 when `pid` did not end in time.
int WaitFor(pid_t pid, absl::Duration bound) {
  const absl::Time deadline = absl::Now() + bound;
  int status = 0;
  while (absl::Now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return -1;
}

TEST(GuardianTest, OwnerKilledOutrightLeavesNoWorkerDirectoryOrSegment) {
  const std::string session = NewSessionId();
  const std::string left = absl::StrCat("/vdev-", session, "-2-1");          // a worker's unshared segment
  const std::string other = absl::StrCat("/vdev-", NewSessionId(), "-0-0");  // another session's
  CreateSegment(left);
  CreateSegment(other);
  const std::string dir = MakeJobDir();
  ASSERT_FALSE(dir.empty());
  // Orphans (the worker, the guardian) come to this process, so their ends can be seen and reaped.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    const pid_t worker = fork();
    if (worker == 0) {
      while (true) pause();
    }
    absl::StatusOr<Guardian> guardian = Guardian::Start({.workers = {worker}, .directory = dir, .session_id = session});
    pid_t pids[2] = {worker, guardian.ok() ? guardian->pid() : -1};
    ssize_t ignored = write(report[1], pids, sizeof pids);
    (void)ignored;
    while (true) pause();
  }
  close(report[1]);
  pid_t pids[2] = {-1, -1};
  ASSERT_EQ(read(report[0], pids, sizeof pids), static_cast<ssize_t>(sizeof pids));
  close(report[0]);
  const pid_t worker = pids[0];
  const pid_t guardian = pids[1];
  ASSERT_GT(guardian, 0) << "the owner could not start its guardian";
  ASSERT_EQ(kill(owner, SIGKILL), 0);
  ASSERT_EQ(waitpid(owner, nullptr, 0), owner);

  // Both end at once; the bound only keeps a broken guardian from hanging the test.
  const int worker_status = WaitFor(worker, absl::Seconds(60));
  const int guardian_status = WaitFor(guardian, absl::Seconds(60));
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_TRUE(worker_status != -1 && WIFSIGNALED(worker_status) && WTERMSIG(worker_status) == SIGKILL)
      << "the worker was not killed (status " << worker_status << ")";
  EXPECT_TRUE(guardian_status != -1 && WIFEXITED(guardian_status) && WEXITSTATUS(guardian_status) == 0)
      << "guardian status " << guardian_status;
  EXPECT_FALSE(SegmentExists(left)) << "the session's segment is left behind";
  EXPECT_TRUE(SegmentExists(other)) << "another session's segment was removed";
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << "the job directory is left behind";
  shm_unlink(left.c_str());
  shm_unlink(other.c_str());
  unlink((dir + "/rendezvous").c_str());
  rmdir(dir.c_str());
}

TEST(GuardianTest, DismissedGuardianTouchesNothing) {
  const std::string session = NewSessionId();
  const std::string segment = absl::StrCat("/vdev-", session, "-0-0");
  CreateSegment(segment);
  const std::string dir = MakeJobDir();
  ASSERT_FALSE(dir.empty());
  absl::StatusOr<Guardian> guardian = Guardian::Start({.directory = dir, .session_id = session});
  ASSERT_TRUE(guardian.ok()) << guardian.status();
  const pid_t pid = guardian->pid();
  EXPECT_EQ(kill(pid, 0), 0) << "no guardian runs";
  guardian->Dismiss();
  EXPECT_EQ(guardian->pid(), -1);
  EXPECT_NE(waitpid(pid, nullptr, WNOHANG), pid) << "Dismiss did not reap the guardian";
  EXPECT_TRUE(SegmentExists(segment));
  EXPECT_EQ(access((dir + "/rendezvous").c_str(), F_OK), 0);
  shm_unlink(segment.c_str());
  unlink((dir + "/rendezvous").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace vdev::internal
