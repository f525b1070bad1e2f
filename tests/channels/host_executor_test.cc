// The host executor across 2..8 real worker processes: every shipped plan exact at odd sizes, the
// ordering of every primitive over many executions, LL packets under flag reuse, bounded waits.
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "channels/host_run_check.h"
#include "channels/port_and_memory_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "internal/layout.h"
#include "internal/packet_sweep.h"
#include "runtime/allreduce_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::RunAndCheck;
using vdev::testing::ExpectAllOk;
using vdev::testing::HalfInput;
using vdev::testing::HalfSum;
using vdev::testing::Input;
using vdev::testing::RunWorkers;
using vdev::testing::UniqueSessionId;
using vdev::testing::WorkerResult;
using vdev::testing::WorkerSignal;

class ShippedPlansTest : public ::testing::TestWithParam<int> {};

TEST_P(ShippedPlansTest, ExactAtOddSizesInEveryType) {
  const int world = GetParam();
  ExpectAllOk(RunWorkers(world, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const size_t n = s.world_size();
    const size_t counts[] = {0, 1, 2, 3, n - 1, n + 1, 7, 31, 257, 1001};
    uint64_t salt = 0;
    for (const std::string& name : ShippedPlanNames()) {
      VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
      const bool same_size = InputSegments(plan.collective, n) == OutputSegments(plan.collective, n);
      for (DataType type : {DataType::kF32, DataType::kI32, DataType::kF64}) {
        VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 1001, type));
        for (size_t count : counts) {
          ++salt;
          const bool in_place = same_size && salt % 2 == 0;
          if (type == DataType::kF32) VDEV_RETURN_IF_ERROR(RunAndCheck<float>(s, *exec, count, salt, in_place));
          if (type == DataType::kI32) VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, count, salt, in_place));
          if (type == DataType::kF64) VDEV_RETURN_IF_ERROR(RunAndCheck<double>(s, *exec, count, salt, in_place));
        }
      }
    }
    return absl::OkStatus();
  }));
}

TEST_P(ShippedPlansTest, InstancesSplitEveryOpExactly) {
  const int world = GetParam();
  ExpectAllOk(RunWorkers(world, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    uint64_t salt = 100;
    for (const std::string& name : ShippedPlanNames()) {
      VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
      VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 4099, DataType::kF32, 3));
      for (size_t count : {size_t{5}, size_t{48}, size_t{4099}}) {
        VDEV_RETURN_IF_ERROR(RunAndCheck<float>(s, *exec, count, ++salt, false));
      }
    }
    return absl::OkStatus();
  }));
}

// What rank `rank`'s f16/bf16 output element i must be (bits): a sum is the f32 sum of every
// rank's value in rank order rounded once (HalfSum), as the all-reduce backends compute it.
uint16_t ExpectedHalf(const ProgramSpec& plan, DataType type, int rank, size_t i, size_t count, uint64_t salt) {
  const int n = plan.world_size;
  switch (plan.collective) {
    case Collective::kAllReduce: return HalfSum(type, n, i, salt);
    case Collective::kReduceScatter: return HalfSum(type, n, rank * count + i, salt);
    case Collective::kAllGather: return HalfInput(type, static_cast<int>(i / count), i % count, salt);
    case Collective::kBroadcast: return HalfInput(type, plan.root, i, salt);
  }
  return 0;
}

