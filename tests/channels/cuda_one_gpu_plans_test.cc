// The CUDA plan executor with 2..8 ranks sharing one GPU (PlanWorld): every shipped plan exact at
// odd and large sizes (f32; f16 and bf16 with the host executor's rounding), with 1 and several
// instances, under programmatic launch (port channels through each rank's PortProxy), on the
// generic kernel and compiled for each shape (internal/compiled_plan.h); many
// executions enqueued back to back; a rank that never launches reported by rank, thread block and
// op. What it cannot check: NVLink's ordering (same-GPU traffic goes through one L2) and speed (the
// benchmark bench/channels_one_gpu_bench compares with the hand-written kernels).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "channels/plan_world.h"
#include "channels/port_and_memory_program.h"
#include "channels/remote_write_probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "internal/layout.h"
#include "runtime/allreduce_test_util.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

using testing::Cuda;
using ::testing::HasSubstr;
using testing::PlanWorld;
using vdev::testing::HalfInput;
using vdev::testing::HalfSum;
using vdev::testing::Input;

int DeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define REQUIRE_A_GPU() \
  if (DeviceCount() == 0) GTEST_SKIP() << "needs a GPU"

float Expected(const ProgramSpec& plan, int rank, size_t i, size_t count, uint64_t salt) {
  return CollectiveOutput<float>(plan, rank, i, count, [salt](int r, size_t j) { return Input<float>(r, j, salt); });
}

absl::Status FillInputs(PlanWorld& w, size_t count, uint64_t salt) {
  const ProgramSpec& plan = w.plan();
  const size_t in_n = count * InputSegments(plan.collective, plan.world_size);
  for (int r = 0; r < w.world(); ++r) {
    std::vector<float> in(in_n);
    for (size_t i = 0; i < in_n; ++i) in[i] = Input<float>(r, i, salt);
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(w.Input(r), in.data(), in_n * sizeof(float), cudaMemcpyHostToDevice)));
  }
  // A copy from pageable memory may return before its last bytes reach the device, and the ranks'
  // streams do not wait for the legacy stream: without this, a kernel now and then read the tail of
  // an input from an earlier execution (world 2, 262147 elements: 3 of 31 runs of the exactness
  // test on one H100, docs/channels.md).
  return Cuda(cudaDeviceSynchronize());
}

absl::Status CheckOutputs(PlanWorld& w, size_t count, uint64_t salt, absl::string_view what) {
  const ProgramSpec& plan = w.plan();
  const size_t out_n = count * OutputSegments(plan.collective, plan.world_size);
  for (int r = 0; r < w.world(); ++r) {
    std::vector<float> out(out_n);
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(out.data(), w.Output(r), out_n * sizeof(float), cudaMemcpyDeviceToHost)));
    for (size_t i = 0; i < out_n; ++i) {
      const float want = Expected(plan, r, i, count, salt);
      if (out[i] != want) {
        return absl::InternalError(absl::StrCat(what, " rank ", r, " element ", i, ": got ", out[i], " want ", want));
      }
    }
  }
  return absl::OkStatus();
}

// One execution on every rank, checked.
absl::Status RunOnce(PlanWorld& w, size_t count, int instances, uint64_t salt) {
  const std::string what =
      absl::StrCat(w.plan().name, " world ", w.world(), " count ", count, " instances ", instances);
  VDEV_RETURN_IF_ERROR(FillInputs(w, count, salt));
  for (int r = 0; r < w.world(); ++r) VDEV_RETURN_IF_ERROR(w.Enqueue(r, count, instances, true));
  absl::Status s = w.Synchronize();
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  return CheckOutputs(w, count, salt, what);
}

