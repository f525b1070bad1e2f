// Faults and misuse: bad names, wrong argument types, exceptions, crashed and killed workers, a
// killed controller, programs that cannot be workers; worker groups and debug registers.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/controller_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/controller/controller.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::testing {
namespace {

using ::testing::HasSubstr;

class FaultTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ControllerSession>> session = MakeSession(GetParam(), 2);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(*session);
  }
  absl::Status CallThenSync(absl::string_view name, Value arg) {
    absl::StatusOr<RemoteFunc> f = session_->GetGlobalFunc(name);
    if (!f.ok()) return f.status();
    absl::StatusOr<DRef> r = session_->CallPacked(*f, std::move(arg));
    if (!r.ok()) return r.status();
    return session_->SyncAllWorkers();
  }
  std::unique_ptr<ControllerSession> session_;
};

TEST_P(FaultTest, UnknownFunctionNameIsAWorkerError) {
  absl::StatusOr<RemoteFunc> f = session_->GetGlobalFunc("no.such.function");
  ASSERT_TRUE(f.ok()) << "the lookup is queued like any command";
  absl::Status s = session_->SyncWorker(1);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("(GetGlobalFunc \"no.such.function\"): no worker function named"));
  EXPECT_THAT(s.message(), HasSubstr("worker "));
}

TEST_P(FaultTest, WrongArgumentTypeNamesTheArgument) {
  absl::Status s = CallThenSync("test.add", "seven");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("(CallPacked \"test.add\"): expected 2 argument(s), got 1"));
  auto fresh = *MakeSession(GetParam(), 2);
  absl::StatusOr<DRef> r = fresh->CallPacked(*fresh->GetGlobalFunc("test.add"), "seven", 1);
  ASSERT_TRUE(r.ok());
  s = fresh->SyncWorker(0);
  EXPECT_THAT(s.message(), HasSubstr("argument 0: expected int, got string"));
}

TEST_P(FaultTest, ExceptionBecomesAnInternalError) {
  absl::Status s = CallThenSync("test.throw_on", 1);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("worker 1: command #"));
  EXPECT_THAT(s.message(), HasSubstr("(CallPacked \"test.throw_on\"): exception: asked to throw"));
}

TEST_P(FaultTest, DebugRegistersRoundTripEveryKind) {
  const std::vector<Value> values = {Value(int64_t{-5}),
                                     Value(2.5),
                                     Value("text"),
                                     Value(Shape{2, 0, 3}),
                                     Value(HostTensor::Zeros(ir::DType::kI32, {2})),
                                     Value()};
  DRef slot = *session_->CallPacked(*session_->GetGlobalFunc("vdev.worker.id"));
  for (const Value& value : values) {
    ASSERT_TRUE(session_->DebugSetRegister(slot.reg_id(), value, 1).ok());
    absl::StatusOr<Value> back = session_->DebugGetFromRemote(slot.reg_id(), 1);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->v.index(), value.v.index());
    if (const auto* t = std::get_if<HostTensor>(&value.v)) {
      EXPECT_EQ(std::get<HostTensor>(back->v).bytes, t->bytes);
    } else if (const auto* i = std::get_if<int64_t>(&value.v)) {
      EXPECT_EQ(std::get<int64_t>(back->v), *i);
    } else if (const auto* str = std::get_if<std::string>(&value.v)) {
      EXPECT_EQ(std::get<std::string>(back->v), *str);
    }
  }
  absl::StatusOr<Value> untouched = session_->DebugGetFromRemote(slot.reg_id(), 0);
  ASSERT_TRUE(untouched.ok());
  EXPECT_EQ(std::get<int64_t>(untouched->v), 0) << "worker 0 keeps its own value";
  // A worker object stays where it is.
  DRef counter = *session_->CallPacked(*session_->GetGlobalFunc("test.counter.new"));
  EXPECT_TRUE(absl::IsUnimplemented(counter.DebugGetFromRemote(0).status()));
  EXPECT_TRUE(session_->SyncAllWorkers().ok()) << "a refused read does not end the session";
}

