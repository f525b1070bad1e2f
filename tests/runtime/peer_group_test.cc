// Sessions across real worker processes: joining, all-gather, disagreement, missing and dead peers.
#include "vdev/runtime/peer_group.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/worker_harness.h"

namespace vdev {
namespace {

using ::testing::AllOf;
using testing::ExpectAllOk;
using ::testing::HasSubstr;
using testing::RunWorkers;
using testing::UniqueSessionId;
using testing::WorkerResult;

TEST(PeerGroupTest, AllGatherDeliversEveryContributionInRankOrder) {
  for (int n : {2, 3, 8}) {
    ExpectAllOk(RunWorkers(n, UniqueSessionId(), [n](PeerGroup& s) -> absl::Status {
      if (s.world_size() != n) return absl::InternalError("wrong world size");
      for (int round = 0; round < 3; ++round) {
        std::vector<std::string> all;
        absl::Status st = s.AllGather("test", absl::StrCat("r", s.rank(), "x", round), &all);
        if (!st.ok()) return st;
        for (int i = 0; i < n; ++i) {
          if (all[i] != absl::StrCat("r", i, "x", round)) return absl::InternalError(absl::StrCat("bad entry ", i));
        }
      }
      for (int i = 0; i < n; ++i) {
        if (s.pid(i) <= 0) return absl::InternalError("missing pid");
      }
      return s.session_id().empty() ? absl::InternalError("no session id") : absl::OkStatus();
    }));
  }
}

TEST(PeerGroupTest, DifferentCallsAreReportedOnEveryWorkerNotExchanged) {
  std::vector<WorkerResult> results = RunWorkers(3, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    std::vector<std::string> all;
    return s.AllGather(s.rank() == 2 ? "free" : "allocate", "x", &all);
  });
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.message, AllOf(HasSubstr("worker 0 called allocate #1"), HasSubstr("worker 2 called free #1")));
  }
}

TEST(PeerGroupTest, WorkerThatNeverJoinsIsNamedWithinTheTimeout) {
  // Worker 0 of three; the other two never come.
  std::string dir = testing::MakePrivateDir();
  absl::Time start = absl::Now();
  PeerGroupOptions so;
  so.rank = 0;
  so.world_size = 3;
  so.rendezvous_dir = dir;
  so.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<PeerGroup>> session = PeerGroup::Create(so);
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("worker(s) 1, 2 did not join"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));  // ended by the timeout, not hanging
  rmdir(dir.c_str());
}

TEST(PeerGroupTest, DeadWorkerIsNamedByTheOthersLongBeforeTheTimeout) {
  testing::HarnessOptions options;
  options.timeout = absl::Seconds(120);
  std::vector<WorkerResult> results = RunWorkers(
      4, UniqueSessionId(),
      [](PeerGroup& s) -> absl::Status {
        std::vector<std::string> all;
        if (absl::Status st = s.AllGather("warm-up", "", &all); !st.ok()) return st;
        if (s.rank() == 3) raise(SIGKILL);
        absl::Time start = absl::Now();
        absl::Status st = s.AllGather("after-death", "", &all);
        testing::ReportSeconds(absl::ToDoubleSeconds(absl::Now() - start));
        return st;
      },
      options);
  EXPECT_EQ(results[3].signal, SIGKILL);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(results[r].exit_code, 1);
    EXPECT_THAT(results[r].message, HasSubstr("worker 3 (pid"));
    EXPECT_LT(results[r].seconds, 60.0);  // half the timeout: noticed, not timed out
  }
}

TEST(PeerGroupTest, RendezvousDirectoryMustBePrivate) {
  std::string dir = testing::MakePrivateDir();
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  PeerGroupOptions so;
  so.world_size = 2;
  so.rendezvous_dir = dir;
  absl::StatusOr<std::unique_ptr<PeerGroup>> session = PeerGroup::Create(so);
  EXPECT_EQ(session.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(session.status().message()), HasSubstr("mode 0700"));
  rmdir(dir.c_str());
}

TEST(PeerGroupTest, RejectsRanksOutsideTheWorld) {
  PeerGroupOptions so;
  so.rank = 2;
  so.world_size = 2;
  so.rendezvous_dir = "/tmp";
  EXPECT_EQ(PeerGroup::Create(so).status().code(), absl::StatusCode::kInvalidArgument);
  so.rank = 0;
  so.world_size = 9;
  EXPECT_EQ(PeerGroup::Create(so).status().code(), absl::StatusCode::kInvalidArgument);
}

// Runs `body` in a forked child with the environment changes applied; returns its exit code.
int InChild(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(PeerGroupTest, RecognisesWorkersStartedByMpirun) {
  const std::string job = absl::StrCat("test-job-", getpid());
  std::vector<pid_t> pids;
  fflush(nullptr);
  for (int r = 0; r < 3; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      unsetenv(kEnvRank);
      setenv("OMPI_COMM_WORLD_RANK", std::to_string(r).c_str(), 1);
      setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
      setenv("OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("PMIX_NAMESPACE", job.c_str(), 1);
      absl::StatusOr<std::unique_ptr<PeerGroup>> s = PeerGroup::FromEnvironment();
      if (!s.ok()) _exit(2);
      std::vector<std::string> all;
      bool ok = (*s)->rank() == r && (*s)->world_size() == 3 && (*s)->local_rank() == r &&
                (*s)->AllGather("mpi", std::to_string(r), &all).ok() && all[2] == "2" &&
                (*s)->Barrier("before-exit").ok();
      s->reset();  // worker 0 removes the rendezvous directory it made
      _exit(ok ? 0 : 3);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/vdev-", geteuid(), "-",
                                       std::hash<std::string>{}(job)&0xffffffffffffULL);
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0) << dir << " was left behind";
}

TEST(PeerGroupTest, FromEnvironmentWithoutALauncherIsAnError) {
  int code = InChild([] {
    unsetenv(kEnvRank);
    unsetenv("OMPI_COMM_WORLD_RANK");
    absl::StatusOr<PeerGroupOptions> o = PeerGroup::OptionsFromEnvironment();
    return o.status().code() == absl::StatusCode::kFailedPrecondition ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
}

TEST(PeerGroupTest, TimeoutComesFromTheEnvironment) {
  int code = InChild([] {
    setenv(kEnvRank, "0", 1);
    setenv(kEnvWorldSize, "2", 1);
    setenv(kEnvRendezvous, "/tmp/x", 1);
    setenv(kEnvTimeoutMs, "1234", 1);
    absl::StatusOr<PeerGroupOptions> o = PeerGroup::OptionsFromEnvironment();
    return o.ok() && o->timeout == absl::Milliseconds(1234) && o->world_size == 2 ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace vdev
