// The host zero-copy all-reduce (input already in IPC memory) across 2..8 real worker processes:
// exact sums, odd sizes, inputs intact, and back-to-back calls whose "producer" rewrites the input
// (and whose "consumer" scribbles over the output) the moment a call returns — a worker that left
// before its peers finished reading would hand them the next call's values.
#include <algorithm>
#include <random>

#include "absl/strings/match.h"
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
using ::testing::HasSubstr;
using testing::Input;
using testing::LeftoverSegments;
using testing::RunWorkers;
using testing::UniqueSessionId;
using testing::WorkerResult;

// The producer: writes this worker's input for call `salt` straight into IPC memory.
template <typename T>
void Produce(const IPCBuffer& in, size_t count, int rank, uint64_t salt) {
  T* p = static_cast<T*>(in.Local());
  for (size_t i = 0; i < count; ++i) p[i] = Input<T>(rank, i, salt);
}

template <typename T>
absl::Status CallAndCheck(PeerGroup& s, const IPCBuffer& in, const IPCBuffer& out, size_t count, DataType type,
                          AllReduceAlgorithm algo, uint64_t salt) {
  VDEV_RETURN_IF_ERROR(HostAllReduceZeroCopy(s, in, out, count, type, algo));
  const T* got = static_cast<const T*>(out.Local());
  const T* kept = static_cast<const T*>(in.Local());
  for (size_t i = 0; i < count; ++i) {
    T want = 0;
    for (int r = 0; r < s.world_size(); ++r) want += Input<T>(r, i, salt);
    if (got[i] != want) {
      return absl::InternalError(absl::StrCat(AlgorithmName(algo), " ", DataTypeName(type), " count ", count, " call ",
                                              salt, " element ", i, ": got ", got[i], " want ", want));
    }
    if (kept[i] != Input<T>(s.rank(), i, salt)) return absl::InternalError("input modified");
  }
  return absl::OkStatus();
}

class ZeroCopyAllReduceTest : public ::testing::TestWithParam<AllReduceCase> {};

TEST_P(ZeroCopyAllReduceTest, ExactSumsOddSizesInputsIntact) {
  const AllReduceCase c = GetParam();
  const std::string id = UniqueSessionId();
  ExpectAllOk(RunWorkers(c.world, id, [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t max_count = 5003;
    // Input and output in one allocation, as a planner would place two values; an odd offset of
    // 8 bytes checks that nothing assumes more alignment than the element's.
    VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(2 * max_count * sizeof(double) + 8));
    const IPCBuffer in{mem, 8}, out{mem, 8 + max_count * sizeof(double)};
    const size_t counts[] = {
        1,    2,    3,        static_cast<size_t>(s.world_size() - 1), static_cast<size_t>(s.world_size() + 1), 7, 31,
        1023, 4097, max_count};
    uint64_t salt = 0;
    for (size_t count : counts) {
      ++salt;
      Produce<float>(in, count, s.rank(), salt);
      VDEV_RETURN_IF_ERROR(CallAndCheck<float>(s, in, out, count, DataType::kF32, c.algorithm, salt));
      Produce<double>(in, count, s.rank(), salt);
      VDEV_RETURN_IF_ERROR(CallAndCheck<double>(s, in, out, count, DataType::kF64, c.algorithm, salt));
      Produce<int32_t>(in, count, s.rank(), salt);
      VDEV_RETURN_IF_ERROR(CallAndCheck<int32_t>(s, in, out, count, DataType::kI32, c.algorithm, salt));
    }
    return absl::OkStatus();
  }));
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
}

// Each call's input is rewritten by the next "producer" right after the call returns, and the output
// overwritten by a "consumer"; worker speeds vary (the rank-dependent busy work), so a missing exit
// barrier shows up as a peer summing the next call's input (or gathering a scribbled chunk).
TEST_P(ZeroCopyAllReduceTest, BackToBackCallsWithTheProducerRewritingAtOnce) {
  const AllReduceCase c = GetParam();
  ExpectAllOk(RunWorkers(c.world, UniqueSessionId(), [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t max_count = 2001;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * in_mem, alloc->Allocate(max_count * sizeof(int32_t)));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * out_mem, alloc->Allocate(max_count * sizeof(int32_t)));
    const IPCBuffer in{in_mem, 0}, out{out_mem, 0};
    std::mt19937 rng(7);  // the same sizes on every worker
    std::mt19937 jitter(100 + s.rank());
    const int calls = 4000 / s.world_size();
    Produce<int32_t>(in, max_count, s.rank(), 0);
    for (int call = 0; call < calls; ++call) {
      const size_t count = 1 + rng() % max_count;
      VDEV_RETURN_IF_ERROR(CallAndCheck<int32_t>(s, in, out, count, DataType::kI32, c.algorithm, call));
      Produce<int32_t>(in, max_count, s.rank(), call + 1);
      std::fill_n(static_cast<int32_t*>(out.Local()), max_count, -1);
      volatile uint32_t sink = 0;
      for (uint32_t spin = jitter() % 2000; spin > 0; --spin) sink = spin;
    }
    return absl::OkStatus();
  }));
}

