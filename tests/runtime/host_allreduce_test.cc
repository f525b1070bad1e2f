// The host all-reduce across 2..8 real worker processes: exact sums, odd and tiny sizes, identical
// results on every worker, inputs intact, 10,000 back-to-back calls, dead and missing peers.
#include <signal.h>

#include <cstring>
#include <random>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/allreduce_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using testing::AllReduceCase;
using testing::AllReduceCaseName;
using testing::ExpectAllOk;
using testing::HalfInput;
using testing::HalfSum;
using testing::HarnessOptions;
using ::testing::HasSubstr;
using testing::Input;
using testing::LeftoverSegments;
using testing::RunWorkers;
using testing::UniqueSessionId;
using testing::WorkerResult;
using testing::WorkerSignal;

template <typename T>
absl::Status RunAndCheck(PeerGroup& s, IPCMemory& ws, size_t count, DataType type, AllReduceAlgorithm algo,
                         uint64_t salt, bool in_place) {
  std::vector<T> in(count), out(count, static_cast<T>(-7));
  for (size_t i = 0; i < count; ++i) in[i] = Input<T>(s.rank(), i, salt);
  const std::vector<T> original = in;
  T* dst = in_place ? in.data() : out.data();
  VDEV_RETURN_IF_ERROR(HostAllReduce(s, ws, in.data(), dst, count, type, algo));
  for (size_t i = 0; i < count; ++i) {
    T want = 0;
    for (int r = 0; r < s.world_size(); ++r) want += Input<T>(r, i, salt);
    if (dst[i] != want) {
      return absl::InternalError(
          absl::StrCat(AlgorithmName(algo), " count ", count, " element ", i, ": got ", dst[i], " want ", want));
    }
  }
  if (!in_place && in != original) return absl::InternalError("input modified");
  return absl::OkStatus();
}

class HostAllReduceTest : public ::testing::TestWithParam<AllReduceCase> {};

TEST_P(HostAllReduceTest, ExactSumsForEveryTypeAndAwkwardSize) {
  const AllReduceCase c = GetParam();
  const std::string id = UniqueSessionId();
  ExpectAllOk(RunWorkers(c.world, id, [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t max_count = 5000;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws, alloc->Allocate(AllReduceWorkspaceBytes(
                                              AllReduceAlgorithm::kAuto, s.world_size(), max_count, DataType::kF64)));
    const size_t counts[] = {1,
                             2,
                             3,
                             static_cast<size_t>(s.world_size() - 1),
                             static_cast<size_t>(s.world_size() + 1),
                             7,
                             31,
                             1000,
                             1023,
                             4097,
                             max_count};
    uint64_t salt = 0;
    for (size_t count : counts) {
      for (bool in_place : {false, true}) {
        ++salt;
        VDEV_RETURN_IF_ERROR(RunAndCheck<float>(s, *ws, count, DataType::kF32, c.algorithm, salt, in_place));
        VDEV_RETURN_IF_ERROR(RunAndCheck<double>(s, *ws, count, DataType::kF64, c.algorithm, salt, in_place));
        VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *ws, count, DataType::kI32, c.algorithm, salt, in_place));
      }
    }
    return absl::OkStatus();
  }));
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
}

TEST_P(HostAllReduceTest, NonIntegerSumsAreBitwiseIdenticalOnEveryWorker) {
  const AllReduceCase c = GetParam();
  ExpectAllOk(RunWorkers(c.world, UniqueSessionId(), [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t count = 3001;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws,
                          alloc->Allocate(AllReduceWorkspaceBytes(c.algorithm, s.world_size(), count, DataType::kF32)));
    std::mt19937 rng(1234 + s.rank());
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> in(count), out(count);
    for (float& v : in) v = dist(rng) * 1e3f;
    VDEV_RETURN_IF_ERROR(HostAllReduce(s, *ws, in.data(), out.data(), count, DataType::kF32, c.algorithm));
    std::string bytes(reinterpret_cast<const char*>(out.data()), count * sizeof(float));
    std::vector<std::string> all;
    VDEV_RETURN_IF_ERROR(s.AllGather("result", bytes, &all));
    for (const std::string& other : all) {
      if (other != bytes) return absl::InternalError("results differ between workers");
    }
    return absl::OkStatus();
  }));
}