// The shipped plans these tests run: all but those named in VDEV_ONE_GPU_SKIP_PLANS (comma-separated;
// the memcheck stage leaves out the port plan, which that tool stalls with every rank in one
// process, docs/channels.md; its process-per-rank stage runs it). Each one left out is printed.
std::vector<std::string> PlansToRun() {
  const char* skip = std::getenv("VDEV_ONE_GPU_SKIP_PLANS");
  const std::vector<std::string> skipped = absl::StrSplit(skip != nullptr ? skip : "", ',', absl::SkipEmpty());
  std::vector<std::string> run;
  for (const std::string& name : ShippedPlanNames()) {
    if (std::find(skipped.begin(), skipped.end(), name) == skipped.end()) {
      run.push_back(name);
    } else {
      std::printf("plan %s left out (VDEV_ONE_GPU_SKIP_PLANS)\n", name.c_str());
    }
  }
  return run;
}

class CudaPlansOneGpuTest : public ::testing::TestWithParam<int> {};

// Packet flags repeat after 2^31 executions. Execution 1 (large) leaves packet lines in every rank's
// scratch half 1; then come the executions that sweep each slice of both halves (src/channels/
// internal/layout.h, small counts, reached by setting the epoch counters) and then execution
// 2^31 + 1, whose flag and half are execution 1's, large again, with the last rank launched 50 ms
// late: a reader that took execution 1's lines for its own would finish with their sums before
// the late rank's lines came. Without the sweep this fails.
TEST_P(CudaPlansOneGpuTest, StalePacketLinesNeverPassForNewAcrossTheFlagsPeriod) {
  REQUIRE_A_GPU();
  const int world = GetParam();
  absl::StatusOr<ProgramSpec> plan = ShippedPlan("one_shot_ll", world);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const size_t large = 50'000;
  absl::StatusOr<std::unique_ptr<PlanWorld>> w = PlanWorld::Create(*plan, large);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(RunOnce(**w, large, 2, 1).ok());
  const uint64_t period = 2 * internal::kPacketSweepEvery * internal::kPacketSweepSlices;
  for (uint64_t call = period; call < 2 * period; call += (call & 1) ? 2 * internal::kPacketSweepEvery - 1 : 1) {
    ASSERT_TRUE((*w)->SetExecutions(call - 1).ok());
    const absl::Status s = RunOnce(**w, 1 + call % 7, 1 + static_cast<int>(call % 3), call);
    ASSERT_TRUE(s.ok()) << "execution " << call << ": " << s;
  }
  ASSERT_TRUE((*w)->SetExecutions(uint64_t{1} << 31).ok());
  ASSERT_EQ(internal::PacketFlag((uint64_t{1} << 31) + 1), internal::PacketFlag(1));
  ASSERT_TRUE(FillInputs(**w, large, 2).ok());
  for (int r = 0; r < world; ++r) {
    if (r == world - 1) absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE((*w)->Enqueue(r, large, 2, true).ok());
  }
  ASSERT_TRUE((*w)->Synchronize().ok());
  const absl::Status s = CheckOutputs(**w, large, 2, "execution 2^31 + 1");
  EXPECT_TRUE(s.ok()) << s;
}

