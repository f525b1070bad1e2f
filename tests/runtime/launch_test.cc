// `vdev launch` end to end: real workers, exit statuses, a killed worker, cleanup.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/worker_harness.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;

struct ShellRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  double seconds = 0;
};

ShellRun Shell(const std::string& command) {
  ShellRun run;
  absl::Time start = absl::Now();
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) run.output.append(buf, n);
  int status = pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return run;
}

std::string SessionIdIn(const std::string& output) {
  std::smatch m;
  std::regex re("session ([0-9a-f]+)");
  return std::regex_search(output, m, re) ? m[1].str() : "";
}

TEST(LaunchTest, RunsWorkersThatAllReduceTogether) {
  ShellRun run = Shell(absl::StrCat(VDEV_BINARY, " launch -n 4 -- ", VDEV_TEST_WORKER, " --calls 200"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (int r = 0; r < 4; ++r) EXPECT_THAT(run.output, HasSubstr(absl::StrCat("worker ", r, " ok")));
  EXPECT_THAT(testing::LeftoverSegments(SessionIdIn(run.output)), ::testing::IsEmpty());
}

TEST(LaunchTest, GivesEachWorkerARankAndAPrivateRendezvous) {
  ShellRun run = Shell(absl::StrCat(VDEV_BINARY,
                                    " launch -n 3 -- sh -c 'echo \"r=$VDEV_RANK/$VDEV_WORLD_SIZE "
                                    "mode=$(stat -c %a $VDEV_RENDEZVOUS)\"'"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (int r = 0; r < 3; ++r) EXPECT_THAT(run.output, HasSubstr(absl::StrCat("r=", r, "/3 mode=700")));
}

// The peers' timeout and the launcher's grace are far longer than the run may take: the others must
// notice the death, not time out, and stop on their own.
TEST(LaunchTest, KilledWorkerIsNamedAndTheOthersFailLongBeforeTheirTimeout) {
  ShellRun run = Shell(absl::StrCat("VDEV_TIMEOUT_MS=120000 ", VDEV_BINARY, " launch --grace 120 -n 3 -- ",
                                    VDEV_TEST_WORKER, " --calls 1000000 --die-rank 1 --die-at 50"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("vdev launch: worker 1 (pid"));
  EXPECT_THAT(run.output, HasSubstr("was killed by signal 9"));
  EXPECT_THAT(run.output, HasSubstr("worker 0: "));
  EXPECT_THAT(run.output, HasSubstr("worker 2: "));
  EXPECT_LT(run.seconds, 60.0);
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("killing worker")));  // they failed on their own
  EXPECT_THAT(testing::LeftoverSegments(SessionIdIn(run.output)), ::testing::IsEmpty());
}

// Peers fail within milliseconds of a killed worker (their waits notice it); the launcher wakes at
// the first exit, so the status and the first report are the killed worker's, every time.
TEST(LaunchTest, WithEightWorkersTheKilledWorkerIsReportedFirstNotAPeer) {
  for (int die : {6, 1, 7, 0, 3}) {
    ShellRun run = Shell(absl::StrCat(VDEV_BINARY, " launch -n 8 -- ", VDEV_TEST_WORKER,
                                      " --calls 1000000 --die-at 20 --die-rank ", die));
    EXPECT_EQ(run.exit_code, 128 + SIGKILL) << run.output;
    const size_t first = run.output.find("vdev launch: worker ");
    ASSERT_NE(first, std::string::npos) << run.output;
    EXPECT_EQ(run.output.substr(first, run.output.find('\n', first) - first)
                  .rfind(absl::StrCat("vdev launch: worker ", die, " (pid"), 0),
              0u)
        << run.output;
  }
}

TEST(LaunchTest, ExitStatusIsTheFirstFailingWorkers) {
  ShellRun run = Shell(absl::StrCat(VDEV_BINARY, " launch -n 2 -- sh -c 'exit $((VDEV_RANK * 5))'"));
  EXPECT_EQ(run.exit_code, 5);
  EXPECT_THAT(run.output, HasSubstr("worker 1 (pid"));
  EXPECT_THAT(run.output, HasSubstr("exited with status 5"));
}

TEST(LaunchTest, StoppingTheLauncherStopsTheWorkers) {
  const std::string pid_file = testing::MakePrivateDir() + "/pids";
  fflush(nullptr);
  pid_t launcher = fork();
  if (launcher == 0) {
    execl(VDEV_BINARY, VDEV_BINARY, "launch", "-n", "2", "--", "sh", "-c",
          ("echo $$ >> " + pid_file + "; exec sleep 300").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<pid_t> workers;
  for (int i = 0; i < 6000 && workers.size() < 2; ++i) {  // 60 s for both to start
    absl::SleepFor(absl::Milliseconds(10));
    workers.clear();
    if (FILE* f = std::fopen(pid_file.c_str(), "r")) {
      int pid;
      while (std::fscanf(f, "%d", &pid) == 1) workers.push_back(pid);
      std::fclose(f);
    }
  }
  ASSERT_EQ(workers.size(), 2u);
  absl::Time start = absl::Now();
  kill(launcher, SIGTERM);
  int status = 0;
  waitpid(launcher, &status, 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));  // the workers' sleep is 300 s: they were stopped
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  for (pid_t w : workers) EXPECT_NE(kill(w, 0), 0) << "worker " << w << " still running";
  unlink(pid_file.c_str());
  rmdir(pid_file.substr(0, pid_file.rfind('/')).c_str());
}

TEST(LaunchTest, MissingProgramIsReported) {
  ShellRun run = Shell(absl::StrCat(VDEV_BINARY, " launch -n 2 -- /nonexistent/program"));
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_THAT(run.output, HasSubstr("cannot run /nonexistent/program"));
}

}  // namespace
}  // namespace vdev