TEST_P(FaultTest, MisuseIsRefusedWithoutEndingTheSession) {
  EXPECT_TRUE(absl::IsInvalidArgument(session_->SyncWorker(2)));
  EXPECT_TRUE(absl::IsInvalidArgument(session_->InitCCL("mpi", {})));
  EXPECT_TRUE(absl::IsInvalidArgument(session_->InitCCL("host", {0, 1, 2})));
  auto other = *MakeSession(GetParam(), 1);
  DRef foreign = *other->CallPacked(*other->GetGlobalFunc("vdev.worker.id"));
  absl::StatusOr<DRef> r = session_->CallPacked(*session_->GetGlobalFunc("test.echo"), foreign);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_TRUE(absl::IsInvalidArgument(session_->CallPacked(RemoteFunc()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(session_->DebugSetRegister(0, foreign, 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(session_->DebugSetRegister(int64_t{1} << 40, 1, 0)));
  absl::StatusOr<Value> never = session_->DebugGetFromRemote(int64_t{1} << 40, 1);
  ASSERT_TRUE(never.ok()) << never.status();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(never->v));
  EXPECT_TRUE(
      absl::IsInvalidArgument(session_->CallPacked(*session_->GetGlobalFunc("test.echo"), Shape{2, -1}).status()));
  HostTensor huge;
  huge.shape = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_TRUE(absl::IsInvalidArgument(session_->CallPacked(*session_->GetGlobalFunc("test.echo"), huge).status()));
  EXPECT_TRUE(session_->SyncAllWorkers().ok());
}

TEST_P(FaultTest, CudaCollectivesNeedACudaProcessSession) {
  if (GetParam() == Backend::kThreaded) {
    EXPECT_TRUE(absl::IsUnimplemented(session_->InitCCL("vdev", {})));
    EXPECT_TRUE(absl::IsUnimplemented(session_->InitCCL("nccl", {})));
    EXPECT_TRUE(session_->InitCCL("host", {}).ok());
    EXPECT_TRUE(absl::IsFailedPrecondition(session_->InitCCL("host", {})));
    return;
  }
#ifdef VDEV_TEST_HAVE_CUDA_RUNTIME
  GTEST_SKIP() << "CUDA build: a process session's InitCCL(\"vdev\") needs GPUs, which CI has not";
#else
  EXPECT_TRUE(absl::IsUnimplemented(session_->InitCCL("nccl", {})));
#endif
}

TEST_P(FaultTest, ShutdownIsIdempotentAndFinal) {
  EXPECT_TRUE(session_->Shutdown().ok());
  EXPECT_TRUE(session_->Shutdown().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(session_->GetGlobalFunc("test.add").status()));
}

TEST_P(FaultTest, GroupsSplitWorkersEvenly) {
  auto session = MakeSession(GetParam(), 4, /*num_groups=*/2);
  ASSERT_TRUE(session.ok()) << session.status();
  DRef group = *(*session)->CallPacked(*(*session)->GetGlobalFunc("vdev.worker.group"));
  for (int w = 0; w < 4; ++w) {
    absl::StatusOr<Value> v = group.DebugGetFromRemote(w);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(std::get<int64_t>(v->v), w / 2);
  }
  EXPECT_TRUE(absl::IsInvalidArgument(MakeSession(GetParam(), 3, 2).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MakeSession(GetParam(), 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MakeSession(GetParam(), kMaxWorkers + 1).status()));
}

INSTANTIATE_TEST_SUITE_P(BothBackends, FaultTest, ::testing::Values(Backend::kThreaded, Backend::kProcess),
                         [](const ::testing::TestParamInfo<Backend>& info) { return BackendName(info.param); });

// Process sessions only: a worker process can die alone.

TEST(ProcessFaultTest, CrashInAFunctionNamesTheCommand) {
  auto session = *MakeSession(Backend::kProcess, 4);
  ASSERT_TRUE(session->CallPacked(*session->GetGlobalFunc("test.abort_on"), 1).ok());
  absl::Status s = session->SyncAllWorkers();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("worker 1 (pid "));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("was killed by signal ", SIGABRT)));
  EXPECT_THAT(s.message(), HasSubstr("(CallPacked \"test.abort_on\")"));
  for (pid_t pid : session->worker_pids()) EXPECT_FALSE(ProcessAlive(pid)) << pid;
}

TEST(ProcessFaultTest, KilledWorkerIsReportedWithoutHanging) {
  auto session = *MakeSession(Backend::kProcess, 4);
  ASSERT_TRUE(session->InitCCL("host", {}).ok());
  const std::vector<pid_t> pids = session->worker_pids();
  ASSERT_EQ(kill(pids[2], SIGKILL), 0);
  // The call may still be accepted (the socket buffers it); then the wait for it reports the death.
  absl::StatusOr<RemoteFunc> id = session->GetGlobalFunc("vdev.worker.id");
  absl::Status s = id.ok() ? session->SyncAllWorkers() : id.status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("worker 2 (pid ", pids[2], ") was killed by signal 9")));
  EXPECT_EQ(session->GetGlobalFunc("vdev.tensor.copy").status(), s);
  for (pid_t pid : pids) EXPECT_FALSE(ProcessAlive(pid)) << pid;
  EXPECT_THAT(LeftoverSegments(session->ccl_session_id()), ::testing::IsEmpty());
}