// Every shipped plan at odd sizes with 1 and 4 instances; `compiled`: the plans compiled for each
// shape (internal/compiled_plan.h; port plans stay on the generic kernel) instead of the generic kernel.
void EveryShippedPlanIsExact(int world, bool compiled) {
  // 1 MB and a ragged tail; VDEV_ONE_GPU_MAX_COUNT lowers it (the sanitizer runs).
  const char* cap = std::getenv("VDEV_ONE_GPU_MAX_COUNT");
  const size_t max_count = cap != nullptr ? std::strtoull(cap, nullptr, 10) : 262147;
  // Compiled: fewer counts, as each is a kernel of its own (~0.3 s to compile per rank).
  const std::vector<size_t> counts =
      compiled ? std::vector<size_t>{1, static_cast<size_t>(world + 1), 1001, max_count}
               : std::vector<size_t>{1, 3, static_cast<size_t>(world + 1), 1001, 4096, max_count};
  uint64_t salt = 0;
  for (const std::string& name : PlansToRun()) {
    absl::StatusOr<ProgramSpec> plan = ShippedPlan(name, world);
    ASSERT_TRUE(plan.ok()) << plan.status();
    if (compiled && !plan->port_channels.empty()) continue;
    absl::StatusOr<std::unique_ptr<PlanWorld>> w = PlanWorld::Create(*plan, max_count);
    ASSERT_TRUE(w.ok()) << w.status();
    if (compiled) {
      ASSERT_TRUE((*w)->UseCompiledKernels().ok());
      for (size_t count : counts) ASSERT_TRUE((*w)->Prepare(count, {1, 4}).ok());
    }
    for (int instances : {1, 4}) {
      absl::StatusOr<bool> fits = (*w)->Fits(instances, true, max_count);
      ASSERT_TRUE(fits.ok()) << fits.status();
      ASSERT_TRUE(*fits) << name << " world " << world << " instances " << instances;
      for (size_t count : counts) {
        absl::Status s = RunOnce(**w, count, instances, ++salt);
        ASSERT_TRUE(s.ok()) << s;
      }
    }
  }
}

TEST_P(CudaPlansOneGpuTest, EveryShippedPlanIsExact) {
  REQUIRE_A_GPU();
  EveryShippedPlanIsExact(GetParam(), /*compiled=*/false);
}

TEST_P(CudaPlansOneGpuTest, EveryShippedPlanIsExactCompiled) {
  REQUIRE_A_GPU();
  EveryShippedPlanIsExact(GetParam(), /*compiled=*/true);
}

// Executions on the generic kernel and compiled ones in turn, of varying sizes and instances, enqueued
// back to back: both keep the same epoch counters, semaphore counts, packet flags and scratch halves.
TEST_P(CudaPlansOneGpuTest, CompiledAndGenericExecutionsTakeTurns) {
  REQUIRE_A_GPU();
  const int world = GetParam();
  for (const char* name : {"one_shot_ll", "one_shot", "two_shot"}) {
    absl::StatusOr<std::unique_ptr<PlanWorld>> w = PlanWorld::Create(*ShippedPlan(name, world), 70000);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->UseCompiledKernels().ok());
    ASSERT_TRUE(FillInputs(**w, 70000, 9).ok());
    for (int call = 0; call < 60; ++call) {
      const size_t count = call == 59 ? 70000 : 1 + (call % 6) * 9973;
      (*w)->set_use_compiled(call % 2 == 1);
      for (int r = 0; r < world; ++r) ASSERT_TRUE((*w)->Enqueue(r, count, 1 + call % 3, true).ok());
    }
    absl::Status s = (*w)->Synchronize();
    ASSERT_TRUE(s.ok()) << s;
    s = CheckOutputs(**w, 70000, 9, name);
    EXPECT_TRUE(s.ok()) << s;
  }
}

// The port plan alone at small counts (some instances' parts empty) and every instance count up to
// 4, each failure reported and the next case given a fresh world (the semaphores are out of step
// after a timeout): which cases a tool that slows the kernels (compute-sanitizer) makes fail.
TEST_P(CudaPlansOneGpuTest, PortPlanAtSmallCounts) {
  REQUIRE_A_GPU();
  const int world = GetParam();
  std::unique_ptr<PlanWorld> w;
  uint64_t salt = 0;
  for (size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{8}, size_t{1001}, size_t{4096}}) {
    for (int instances : {1, 2, 3, 4}) {
      if (w == nullptr) {
        absl::StatusOr<std::unique_ptr<PlanWorld>> made =
            PlanWorld::Create(*ShippedPlan("all_gather_port", world), 4096, absl::Seconds(5));
        ASSERT_TRUE(made.ok()) << made.status();
        w = std::move(*made);
      }
      absl::Status s = RunOnce(*w, count, instances, ++salt);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) w.reset();
    }
  }
}