// f16 and bf16 through every shipped plan: each sum in f32, rounded once (not after each addition,
// which the inputs tell apart from 3 ranks on), odd sizes and 3 instances included.
TEST_P(ShippedPlansTest, HalfTypesSumInF32AndRoundOnce) {
  const int world = GetParam();
  ExpectAllOk(RunWorkers(world, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    const int n = s.world_size();
    uint64_t salt = 0;
    for (const std::string& name : ShippedPlanNames()) {
      VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, n));
      for (DataType type : {DataType::kF16, DataType::kBF16}) {
        for (int instances : {1, 3}) {
          VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 1001, type, instances));
          size_t differs_from_stepwise = 0;
          for (size_t count : {size_t{1}, size_t{7}, size_t{1001}}) {
            ++salt;
            const size_t in_n = count * InputSegments(plan.collective, n);
            const size_t out_n = count * OutputSegments(plan.collective, n);
            std::vector<uint16_t> in(in_n), out(out_n, 0xFFFF);
            for (size_t i = 0; i < in_n; ++i) in[i] = HalfInput(type, s.rank(), i, salt);
            VDEV_RETURN_IF_ERROR(exec->Execute(in.data(), out.data(), count));
            for (size_t i = 0; i < out_n; ++i) {
              const uint16_t want = ExpectedHalf(plan, type, s.rank(), i, count, salt);
              if (out[i] != want) {
                return absl::InternalError(absl::StrCat(name, " ", DataTypeName(type), " count ", count, " element ", i,
                                                        ": got 0x", absl::Hex(out[i]), " want 0x", absl::Hex(want)));
              }
              const bool sums = plan.collective == Collective::kAllReduce;
              differs_from_stepwise += sums && out[i] != HalfSum(type, n, i, salt, /*round_each_step=*/true);
            }
          }
          if (n >= 3 && plan.collective == Collective::kAllReduce && differs_from_stepwise == 0) {
            return absl::InternalError(
                absl::StrCat(name, ": the inputs do not tell one rounding from rounding each step"));
          }
        }
      }
    }
    return absl::OkStatus();
  }));
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShippedPlansTest, ::testing::Range(2, 9),
                         [](const ::testing::TestParamInfo<int>& info) { return absl::StrCat("world", info.param); });

// Builds one small program per primitive; each moves rank 0's input to the other ranks' outputs.
struct Primitive {
  std::string name;
  int world;
  std::function<void(Program&)> build;
};

std::vector<Primitive> Primitives() {
  std::vector<Primitive> all;
  // put, then signal (data sync before), wait (after), local copy; acknowledged.
  all.push_back({"put", 2, [](Program& p) {
                   MemoryChannel a = p.AddMemoryChannel(1, 0), b = p.AddMemoryChannel(0, 1);
                   p.Copy(0, p.Output(0, 0), p.Input(0, 0));
                   a.Put(0, p.Scratch(1, 0), p.Input(0, 0));
                   a.Signal(0);
                   b.Wait(0);
                   p.Copy(0, p.Output(1, 0), p.Scratch(1, 0));
                   b.Signal(0);
                   a.Wait(0);
                 }});
  // get: rank 1 reads rank 0's input directly once rank 0 signalled it, then releases it.
  all.push_back({"get", 2, [](Program& p) {
                   MemoryChannel a = p.AddMemoryChannel(1, 0), b = p.AddMemoryChannel(0, 1);
                   p.Copy(0, p.Output(0, 0), p.Input(0, 0));
                   a.Signal(0);
                   b.Wait(0);
                   b.Get(0, p.Output(1, 0), p.Input(0, 0));
                   b.Signal(0);
                   a.Wait(0);
                 }});
  // port put + flush, then a port signal; the receiver acknowledges through the reverse port channel.
  all.push_back({"port_put_flush_signal", 2, [](Program& p) {
                   PortChannel a = p.AddPortChannel(1, 0);
                   PortChannel b = p.AddPortChannel(0, 1);
                   p.Copy(0, p.Output(0, 0), p.Input(0, 0));
                   a.Put(0, p.Scratch(1, 0), p.Input(0, 0));
                   a.Flush(0);
                   a.Signal(0);
                   b.Wait(0);
                   p.Copy(0, p.Output(1, 0), p.Scratch(1, 0));
                   b.Signal(0);
                   a.Wait(0);
                 }});
  // put_with_signal_and_flush straight into the peer's output (the ack keeps the next one back).
  all.push_back({"port_put_with_signal_and_flush", 2, [](Program& p) {
                   PortChannel a = p.AddPortChannel(1, 0), b = p.AddPortChannel(0, 1);
                   p.Copy(0, p.Output(0, 0), p.Input(0, 0));
                   b.Signal(0, Sync::kNone);
                   a.Wait(0);
                   a.PutWithSignalAndFlush(0, p.Output(1, 0), p.Input(0, 0));
                   b.Wait(0);
                 }});
  // Port and memory channels on one tag, each kind counting in semaphores of its own.
  all.push_back({"port_and_memory_channels_on_one_tag", 2, testing::AddPortAndMemoryChannelsOnOneTag});
  // read_put_packets along a chain 0 -> 1 -> 2; everyone unpacks into its output.
  all.push_back({"read_put_packets", 3, [](Program& p) {
                   MemoryChannel a = p.AddMemoryChannel(1, 0), b = p.AddMemoryChannel(2, 1);
                   MemoryChannel ack1 = p.AddMemoryChannel(0, 1, 1), ack2 = p.AddMemoryChannel(1, 2, 1);
                   p.Copy(0, p.Output(0, 0), p.Input(0, 0));
                   a.PutPackets(0, p.Scratch(1, 0), p.Input(0, 0));
                   b.ReadPutPackets(0, p.Scratch(2, 0), p.Scratch(1, 0));
                   p.Copy(0, p.Output(1, 0), p.Scratch(1, 0).AsPackets());
                   p.Copy(0, p.Output(2, 0), p.Scratch(2, 0).AsPackets());
                   // Acknowledgements keep rank 0 (and 1) from lapping a slower reader.
                   ack2.Signal(0);
                   ack1.Signal(0);
                   MemoryChannel w0 = p.AddMemoryChannel(1, 0, 1), w1 = p.AddMemoryChannel(2, 1, 1);
                   w1.Wait(0);
                   w0.Wait(0);
                 }});
  return all;
}