// f16 and bf16 from IPC memory at a 2-byte offset: HalfSum's bits (f32 in rank order, one
// rounding) on every worker, input intact.
TEST_P(ZeroCopyAllReduceTest, HalfTypesSumInF32AndRoundOnce) {
  const AllReduceCase c = GetParam();
  ExpectAllOk(RunWorkers(c.world, UniqueSessionId(), [c](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t count = 3001;
    VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(2 * count * sizeof(uint16_t) + 2));
    const IPCBuffer in{mem, 2}, out{mem, 2 + count * sizeof(uint16_t)};
    uint64_t salt = 0;
    for (DataType type : {DataType::kF16, DataType::kBF16}) {
      ++salt;
      auto* mine = static_cast<uint16_t*>(in.Local());
      for (size_t i = 0; i < count; ++i) mine[i] = HalfInput(type, s.rank(), i, salt);
      VDEV_RETURN_IF_ERROR(HostAllReduceZeroCopy(s, in, out, count, type, c.algorithm));
      const auto* got = static_cast<const uint16_t*>(out.Local());
      for (size_t i = 0; i < count; ++i) {
        if (got[i] != HalfSum(type, s.world_size(), i, salt))
          return absl::InternalError(
              absl::StrCat(DataTypeName(type), " element ", i, " is not the f32 sum rounded once"));
        if (mine[i] != HalfInput(type, s.rank(), i, salt)) return absl::InternalError("input modified");
      }
    }
    return absl::OkStatus();
  }));
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ZeroCopyAllReduceTest,
    ::testing::Values(AllReduceCase{2, AllReduceAlgorithm::kOneShot}, AllReduceCase{2, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{3, AllReduceAlgorithm::kOneShot}, AllReduceCase{3, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{4, AllReduceAlgorithm::kOneShot}, AllReduceCase{4, AllReduceAlgorithm::kTwoShot},
                      AllReduceCase{4, AllReduceAlgorithm::kAuto}, AllReduceCase{8, AllReduceAlgorithm::kOneShot},
                      AllReduceCase{8, AllReduceAlgorithm::kTwoShot}),
    AllReduceCaseName);

TEST(ZeroCopyAllReduceErrorsTest, OverlapForeignMemoryAndOverrunAreRejected) {
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(4096));
    auto expect = [](absl::Status st, absl::string_view text) -> absl::Status {
      if (st.code() == absl::StatusCode::kInvalidArgument && absl::StrContains(st.message(), text)) {
        return absl::OkStatus();
      }
      return absl::InternalError(absl::StrCat("want InvalidArgument with '", text, "', got ", st.ToString()));
    };
    VDEV_RETURN_IF_ERROR(
        expect(HostAllReduceZeroCopy(s, {mem, 0}, {mem, 1024}, 512, DataType::kF32, AllReduceAlgorithm::kOneShot),
               "must not overlap"));
    VDEV_RETURN_IF_ERROR(
        expect(HostAllReduceZeroCopy(s, {mem, 0}, {mem, 3000}, 512, DataType::kF32, AllReduceAlgorithm::kOneShot),
               "does not fit"));
    VDEV_RETURN_IF_ERROR(
        expect(HostAllReduceZeroCopy(s, {nullptr, 0}, {mem, 2048}, 16, DataType::kF32, AllReduceAlgorithm::kOneShot),
               "no IPC memory"));
    return absl::OkStatus();
  }));
}

TEST(ZeroCopyAllReduceErrorsTest, PeerThatNeverCallsIsATimeoutNamingIt) {
  testing::WorkerSignal rank0_done;
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [&](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(128));
    if (s.rank() == 1) {
      rank0_done.Wait();  // alive, but never joins the all-reduce
      return absl::OkStatus();
    }
    s.set_timeout(absl::Milliseconds(300));
    absl::Status status =
        HostAllReduceZeroCopy(s, {mem, 0}, {mem, 64}, 16, DataType::kF32, AllReduceAlgorithm::kOneShot);
    rank0_done.Notify();
    return status;
  });
  EXPECT_EQ(results[0].exit_code, 1);
  EXPECT_THAT(results[0].message, HasSubstr("zero-copy entry"));
  EXPECT_THAT(results[0].message, HasSubstr("worker 1"));
}

TEST(ZeroCopyAllReduceErrorsTest, CountWhoseBytesOverflowIsRejected) {
  // (2^62 + 1000) f32 wrap around to 4000 bytes, which would pass the bounds check of a 64 KiB buffer.
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(size_t{64} << 10));
    const IPCBuffer in{mem, 0}, out{mem, size_t{32} << 10};
    for (size_t count : {(size_t{1} << 62) + 1000, SIZE_MAX}) {
      absl::Status st = HostAllReduceZeroCopy(s, in, out, count, DataType::kF32, AllReduceAlgorithm::kAuto);
      if (st.code() != absl::StatusCode::kInvalidArgument || !absl::StrContains(st.message(), "overflow")) {
        return absl::InternalError(absl::StrCat("count ", count, ": ", st.ToString()));
      }
    }
    return absl::OkStatus();
  }));
}

}  // namespace
}  // namespace vdev