// f16 and bf16 sum in f32 in rank order and round once at the end: the exact bits of HalfSum on
// every worker, in place or not, and (for 3 or more workers) unlike rounding after each addition.
TEST_P(HostAllReduceTest, HalfTypesSumInF32AndRoundOnce) {
  const AllReduceCase c = GetParam();
  ExpectAllOk(RunWorkers(c.world, UniqueSessionId(), [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t count = 4099;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws, alloc->Allocate(AllReduceWorkspaceBytes(
                                              AllReduceAlgorithm::kAuto, s.world_size(), count, DataType::kF16)));
    uint64_t salt = 0;
    for (DataType type : {DataType::kF16, DataType::kBF16}) {
      for (bool in_place : {false, true}) {
        ++salt;
        std::vector<uint16_t> in(count), out(count, 0xFFFF);
        for (size_t i = 0; i < count; ++i) in[i] = HalfInput(type, s.rank(), i, salt);
        uint16_t* dst = in_place ? in.data() : out.data();
        VDEV_RETURN_IF_ERROR(HostAllReduce(s, *ws, in.data(), dst, count, type, c.algorithm));
        size_t differs_from_stepwise = 0;
        for (size_t i = 0; i < count; ++i) {
          if (dst[i] != HalfSum(type, s.world_size(), i, salt))
            return absl::InternalError(absl::StrCat(DataTypeName(type), " element ", i, ": got 0x", absl::Hex(dst[i]),
                                                    " want 0x", absl::Hex(HalfSum(type, s.world_size(), i, salt))));
          differs_from_stepwise += dst[i] != HalfSum(type, s.world_size(), i, salt, /*round_each_step=*/true);
        }
        if (s.world_size() >= 3 && differs_from_stepwise == 0)
          return absl::InternalError("the inputs do not tell one rounding from rounding each step");
      }
    }
    return absl::OkStatus();
  }));
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, HostAllReduceTest,
    ::testing::Values(AllReduceCase{2, AllReduceAlgorithm::kOneShot}, AllReduceCase{2, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{3, AllReduceAlgorithm::kOneShot}, AllReduceCase{3, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{3, AllReduceAlgorithm::kOneShotLL128},
                      AllReduceCase{3, AllReduceAlgorithm::kOneShotSentinel},
                      AllReduceCase{4, AllReduceAlgorithm::kAuto}, AllReduceCase{4, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{5, AllReduceAlgorithm::kTwoShot}, AllReduceCase{7, AllReduceAlgorithm::kOneShot},
                      AllReduceCase{8, AllReduceAlgorithm::kOneShot}, AllReduceCase{8, AllReduceAlgorithm::kTwoShot}),
    AllReduceCaseName);

TEST(HostAllReduceStressTest, TenThousandBackToBackCallsWithRandomSizes) {
  const std::string id = UniqueSessionId();
  ExpectAllOk(RunWorkers(3, id, [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t max_count = 300;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws, alloc->Allocate(AllReduceWorkspaceBytes(
                                              AllReduceAlgorithm::kAuto, s.world_size(), max_count, DataType::kI32)));
    std::mt19937 rng(99);  // the same sequence of sizes on every worker
    std::vector<int32_t> in(max_count), out(max_count);
    for (int call = 0; call < 10000; ++call) {
      const size_t count = 1 + rng() % max_count;
      const AllReduceAlgorithm algo = rng() % 2 ? AllReduceAlgorithm::kOneShot : AllReduceAlgorithm::kTwoShot;
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(call * 31 + i) * (s.rank() + 1);
      VDEV_RETURN_IF_ERROR(HostAllReduce(s, *ws, in.data(), out.data(), count, DataType::kI32, algo));
      const int32_t factor = s.world_size() * (s.world_size() + 1) / 2;
      for (size_t i = 0; i < count; ++i) {
        if (out[i] != static_cast<int32_t>(call * 31 + i) * factor) {
          return absl::InternalError(absl::StrCat("call ", call, " count ", count, " element ", i, " wrong"));
        }
      }
    }
    return absl::OkStatus();
  }));
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
}

TEST(HostAllReduceFailureTest, WorkerKilledMidCallMakesTheOthersFailLongBeforeTheTimeout) {
  const std::string id = UniqueSessionId();
  HarnessOptions options;
  options.timeout = absl::Seconds(120);  // the dead peer must be noticed long before this
  std::vector<WorkerResult> results = RunWorkers(
      4, id,
      [](PeerGroup& s) -> absl::Status {
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
        const size_t count = 100000;
        VDEV_ASSIGN_OR_RETURN(
            IPCMemory * ws, alloc->Allocate(AllReduceWorkspaceBytes(AllReduceAlgorithm::kTwoShot, s.world_size(), count,
                                                                    DataType::kF32)));
        std::vector<float> in(count, 1.0f), out(count);
        for (int call = 0;; ++call) {
          if (call == 20 && s.rank() == 2) raise(SIGKILL);  // after pushing into some peers last call
          absl::Time start = absl::Now();
          absl::Status st =
              HostAllReduce(s, *ws, in.data(), out.data(), count, DataType::kF32, AllReduceAlgorithm::kTwoShot);
          if (!st.ok()) {
            testing::ReportSeconds(absl::ToDoubleSeconds(absl::Now() - start));
            return st;
          }
        }
      },
      options);
  EXPECT_EQ(results[2].signal, SIGKILL);
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(results[r].exit_code, 1);
    EXPECT_THAT(results[r].message, HasSubstr("worker 2 (pid"));
    EXPECT_LT(results[r].seconds, 60.0);  // half the timeout: noticed, not timed out
  }
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
}