TEST(HostExecutorTest, EveryPrimitiveOrdersItsDataOverManyExecutions) {
  for (const Primitive& prim : Primitives()) {
    SCOPED_TRACE(prim.name);
    Program p(prim.name, Collective::kBroadcast, prim.world, 1, 1);
    prim.build(p);
    absl::StatusOr<ProgramSpec> plan = std::move(p).Build();
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectAllOk(RunWorkers(prim.world, UniqueSessionId(), [&plan](PeerGroup& s) -> absl::Status {
      VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
      VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, *plan, 4096, DataType::kI32));
      for (uint64_t round = 1; round <= 1000; ++round) {
        VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, 1 + round * 37 % 4096, round, false));
      }
      return absl::OkStatus();
    }));
  }
}

TEST(HostExecutorTest, PacketsStayExactUnderFlagReuseOver10000Executions) {
  ExpectAllOk(RunWorkers(3, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan("one_shot_ll", s.world_size()));
    VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 64, DataType::kI32));
    // Sizes vary, so an execution reads lines the previous use of its half left longer or shorter.
    for (uint64_t round = 1; round <= 10000; ++round) {
      VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, 1 + (round * 13) % 64, round, false));
    }
    if (exec->executions() != 10000) return absl::InternalError("executions not counted");
    return absl::OkStatus();
  }));
}