// Port and memory channels on one tag (port_and_memory_program.h): on the GPU the port signal lands
// in the receiver's port semaphores (the proxy's copy), the acknowledgement in its memory ones.
TEST(CudaPlansOneGpuTest, PortAndMemoryChannelsOnOneTagCountApart) {
  REQUIRE_A_GPU();
  Program p("port_and_memory", Collective::kBroadcast, 2, 1, 1);
  testing::AddPortAndMemoryChannelsOnOneTag(p);
  absl::StatusOr<ProgramSpec> plan = std::move(p).Build();
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::unique_ptr<PlanWorld>> w = PlanWorld::Create(*plan, 4096);
  ASSERT_TRUE(w.ok()) << w.status();
  for (uint64_t round = 1; round <= 200; ++round) {
    const absl::Status s = RunOnce(**w, 1 + round * 37 % 4096, 1 + static_cast<int>(round % 3), round);
    ASSERT_TRUE(s.ok()) << "execution " << round << ": " << s;
  }
}

// What every wait of the plans relies on: a running kernel's acquire poll sees a word written by
// another kernel (memory channels' signals) and by the copy engine (port channels'). Each write's
// latency goes to the log.
TEST(CudaPlansOneGpuTest, ARunningKernelSeesEveryWriterThePlansWaitFor) {
  REQUIRE_A_GPU();
  for (auto [writer, name] : {std::pair{testing::RemoteWriter::kKernelStore, "another kernel's store"},
                              std::pair{testing::RemoteWriter::kCopyEngine, "a copy engine's copy"}}) {
    const absl::StatusOr<absl::Duration> seen =
        testing::ProbeRemoteWrite(writer, absl::Milliseconds(20), absl::Seconds(2));
    EXPECT_TRUE(seen.ok()) << name << ": " << seen.status();
    if (seen.ok()) std::printf("%s seen after %s\n", name, absl::FormatDuration(*seen).c_str());
  }
}

TEST_P(CudaPlansOneGpuTest, BackToBackExecutionsOfMixedSizes) {
  REQUIRE_A_GPU();
  const int world = GetParam();
  // all_gather_port: its (world - 1) port requests per instance and execution wrap the proxy's FIFO
  // many times over.
  for (const char* name : {"two_shot", "one_shot_ll", "one_shot", "all_gather_port"}) {
    absl::StatusOr<std::unique_ptr<PlanWorld>> w = PlanWorld::Create(*ShippedPlan(name, world), 70000);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(FillInputs(**w, 70000, 7).ok());
    // 300 executions of varying sizes enqueued on every rank before anything is checked; each
    // rank's last one is the full size, whose sums are then checked.
    for (int call = 0; call < 300; ++call) {
      const size_t count = call == 299 ? 70000 : 1 + (call * 7919) % 70000;
      for (int r = 0; r < world; ++r) ASSERT_TRUE((*w)->Enqueue(r, count, 1 + call % 3, true).ok());
    }
    absl::Status s = (*w)->Synchronize();
    ASSERT_TRUE(s.ok()) << s;
    s = CheckOutputs(**w, 70000, 7, name);
    EXPECT_TRUE(s.ok()) << s;
  }
}

