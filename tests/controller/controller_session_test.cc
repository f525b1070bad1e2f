// Controller sessions, both back ends, 1/2/4/8 workers: registers, copies, DRef arguments, queued
// calls, the collectives after InitCCL, and nothing left behind.
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "controller/controller_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/controller/controller.h"

namespace vdev::testing {
namespace {

using ::testing::HasSubstr;

struct Param {
  Backend backend;
  int n;
};

class SessionTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ControllerSession>> session = MakeSession(GetParam().backend, GetParam().n);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(*session);
  }

  RemoteFunc Func(absl::string_view name) {
    absl::StatusOr<RemoteFunc> f = session_->GetGlobalFunc(name);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? *f : RemoteFunc();
  }

  template <typename... Args>
  DRef Call(absl::string_view name, Args&&... args) {
    absl::StatusOr<DRef> ref = session_->CallPacked(Func(name), std::forward<Args>(args)...);
    EXPECT_TRUE(ref.ok()) << ref.status();
    return ref.ok() ? *ref : DRef();
  }

  // The int in `ref` on `worker` (-1 and a test failure otherwise).
  int64_t IntOn(const DRef& ref, int worker) {
    absl::StatusOr<Value> v = ref.DebugGetFromRemote(worker);
    EXPECT_TRUE(v.ok()) << v.status();
    const int64_t* i = v.ok() ? std::get_if<int64_t>(&v->v) : nullptr;
    EXPECT_NE(i, nullptr) << "worker " << worker << " holds no int";
    return i != nullptr ? *i : -1;
  }

  int n() const { return GetParam().n; }
  std::unique_ptr<ControllerSession> session_;
};

TEST_P(SessionTest, RegistersAreAllocatedAndFreedOnEveryWorker) {
  RemoteFunc live = Func("vdev.worker.live_registers");
  RemoteFunc id = Func("vdev.worker.id");
  DRef before = *session_->CallPacked(live);
  DRef a = *session_->CallPacked(id);
  DRef b = *session_->CallPacked(id);
  DRef during = *session_->CallPacked(live);
  for (int w = 0; w < n(); ++w) {
    EXPECT_EQ(IntOn(during, w), IntOn(before, w) + 3) << "worker " << w;  // before, a, b
    EXPECT_EQ(IntOn(a, w), w);
  }
  const int64_t a_reg = a.reg_id(), b_reg = b.reg_id();
  a = DRef();
  b = DRef();
  DRef after = *session_->CallPacked(live);
  for (int w = 0; w < n(); ++w) {
    EXPECT_EQ(IntOn(after, w), IntOn(before, w) + 2) << "worker " << w;  // before, during
    // One freed number was reused by `after`; the other register is empty everywhere.
    const int64_t empty = after.reg_id() == a_reg ? b_reg : a_reg;
    absl::StatusOr<Value> v = session_->DebugGetFromRemote(empty, w);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_TRUE(std::holds_alternative<std::monostate>(v->v)) << "worker " << w;
  }
  EXPECT_TRUE(after.reg_id() == a_reg || after.reg_id() == b_reg) << after.reg_id();
}

// Random bits of every dtype (NaN payloads, -0, subnormals included) survive both copies.
TEST_P(SessionTest, CopiesRoundTripBitExact) {
  std::mt19937_64 rng(n());
  const std::vector<std::pair<ir::DType, Shape>> cases = {
      {ir::DType::kF32, {3, 5}}, {ir::DType::kBF16, {7}},       {ir::DType::kF16, {2, 2, 2}},
      {ir::DType::kI64, {4}},    {ir::DType::kU8, {0}},         {ir::DType::kF64, {}},
      {ir::DType::kBool, {9}},   {ir::DType::kF32, {512, 640}}, {ir::DType::kF64, {300, 300}}};
  // The last two (1.25 MiB, 703 KiB) go through a process session's staging area, one after the other.
  for (const auto& [dtype, shape] : cases) {
    HostTensor host = HostTensor::Zeros(dtype, shape);
    for (std::byte& b : host.bytes) b = static_cast<std::byte>(rng());
    if (dtype == ir::DType::kBool) {
      for (std::byte& b : host.bytes) b &= std::byte{1};
    }
    DRef remote = Call("vdev.tensor.empty", Shape{1}, "u8");
    absl::Status to = session_->CopyToWorker0(host, remote);
    ASSERT_TRUE(to.ok()) << to;
    DRef copy = Call("vdev.tensor.copy", remote);  // through a worker function too
    HostTensor back;
    absl::Status s = session_->CopyFromWorker0(&back, copy);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, shape);
    EXPECT_TRUE(back.bytes == host.bytes) << ir::DTypeName(dtype) << " differs";
  }
}

// Queued large copies must not overwrite each other's bytes on the way (a process session stages
// them in one shared area).
TEST_P(SessionTest, BackToBackLargeCopiesKeepTheirOwnBytes) {
  std::mt19937_64 rng(7);
  std::vector<HostTensor> hosts;
  std::vector<DRef> remotes;
  for (int i = 0; i < 3; ++i) remotes.push_back(Call("vdev.tensor.empty", Shape{1}, "u8"));
  WorkerGate gate;
  Call("test.gate_on", 0, gate.path());  // worker 0 is busy while the first copy is queued
  for (int i = 0; i < 3; ++i) {
    hosts.push_back(HostTensor::Zeros(ir::DType::kU8, {(1 << 20) + i}));
    for (std::byte& b : hosts.back().bytes) b = static_cast<std::byte>(rng());
    absl::Status s = session_->CopyToWorker0(hosts.back(), remotes[i]);
    ASSERT_TRUE(s.ok()) << s;
    // The next copy may overwrite the staging area only once worker 0 has read this one, which it
    // can do only after the gate opens.
    if (i == 0) gate.Open();
  }
  for (int i = 0; i < 3; ++i) {
    HostTensor back;
    absl::Status s = session_->CopyFromWorker0(&back, remotes[i]);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(back.bytes == hosts[i].bytes) << "copy " << i;
  }
}