// Two LL executions of 600 elements (1: half 1, 2: half 0) leave lines in both scratch halves;
// 3-element executions up to number 2 * kPacketSweepEvery + 1 then sweep slice 1 of each half
// (executions 2 * kPacketSweepEvery and + 1): every byte of it that the small executions do not
// touch reads zero — among them some the large ones wrote — while the large executions' lines
// beyond slice 1 are still there, and every execution is exact.
TEST(HostExecutorTest, StalePacketLinesAreZeroedSliceBySlice) {
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan("one_shot_ll", s.world_size()));
    const size_t max_count = 1 << 14, large = 600, small = 3;  // slice 1 of a half: bytes 4112..8224
    VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, max_count, DataType::kI32));
    VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, large, 1, false));
    VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, large, 2, false));
    while (exec->executions() < 2 * internal::kPacketSweepEvery + 1) {
      VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, small, exec->executions(), false));
    }
    VDEV_RETURN_IF_ERROR(s.Barrier("executions done"));  // no peer writes into this region any more
    const internal::RegionLayout layout =
        internal::MakeRegionLayout(max_count, 4, 1, 1, plan.chunks_per_segment, plan.scratch_chunks);
    const std::vector<ChunkRef> spares = internal::SweptScratchSpares(plan, s.rank());
    auto spans_of = [&](size_t count) { return internal::SpareSpans(spares, count, plan.chunks_per_segment, 4); };
    auto in = [](const std::vector<internal::Range>& spans, uint64_t b) {
      return std::any_of(spans.begin(), spans.end(),
                         [&](const internal::Range& r) { return r.begin <= b && b < r.end; });
    };
    const std::vector<internal::Range> small_spans = spans_of(small), large_spans = spans_of(large);
    const char* region = static_cast<const char*>(exec->region().remote_data[s.rank()]);
    for (int parity = 0; parity < 2; ++parity) {
      const char* half = region + layout.scratch[parity];
      const internal::Range swept =
          internal::PacketSweepSlice(2 * internal::kPacketSweepEvery + parity, layout.scratch[1] - layout.scratch[0]);
      size_t dirty = 0, cleared = 0, beyond = 0, kept = 0;
      for (uint64_t b = swept.begin; b < swept.end; ++b) {
        if (in(small_spans, b)) continue;
        dirty += half[b] != 0;
        cleared += in(large_spans, b);
      }
      for (const internal::Range& r : large_spans) {
        for (uint64_t b = std::max(r.begin, swept.end); b < r.end; ++b) {
          ++beyond;
          kept += half[b] != 0;
        }
      }
      if (dirty != 0 || cleared == 0 || (beyond > 0 && kept == 0)) {
        return absl::InternalError(absl::StrCat("half ", parity, " slice [", swept.begin, ", ", swept.end, "): ", dirty,
                                                " unspared bytes not zeroed, ", cleared, " of the large executions' ",
                                                "bytes in it; ", kept, " of ", beyond, " large bytes beyond it kept"));
      }
    }
    return absl::OkStatus();
  }));
}

// Rank 1 creates its executor but never executes: rank 0's wait must end with an error naming it.
void ExpectTimeoutNamed(const std::string& plan_name, const std::vector<std::string>& parts) {
  WorkerSignal rank0_done;
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [&](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(plan_name, 2));
    VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 16, DataType::kF32));
    if (s.rank() == 1) {
      rank0_done.Wait();  // alive, but never executing
      return absl::OkStatus();
    }
    s.set_timeout(absl::Milliseconds(300));
    std::vector<float> in(16, 1.0f), out(16);
    absl::Status status = exec->Execute(in.data(), out.data(), 16);
    rank0_done.Notify();
    return status;
  });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_NE(results[0].exit_code, 0);
  for (const std::string& part : parts) EXPECT_THAT(results[0].message, HasSubstr(part));
  EXPECT_EQ(results[1].exit_code, 0) << results[1].message;
}

TEST(HostExecutorTest, WaitThatTimesOutNamesRankThreadBlockAndOp) {
  ExpectTimeoutNamed("one_shot", {"plan one_shot execution #1: rank 0 tb 0 op 1 (wait)",
                                  "waiting for signal #1 of this execution from rank 1", "within 300ms"});
}

TEST(HostExecutorTest, PacketsThatNeverComeTimeOutNamingThePeer) {
  ExpectTimeoutNamed("one_shot_ll", {"plan one_shot_ll execution #1: rank 0 tb 0 op 1 (reduce)",
                                     "waiting for packets from rank 1", "within 300ms"});
}