// f16 and bf16 elements: each reduce op sums in f32 and rounds once, so every shipped plan gives the
// bits the host executor and the hand-written kernels give (HalfSum); copies move bits unchanged.
absl::Status RunHalfOnce(PlanWorld& w, DataType type, size_t count, int instances, uint64_t salt) {
  const ProgramSpec& plan = w.plan();
  const int n = plan.world_size;
  const size_t in_n = count * InputSegments(plan.collective, n);
  const size_t out_n = count * OutputSegments(plan.collective, n);
  for (int r = 0; r < n; ++r) {
    std::vector<uint16_t> in(in_n);
    for (size_t i = 0; i < in_n; ++i) in[i] = HalfInput(type, r, i, salt);
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(w.Input(r), in.data(), in_n * 2, cudaMemcpyHostToDevice)));
  }
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));  // see FillInputs
  for (int r = 0; r < n; ++r) VDEV_RETURN_IF_ERROR(w.Enqueue(r, count, instances, true));
  const std::string what = absl::StrCat(plan.name, type == DataType::kF16 ? " f16" : " bf16", " world ", n, " count ",
                                        count, " instances ", instances);
  if (absl::Status s = w.Synchronize(); !s.ok()) return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  for (int r = 0; r < n; ++r) {
    std::vector<uint16_t> out(out_n);
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(out.data(), w.Output(r), out_n * 2, cudaMemcpyDeviceToHost)));
    for (size_t i = 0; i < out_n; ++i) {
      uint16_t want = 0;
      switch (plan.collective) {
        case Collective::kAllReduce: want = HalfSum(type, n, i, salt); break;
        case Collective::kReduceScatter: want = HalfSum(type, n, r * count + i, salt); break;
        case Collective::kAllGather: want = HalfInput(type, static_cast<int>(i / count), i % count, salt); break;
        case Collective::kBroadcast: want = HalfInput(type, plan.root, i, salt); break;
      }
      if (out[i] != want) {
        return absl::InternalError(absl::StrCat(what, " rank ", r, " element ", i, ": got 0x", absl::Hex(out[i]),
                                                " want 0x", absl::Hex(want)));
      }
    }
  }
  return absl::OkStatus();
}

TEST_P(CudaPlansOneGpuTest, HalfTypesSumInF32AndRoundOnce) {
  REQUIRE_A_GPU();
  const int world = GetParam();
  uint64_t salt = 100;
  int nth = 0;
  for (DataType type : {DataType::kF16, DataType::kBF16}) {
    const int dtype = type == DataType::kF16 ? internal::kDevF16 : internal::kDevBF16;
    for (const std::string& name : PlansToRun()) {
      absl::StatusOr<std::unique_ptr<PlanWorld>> w =
          PlanWorld::Create(*ShippedPlan(name, world), 4099, absl::Seconds(10), dtype);
      ASSERT_TRUE(w.ok()) << w.status();
      // Every other plan compiled (internal/compiled_plan.h), port plans aside.
      if (++nth % 2 == 0 && (*w)->plan().port_channels.empty()) ASSERT_TRUE((*w)->UseCompiledKernels().ok());
      for (int instances : {1, 3}) {
        for (size_t count : {size_t{1}, size_t{3}, size_t{1001}, size_t{4099}}) {
          absl::Status s = RunHalfOnce(**w, type, count, instances, ++salt);
          ASSERT_TRUE(s.ok()) << s;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, CudaPlansOneGpuTest, ::testing::Range(2, 9),
                         [](const ::testing::TestParamInfo<int>& info) { return absl::StrCat("world", info.param); });

TEST(CudaPlansOneGpuTest, RankThatNeverLaunchesIsReportedByRankThreadBlockAndOp) {
  REQUIRE_A_GPU();
  absl::StatusOr<std::unique_ptr<PlanWorld>> w =
      PlanWorld::Create(*ShippedPlan("one_shot", 2), 16, absl::Milliseconds(200));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Enqueue(0, 16, 1, false).ok());
  absl::Status s = (*w)->Synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 0 tb 0 op 1 waiting for rank 1"));
}

TEST(CudaPlansOneGpuTest, RankThatNeverLaunchesIsReportedByACompiledPlanAsByTheGenericKernel) {
  REQUIRE_A_GPU();
  absl::StatusOr<std::unique_ptr<PlanWorld>> w =
      PlanWorld::Create(*ShippedPlan("one_shot", 2), 16, absl::Milliseconds(200));
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->UseCompiledKernels().ok());
  ASSERT_TRUE((*w)->Enqueue(0, 16, 1, false).ok());
  absl::Status s = (*w)->Synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 0 tb 0 op 1 waiting for rank 1"));
}

}  // namespace
}  // namespace vdev::channels