TEST_P(SessionTest, DRefArgumentsResolvePerWorker) {
  DRef id = Call("vdev.worker.id");
  DRef plus = Call("test.add", id, 100);
  DRef twice = Call("test.add", plus, id);
  for (int w = 0; w < n(); ++w) {
    EXPECT_EQ(IntOn(plus, w), w + 100);
    EXPECT_EQ(IntOn(twice, w), 2 * w + 100);
  }
}

TEST_P(SessionTest, TenThousandQueuedCallsThenOneSync) {
  DRef counter = Call("test.counter.new");
  RemoteFunc add = Func("test.counter.add");
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<DRef> r = session_->CallPacked(add, counter, 1);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  ASSERT_TRUE(session_->SyncWorker(n() - 1).ok());
  DRef total = Call("test.counter.get", counter);
  for (int w = 0; w < n(); ++w) EXPECT_EQ(IntOn(total, w), 10000) << "worker " << w;
}

TEST_P(SessionTest, FailingCallNamesWorkerFunctionAndCommand) {
  const int victim = n() - 1;
  DRef ok = Call("test.add", 1, 2);
  ASSERT_TRUE(session_->SyncAllWorkers().ok());
  absl::StatusOr<DRef> failing = session_->CallPacked(Func("test.fail_on"), victim);
  ASSERT_TRUE(failing.ok()) << "calls are queued, the failure comes later";
  absl::Status s = session_->SyncAllWorkers();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("worker ", victim, ":")));
  EXPECT_THAT(s.message(), HasSubstr("(CallPacked \"test.fail_on\"): asked to fail"));
  EXPECT_THAT(s.message(), HasSubstr("command #"));
  // The session is over: every call answers with the same status, and the workers are reaped.
  EXPECT_EQ(session_->GetGlobalFunc("test.add").status(), s);
  EXPECT_EQ(session_->SyncWorker(0), s);
  for (pid_t pid : session_->worker_pids()) EXPECT_FALSE(ProcessAlive(pid)) << pid;
}

TEST_P(SessionTest, HostCollectivesAndIpcMemoryLeaveNothingBehind) {
  ASSERT_TRUE(session_->InitCCL("host", {}).ok());
  const std::string id = session_->ccl_session_id();
  const std::string dir = session_->ccl_rendezvous_dir();
  DRef me = Call("vdev.worker.id");
  DRef mine = Call("vdev.tensor.full", Shape{4, 3}, "f32", me);
  DRef sum = Call("vdev.ccl.allreduce", mine);
  DRef gathered = Call("vdev.ccl.allgather", mine);
  DRef from0 = Call("vdev.ccl.broadcast", Call("vdev.tensor.full", Shape{2}, "i64", Call("test.add", me, 7)));
  HostTensor out;
  absl::Status copied = session_->CopyFromWorker0(&out, sum);
  ASSERT_TRUE(copied.ok()) << copied;
  const float expected = static_cast<float>(n() * (n() - 1) / 2);
  for (int64_t i = 0; i < out.NumElements(); ++i) EXPECT_EQ(ReadAsDouble(out.Ref(), i), expected);
  copied = session_->CopyFromWorker0(&out, gathered);
  ASSERT_TRUE(copied.ok()) << copied;
  ASSERT_EQ(out.shape, (Shape{4 * n(), 3}));
  for (int64_t i = 0; i < out.NumElements(); ++i) EXPECT_EQ(ReadAsDouble(out.Ref(), i), i / 12);

  for (int w = 0; w < n(); ++w) {
    absl::StatusOr<Value> v = from0.DebugGetFromRemote(w);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(ReadAsDouble(std::get<HostTensor>(v->v).Ref(), 1), 7) << "worker " << w << " has not worker 0's";
  }

  DRef memory = Call("vdev.ipc.alloc", 64);
  Call("vdev.ipc.write", memory, Call("vdev.tensor.full", Shape{4}, "i32", me));
  Call("vdev.ccl.barrier");
  DRef peer = Call("vdev.ipc.read", memory, Call("test.next_worker"), "i32", Shape{4});
  for (int w = 0; w < n(); ++w) {
    absl::StatusOr<Value> v = peer.DebugGetFromRemote(w);
    ASSERT_TRUE(v.ok()) << v.status();
    const HostTensor& t = std::get<HostTensor>(v->v);
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(ReadAsDouble(t.Ref(), i), (w + 1) % n()) << "worker " << w;
  }
  std::vector<pid_t> pids = session_->worker_pids();
  ASSERT_TRUE(session_->Shutdown().ok());
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
  EXPECT_FALSE(PathExists(dir)) << dir;
  for (pid_t pid : pids) EXPECT_FALSE(ProcessAlive(pid)) << pid;
  EXPECT_TRUE(absl::IsFailedPrecondition(session_->SyncWorker(0)));
}

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (Backend b : {Backend::kThreaded, Backend::kProcess}) {
    for (int n : {1, 2, 4, 8}) out.push_back({b, n});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(BothBackends, SessionTest, ::testing::ValuesIn(AllParams()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return absl::StrCat(BackendName(info.param.backend), info.param.n);
                         });

}  // namespace
}  // namespace vdev::testing