// A peer that finished its executions and exited has written every packet it ever will: a reader
// still waiting for another rank's packets must go on waiting for that rank, not give up because
// the finished one is gone. Here rank 2 runs one execution and exits; rank 0 stays alive but never
// starts execution 2; rank 1's execution 2 waits first for rank 0's packets.
TEST(HostExecutorTest, APeerThatFinishedAndExitedDoesNotEndAWaitForAnotherWritersPackets) {
  WorkerSignal rank1_done;
  std::vector<WorkerResult> results = RunWorkers(3, UniqueSessionId(), [&](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan("one_shot_ll", 3));
    VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 16, DataType::kI32));
    VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, 16, 1, false));
    if (s.rank() == 2) return absl::OkStatus();
    if (s.rank() == 0) {
      rank1_done.Wait();  // alive, but never executing again
      return absl::OkStatus();
    }
    while (s.CheckAlive(2).ok()) sched_yield();  // rank 2 has exited
    s.set_timeout(absl::Milliseconds(300));
    absl::Status second = RunAndCheck<int32_t>(s, *exec, 16, 2, false);
    rank1_done.Notify();
    return second;
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].exit_code, 0) << results[0].message;
  EXPECT_EQ(results[2].exit_code, 0) << results[2].message;
  EXPECT_NE(results[1].exit_code, 0);
  EXPECT_THAT(results[1].message, AllOf(HasSubstr("plan one_shot_ll execution #2: rank 1 tb 0 op 2 (reduce)"),
                                        HasSubstr("waiting for packets from rank 0: nothing came within 300ms")));
}

TEST(HostExecutorTest, RefusesAPlanForAnotherWorldSizeAndOversizedCalls) {
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    absl::StatusOr<std::unique_ptr<HostPlanExecutor>> wrong =
        HostPlanExecutor::Create(s, *alloc, *ShippedPlan("one_shot", 3), 16, DataType::kF32);
    if (wrong.ok() || !absl::StrContains(wrong.status().message(), "is for 3 ranks; the session has 2")) {
      return absl::InternalError(absl::StrCat("world size: ", wrong.status().ToString()));
    }
    // A region for (2^62 + 16) f32 per segment wrapped around to a few hundred bytes.
    for (size_t huge : {(size_t{1} << 62) + 16, SIZE_MAX, HostPlanExecutor::kMaxSegmentBytes / 4 + 1}) {
      absl::Status st = HostPlanExecutor::Create(s, *alloc, *ShippedPlan("one_shot", 2), huge, DataType::kF32).status();
      if (st.code() != absl::StatusCode::kInvalidArgument ||
          !absl::StrContains(st.message(), "limited to 2^40 bytes")) {
        return absl::InternalError(absl::StrCat("max_count ", huge, ": ", st.ToString()));
      }
    }
    VDEV_ASSIGN_OR_RETURN(auto exec,
                          HostPlanExecutor::Create(s, *alloc, *ShippedPlan("one_shot", 2), 16, DataType::kF32));
    std::vector<float> buf(17);
    absl::Status big = exec->Execute(buf.data(), buf.data(), 17);
    if (big.ok() || !absl::StrContains(big.message(), "at most 16")) {
      return absl::InternalError(absl::StrCat("oversized: ", big.ToString()));
    }
    return absl::OkStatus();
  }));
}

TEST(HostExecutorTest, StrategyNameSelectsAShippedPlan) {
  ExpectAllOk(RunWorkers(3, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::ForStrategy(s, *alloc, "plan:two_shot", 100, DataType::kF32));
    if (exec->plan().name != "two_shot") return absl::InternalError(exec->plan().name);
    VDEV_RETURN_IF_ERROR(RunAndCheck<float>(s, *exec, 100, 5, false));
    absl::Status unknown = HostPlanExecutor::ForStrategy(s, *alloc, "plan:nope", 100, DataType::kF32).status();
    if (unknown.code() != absl::StatusCode::kNotFound) return absl::InternalError(unknown.ToString());
    absl::Status bad = HostPlanExecutor::ForStrategy(s, *alloc, "two_shot", 100, DataType::kF32).status();
    if (bad.code() != absl::StatusCode::kInvalidArgument) return absl::InternalError(bad.ToString());
    // Not an all-reduce: refused, not run as one.
    absl::Status gather = HostPlanExecutor::ForStrategy(s, *alloc, "plan:all_gather", 100, DataType::kF32).status();
    if (gather.code() != absl::StatusCode::kInvalidArgument ||
        !absl::StrContains(gather.message(),
                           "plan all_gather is an allgather, not an allreduce (allreduce plans: "
                           "one_shot, one_shot_push, two_shot, one_shot_ll)")) {
      return absl::InternalError(gather.ToString());
    }
    return absl::OkStatus();
  }));
}

}  // namespace
}  // namespace vdev::channels