TEST(HostAllReduceFailureTest, PeerThatNeverCallsIsATimeoutNamingIt) {
  WorkerSignal rank0_done;
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [&](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(
        IPCMemory * ws, alloc->Allocate(AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShot, 2, 16, DataType::kF32)));
    if (s.rank() == 1) {
      rank0_done.Wait();  // alive, but never joins the all-reduce
      return absl::OkStatus();
    }
    s.set_timeout(absl::Milliseconds(300));
    std::vector<float> in(16, 1.0f), out(16);
    absl::Status status =
        HostAllReduce(s, *ws, in.data(), out.data(), 16, DataType::kF32, AllReduceAlgorithm::kOneShot);
    rank0_done.Notify();
    return status;
  });
  EXPECT_EQ(results[0].exit_code, 1);
  EXPECT_THAT(results[0].message, HasSubstr("worker 1"));
  EXPECT_THAT(results[0].message, HasSubstr("did not arrive within 300ms"));
}

TEST(HostAllReduceFailureTest, TooSmallWorkspaceIsRejected) {
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws, alloc->Allocate(64));
    std::vector<float> in(1000), out(1000);
    absl::Status st = HostAllReduce(s, *ws, in.data(), out.data(), 1000, DataType::kF32, AllReduceAlgorithm::kOneShot);
    return st.code() == absl::StatusCode::kInvalidArgument ? absl::OkStatus() : absl::InternalError(st.ToString());
  }));
}

TEST(HostAllReduceFailureTest, CountWhoseBytesOverflowIsRejectedBeforeAnyCopy) {
  // (2^62 + 1000) f32 make 2^64 + 4000 bytes: 4000 once wrapped, which a 1 MiB workspace "fits".
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * ws, alloc->Allocate(size_t{1} << 20));
    std::vector<float> in(1000), out(1000);
    for (size_t count : {(size_t{1} << 62) + 1000, SIZE_MAX, kMaxAllReduceBytes / 4 + 1}) {
      for (AllReduceAlgorithm algo :
           {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot}) {
        absl::Status st = HostAllReduce(s, *ws, in.data(), out.data(), count, DataType::kF32, algo);
        if (st.code() != absl::StatusCode::kInvalidArgument) {
          return absl::InternalError(absl::StrCat("count ", count, ": ", st.ToString()));
        }
      }
    }
    return absl::OkStatus();
  }));
}

TEST(AllReduceWorkspaceBytesTest, CountsThatCannotBeReducedNeedMoreThanAnyAllocation) {
  for (AllReduceAlgorithm algo : {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot,
                                  AllReduceAlgorithm::kOneShotLL, AllReduceAlgorithm::kTwoShotLL,
                                  AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotSentinel}) {
    EXPECT_EQ(AllReduceWorkspaceBytes(algo, 8, (size_t{1} << 62) + 1000, DataType::kF32), SIZE_MAX);
    EXPECT_EQ(AllReduceWorkspaceBytes(algo, 8, kMaxAllReduceBytes / 2 + 1, DataType::kBF16), SIZE_MAX);
    EXPECT_EQ(AllReduceWorkspaceBytes(algo, 0, 16, DataType::kF32), SIZE_MAX);
    // At the limit itself the sizes are exact (not wrapped): at least the data, twice (two halves).
    EXPECT_GE(AllReduceWorkspaceBytes(algo, 8, kMaxAllReduceBytes / 4, DataType::kF32), kMaxAllReduceBytes)
        << AlgorithmName(algo);
  }
  EXPECT_FALSE(AllReduceBytes((size_t{1} << 62) + 1000, DataType::kF32).ok());
  EXPECT_EQ(AllReduceBytes(1000, DataType::kF64).value_or(0), 8000u);
}

}  // namespace
}  // namespace vdev