// A worker stopped inside a long command: the controller, whose timeout is far longer than the
// test's bound, names that worker, its pid, its state and the command within seconds.
TEST(ProcessFaultTest, StoppedWorkerIsNamedWithItsCommand) {
  ControllerOptions options;
  options.timeout = absl::Minutes(10);
  auto session = *ControllerSession::Process(2, options);
  const std::string fifo = absl::StrCat(::testing::TempDir(), "/stopped_worker_", getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_TRUE(session->CallPacked(*session->GetGlobalFunc("test.announce_then_sleep"), 1, fifo, 600000).ok());
  std::ifstream announced(fifo);  // opens when worker 1 does: it is in the command
  char byte = 0;
  ASSERT_TRUE(announced.get(byte)) << "worker 1 never reached its command";
  unlink(fifo.c_str());
  const pid_t stopped = session->worker_pids()[1];
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  absl::Status s = session->SyncAllWorkers();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("worker 1 (pid ", stopped, ") was stopped (state T")));
  EXPECT_THAT(s.message(), HasSubstr("(CallPacked \"test.announce_then_sleep\"); it was killed"));
  EXPECT_FALSE(ProcessAlive(stopped));
}

TEST(ProcessFaultTest, ProgramThatIsNoWorkerIsRefused) {
  ControllerOptions options;
  options.program = "/bin/true";
  options.timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<ControllerSession>> session = ControllerSession::Process(2, options);
  EXPECT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(), HasSubstr("call vdev::MaybeRunWorker(argc, argv) first in main"));
}

// A controller killed with SIGKILL (no destructor runs): its workers notice and exit, and the IPC
// memory they had mapped leaves no segment behind.
TEST(ProcessFaultTest, KilledControllerTakesItsWorkersAlong) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  fflush(nullptr);
  pid_t controller = fork();
  ASSERT_GE(controller, 0);
  if (controller == 0) {
    close(report[0]);
    auto session = MakeSession(Backend::kProcess, 4);
    std::string line = "failed\n";
    if (session.ok() && (*session)->InitCCL("host", {}).ok()) {
      auto alloc = (*session)->GetGlobalFunc("vdev.ipc.alloc");
      DRef memory = *(*session)->CallPacked(*alloc, 4096);
      DRef busy = *(*session)->CallPacked(*(*session)->GetGlobalFunc("test.sleep_ms"), 100);
      if ((*session)->SyncWorker(0).ok()) {
        line = absl::StrCat((*session)->ccl_session_id(), " ", (*session)->ccl_rendezvous_dir());
        for (pid_t pid : (*session)->worker_pids()) absl::StrAppend(&line, " ", pid);
        absl::StrAppend(&line, "\n");
      }
    }
    ssize_t ignored = write(report[1], line.data(), line.size());
    (void)ignored;
    pause();
    _exit(0);
  }
  close(report[1]);
  std::string text;
  char buf[256];
  ssize_t got;
  while (text.find('\n') == std::string::npos && (got = read(report[0], buf, sizeof buf)) > 0) text.append(buf, got);
  close(report[0]);
  kill(controller, SIGKILL);
  waitpid(controller, nullptr, 0);
  std::vector<std::string> parts = absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), ' ');
  ASSERT_EQ(parts.size(), 6u) << text;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);  // they end at once; 60 s for a loaded machine
  for (size_t i = 2; i < parts.size(); ++i) {
    pid_t pid = std::stoi(parts[i]);
    while (ProcessAlive(pid) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    EXPECT_FALSE(ProcessAlive(pid)) << "worker pid " << pid << " outlived its controller by 60 s";
  }
  EXPECT_THAT(LeftoverSegments(parts[0]), ::testing::IsEmpty());
  EXPECT_FALSE(PathExists(parts[1])) << parts[1];
}

}  // namespace
}  // namespace vdev::testing
