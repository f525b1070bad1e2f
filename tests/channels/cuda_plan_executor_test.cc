// The CUDA plan executor across real worker processes that share GPU 0 (time-sliced: the GPU machine
// lends one GPU): every shipped plan, f32 and bf16, ragged counts, compared bitwise with the host
// executor run by the same workers on the same inputs; a peer that never executes is reported by
// rank, thread block and op. Skipped without a GPU.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "channels/uneven_thread_blocks_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/allreduce_test_util.h"
#include "runtime/cuda_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/channels/cuda_channel_executor.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

using ::testing::HasSubstr;
using vdev::testing::Cuda;
using vdev::testing::ExpectAllOk;
using vdev::testing::GpuCount;
using vdev::testing::RunWorkers;
using vdev::testing::UniqueSessionId;

// Rank r's input: the runtime tests' integer-valued f32 inputs, or their bf16 ones (sums that round).
std::vector<char> Inputs(DataType type, int rank, size_t n, int salt) {
  std::vector<char> bytes(n * DataTypeSize(type));
  for (size_t i = 0; i < n; ++i) {
    if (type == DataType::kF32) {
      const float v = vdev::testing::Input<float>(rank, i, salt);
      std::memcpy(&bytes[4 * i], &v, 4);
    } else {
      const uint16_t h = vdev::testing::HalfInput(type, rank, i, salt);
      std::memcpy(&bytes[2 * i], &h, 2);
    }
  }
  return bytes;
}

// What each worker of these tests has: both kinds of IPC allocator of its session and a stream.
struct Worker {
  std::unique_ptr<IPCAllocator> gpu, host;
  cudaStream_t stream = nullptr;
  static absl::StatusOr<Worker> Make(PeerGroup& s) {
    Worker w;
    VDEV_ASSIGN_OR_RETURN(w.gpu, CreateCudaIPCAllocator(&s, 0));
    VDEV_ASSIGN_OR_RETURN(w.host, CreateHostIPCAllocator(&s));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking)));
    return w;
  }
};

// `kernel`: PlanKernel::kCompiled runs every plan but the port one compiled (docs/channels.md), as
// kAuto does where NVRTC works (on the GPU machine it does).
absl::Status SameAsHost(PeerGroup& s, PlanKernel kernel) {
  VDEV_ASSIGN_OR_RETURN(Worker w, Worker::Make(s));
  const size_t max_count = 4099;
  int salt = 0;
  for (const std::string& name : ShippedPlanNames()) {
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
    const size_t in_segments = InputSegments(plan.collective, s.world_size());
    const size_t out_segments = OutputSegments(plan.collective, s.world_size());
    for (DataType type : {DataType::kF32, DataType::kBF16}) {
      VDEV_ASSIGN_OR_RETURN(auto gpu, CudaPlanExecutor::Create(s, *w.gpu, plan, max_count, type, 0, kernel));
      const PlanKernel runs =
          kernel == PlanKernel::kGeneric || !plan.port_channels.empty() ? PlanKernel::kGeneric : PlanKernel::kCompiled;
      if (gpu->kernel() != runs) return absl::InternalError(absl::StrCat(name, ": not the kernel expected"));
      VDEV_ASSIGN_OR_RETURN(auto host, HostPlanExecutor::Create(s, *w.host, plan, max_count, type));
      VDEV_RETURN_IF_ERROR(gpu->Precompile({1, 3, 1001, max_count}));
      const size_t elem = DataTypeSize(type);
      void* in = nullptr;
      void* out = nullptr;
      VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(&in, max_count * in_segments * elem)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(&out, max_count * out_segments * elem)));
      for (size_t count : {size_t{1}, size_t{3}, size_t{1001}, max_count}) {  // as precompiled
        const std::vector<char> input = Inputs(type, s.rank(), count * in_segments, ++salt);
        std::vector<char> want(count * out_segments * elem), got(want.size());
        VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
        VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(in, input.data(), input.size(), cudaMemcpyHostToDevice)));
        VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));  // a pageable copy may return early
        VDEV_RETURN_IF_ERROR(gpu->Execute(in, out, count, w.stream));
        VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(w.stream)));
        VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
        VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost)));
        if (got != want) {
          size_t i = 0;
          while (got[i] == want[i]) ++i;
          return absl::InternalError(absl::StrCat(name, " ", DataTypeName(type), " rank ", s.rank(), " count ", count,
                                                  ": byte ", i, " differs from the host executor's"));
        }
      }
      cudaFree(in);
      cudaFree(out);
    }
  }
  cudaStreamDestroy(w.stream);
  return absl::OkStatus();
}

// Executions captured once in a CUDA graph and replayed: each replay takes its epoch from device
// memory, so replay k reads the inputs written before it and matches the host executor's result;
// and executions enqueued back to back with no wait between them.
absl::Status ReplayedAndBackToBack(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(Worker w, Worker::Make(s));
  const size_t count = 3001;
  for (const char* name : {"one_shot_ll", "two_shot", "all_gather_port"}) {
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
    const size_t in_n = count * InputSegments(plan.collective, s.world_size());
    const size_t out_n = count * OutputSegments(plan.collective, s.world_size());
    VDEV_ASSIGN_OR_RETURN(auto gpu, CudaPlanExecutor::Create(s, *w.gpu, plan, count, DataType::kF32));
    VDEV_ASSIGN_OR_RETURN(auto host, HostPlanExecutor::Create(s, *w.host, plan, count, DataType::kF32));
    float* in = nullptr;
    float* out = nullptr;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&in), in_n * 4)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&out), out_n * 4)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeRelaxed)));
    VDEV_RETURN_IF_ERROR(gpu->Execute(in, out, count, w.stream));
    cudaGraph_t graph;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamEndCapture(w.stream, &graph)));
    cudaGraphExec_t exec;
    VDEV_RETURN_IF_ERROR(Cuda(cudaGraphInstantiate(&exec, graph, 0)));
    std::vector<float> got(out_n);
    for (int replay = 0; replay < 5; ++replay) {
      const std::vector<char> input = Inputs(DataType::kF32, s.rank(), in_n, 100 + replay);
      std::vector<float> want(out_n);
      VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(in, input.data(), input.size(), cudaMemcpyHostToDevice, w.stream)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaGraphLaunch(exec, w.stream)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(got.data(), out, out_n * 4, cudaMemcpyDeviceToHost, w.stream)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(w.stream)));
      VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
      if (got != want)
        return absl::InternalError(absl::StrCat(name, " replay ", replay, " rank ", s.rank(), " differs"));
    }
    // 200 executions back to back (the same input), then the last one's output.
    const std::vector<char> input = Inputs(DataType::kF32, s.rank(), in_n, 7);
    std::vector<float> want(out_n);
    VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(in, input.data(), input.size(), cudaMemcpyHostToDevice, w.stream)));
    for (int e = 0; e < 200; ++e) VDEV_RETURN_IF_ERROR(gpu->Execute(in, out, count, w.stream));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(got.data(), out, out_n * 4, cudaMemcpyDeviceToHost, w.stream)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(w.stream)));
    VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
    if (got != want) return absl::InternalError(absl::StrCat(name, " back to back rank ", s.rank(), " differs"));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(in);
    cudaFree(out);
  }
  cudaStreamDestroy(w.stream);
  return absl::OkStatus();
}

// Inputs written into the executor's input() and results read from its output(): no copies, the
// kernels launched programmatically one after the other (the zero-copy one_shot reads its peers'
// inputs where they were written); rounds with new inputs, each after 20 executions back to back,
// and one captured in a CUDA graph and replayed — every result the host executor's.
absl::Status InTheRegion(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(Worker w, Worker::Make(s));
  const size_t count = 2051;
  for (const char* name : {"one_shot_ll", "one_shot", "two_shot", "all_gather"}) {
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
    const size_t in_n = count * InputSegments(plan.collective, s.world_size());
    const size_t out_n = count * OutputSegments(plan.collective, s.world_size());
    VDEV_ASSIGN_OR_RETURN(auto gpu, CudaPlanExecutor::Create(s, *w.gpu, plan, count, DataType::kF32));
    VDEV_ASSIGN_OR_RETURN(auto host, HostPlanExecutor::Create(s, *w.host, plan, count, DataType::kF32));
    cudaGraph_t graph;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamBeginCapture(w.stream, cudaStreamCaptureModeRelaxed)));
    VDEV_RETURN_IF_ERROR(gpu->Execute(gpu->input(), gpu->output(), count, w.stream));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamEndCapture(w.stream, &graph)));
    cudaGraphExec_t replay;
    VDEV_RETURN_IF_ERROR(Cuda(cudaGraphInstantiate(&replay, graph, 0)));
    std::vector<float> got(out_n), want(out_n);
    for (int round = 0; round < 4; ++round) {
      const std::vector<char> input = Inputs(DataType::kF32, s.rank(), in_n, 200 + round);
      VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
      VDEV_RETURN_IF_ERROR(
          Cuda(cudaMemcpyAsync(gpu->input(), input.data(), input.size(), cudaMemcpyHostToDevice, w.stream)));
      for (int e = 0; e < 20; ++e) {
        if (round % 2 == 1) {
          VDEV_RETURN_IF_ERROR(Cuda(cudaGraphLaunch(replay, w.stream)));
        } else {
          VDEV_RETURN_IF_ERROR(gpu->Execute(gpu->input(), gpu->output(), count, w.stream));
        }
      }
      VDEV_RETURN_IF_ERROR(
          Cuda(cudaMemcpyAsync(got.data(), gpu->output(), out_n * 4, cudaMemcpyDeviceToHost, w.stream)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(w.stream)));
      VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
      if (got != want) return absl::InternalError(absl::StrCat(name, " round ", round, " rank ", s.rank(), " differs"));
    }
    cudaGraphExecDestroy(replay);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(w.stream);
  return absl::OkStatus();
}

TEST(CudaPlanExecutorTest, InputsAndOutputsInTheRegionNeedNoCopies) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), InTheRegion));
  ExpectAllOk(RunWorkers(3, UniqueSessionId(), InTheRegion));
}

TEST(CudaPlanExecutorTest, GraphReplaysAndBackToBackExecutionsMatchTheHostExecutor) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), ReplayedAndBackToBack));
}

// Worlds of 2..8 worker processes sharing GPU 0 (the sanitizer stage runs these under memcheck
// and racecheck: a process per rank, the port plan included).
class CudaPlanExecutorWorldsTest : public ::testing::TestWithParam<int> {};

TEST_P(CudaPlanExecutorWorldsTest, EveryShippedPlanMatchesTheHostExecutor) {
  REQUIRE_GPUS(1);
  ExpectAllOk(
      RunWorkers(GetParam(), UniqueSessionId(), [](PeerGroup& s) { return SameAsHost(s, PlanKernel::kGeneric); }));
}

TEST_P(CudaPlanExecutorWorldsTest, EveryShippedPlanCompiledMatchesTheHostExecutor) {
  REQUIRE_GPUS(1);
  ExpectAllOk(
      RunWorkers(GetParam(), UniqueSessionId(), [](PeerGroup& s) { return SameAsHost(s, PlanKernel::kCompiled); }));
}

TEST(CudaPlanExecutorTest, AutoRunsPlansCompiledWhereNvrtcWorks) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) { return SameAsHost(s, PlanKernel::kAuto); }));
}

// NVRTC failing here (an option it refuses stands for a toolkit without headers): kAuto runs the
// generic kernel, and the plan still runs.
TEST(CudaPlanExecutorTest, AutoRunsTheGenericKernelWhereNvrtcFails) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    setenv("VDEV_NVRTC_OPTIONS", "--no-such-nvrtc-option", 1);  // a worker process of its own
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> ipc, CreateCudaIPCAllocator(&s, 0));
    VDEV_ASSIGN_OR_RETURN(
        auto exec, CudaPlanExecutor::ForStrategy(s, *ipc, "plan:one_shot_ll", 1000, DataType::kF32, PlanKernel::kAuto));
    if (exec->kernel() != PlanKernel::kGeneric) return absl::InternalError("kAuto compiled without a working NVRTC");
    std::vector<float> ones(1000, 1.0f);
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(exec->input(), ones.data(), 4000, cudaMemcpyHostToDevice)));
    VDEV_RETURN_IF_ERROR(exec->Execute(exec->input(), exec->output(), 1000, nullptr));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
    VDEV_RETURN_IF_ERROR(exec->CheckErrors());
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(ones.data(), exec->output(), 4000, cudaMemcpyDeviceToHost)));
    for (float v : ones) {
      if (v != 2.0f) return absl::InternalError(absl::StrCat("sum ", v, ", not 2"));
    }
    return s.Barrier("done");
  }));
}

INSTANTIATE_TEST_SUITE_P(Workers, CudaPlanExecutorWorldsTest, ::testing::Range(2, 9),
                         [](const ::testing::TestParamInfo<int>& info) { return absl::StrCat("workers", info.param); });

// Ranks with different numbers of thread blocks (rank 0: 17, rank 1: 1) and instances by size at
// 1 MB: both ranks launch the same instances (15, what rank 0's grid allows), so every wait meets its
// signal; memory channels, then port channels (one instance). A rank that picked its own (rank 1:
// 32) would wait for instances rank 0 never launches, and its kernel would time out.
absl::Status UnevenThreadBlocks(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(Worker w, Worker::Make(s));
  const size_t count = size_t{1} << 18;
  s.set_timeout(absl::Seconds(10));  // a wait that misses its signal fails the test in seconds
  for (const bool port : {false, true}) {
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, testing::UnevenThreadBlocksBroadcast(/*copy_blocks=*/16, port));
    VDEV_ASSIGN_OR_RETURN(auto gpu, CudaPlanExecutor::Create(s, *w.gpu, plan, count, DataType::kF32));
    VDEV_ASSIGN_OR_RETURN(auto host, HostPlanExecutor::Create(s, *w.host, plan, count, DataType::kF32));
    const std::vector<char> input = Inputs(DataType::kF32, s.rank(), count, port ? 301 : 300);
    std::vector<char> want(count * 4), got(count * 4);
    VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(gpu->input(), input.data(), input.size(), cudaMemcpyHostToDevice)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));  // a pageable copy may return early
    for (int e = 0; e < 3; ++e) VDEV_RETURN_IF_ERROR(gpu->Execute(gpu->input(), gpu->output(), count, w.stream));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(w.stream)));
    VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), gpu->output(), got.size(), cudaMemcpyDeviceToHost)));
    if (got != want) return absl::InternalError(absl::StrCat(plan.name, " rank ", s.rank(), " differs"));
  }
  cudaStreamDestroy(w.stream);
  return absl::OkStatus();
}

TEST(CudaPlanExecutorTest, RanksWithUnevenThreadBlocksLaunchTheSameInstances) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), UnevenThreadBlocks));
}

// One GPU a worker, 4 MB segments: the executor's instances by size go past 32 (as many as every
// rank's GPU holds at once); one_shot, one_shot_push and two_shot still give the host executor's bits.
absl::Status WideSegmentsOnTheirOwnGpus(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> gpu_ipc, CreateCudaIPCAllocator(&s, s.rank()));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> host_ipc, CreateHostIPCAllocator(&s));
  const size_t count = size_t{1} << 20;  // f32: 4 MB a segment
  for (const char* name : {"one_shot", "one_shot_push", "two_shot"}) {
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, s.world_size()));
    VDEV_ASSIGN_OR_RETURN(auto gpu, CudaPlanExecutor::Create(s, *gpu_ipc, plan, count, DataType::kF32));
    VDEV_ASSIGN_OR_RETURN(auto host, HostPlanExecutor::Create(s, *host_ipc, plan, count, DataType::kF32));
    const std::vector<char> input = Inputs(DataType::kF32, s.rank(), count, 400);
    std::vector<char> want(count * 4), got(count * 4);
    VDEV_RETURN_IF_ERROR(host->Execute(input.data(), want.data(), count));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(gpu->input(), input.data(), input.size(), cudaMemcpyHostToDevice)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));  // a pageable copy may return early
    for (int e = 0; e < 3; ++e) VDEV_RETURN_IF_ERROR(gpu->Execute(gpu->input(), gpu->output(), count, nullptr));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
    VDEV_RETURN_IF_ERROR(gpu->CheckErrors());
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), gpu->output(), got.size(), cudaMemcpyDeviceToHost)));
    if (got != want) return absl::InternalError(absl::StrCat(name, " rank ", s.rank(), " differs"));
  }
  return absl::OkStatus();
}

TEST(CudaPlanExecutorTest, WideSegmentsOnTwoGpusMatchTheHostExecutor) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), WideSegmentsOnTheirOwnGpus));
}

// Rank 1 never executes: rank 0's kernel times out (the session's timeout), finishes, and
// CheckErrors names rank 0's wait for rank 1.
TEST(CudaPlanExecutorTest, APeerThatNeverExecutesIsNamed) {
  REQUIRE_GPUS(1);
  vdev::testing::WorkerSignal rank0_done;
  auto results = RunWorkers(2, UniqueSessionId(), [&](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> ipc, CreateCudaIPCAllocator(&s, 0));
    const absl::Duration setup_timeout = s.timeout();
    s.set_timeout(absl::Seconds(2));  // the executor's kernels wait this long for a peer
    VDEV_ASSIGN_OR_RETURN(auto exec, CudaPlanExecutor::ForStrategy(s, *ipc, "plan:one_shot", 64, DataType::kF32));
    s.set_timeout(setup_timeout);
    void* buf = nullptr;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(&buf, 256)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(buf, 0, 256)));
    absl::Status status = absl::OkStatus();
    if (s.rank() == 0) {
      VDEV_RETURN_IF_ERROR(exec->Execute(buf, buf, 64, nullptr));
      VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
      status = exec->CheckErrors();
    }
    // Both ranks meet again before either frees its region (the peer may still map it); rank 1
    // arrives once rank 0's kernel has given up.
    if (s.rank() == 0) rank0_done.Notify();
    if (s.rank() == 1) rank0_done.Wait();
    VDEV_RETURN_IF_ERROR(s.Barrier("done"));
    cudaFree(buf);
    return status;
  });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].exit_code, 0) << results[1].message;
  EXPECT_NE(results[0].exit_code, 0);
  EXPECT_THAT(results[0].message, HasSubstr("rank 0 tb 0 op"));
  EXPECT_THAT(results[0].message, HasSubstr("waiting for rank 1 (read 0, waits for 1)"));
}

TEST(CudaPlanExecutorTest, RefusesHostAllocatorsAndIntegerTypes) {
  REQUIRE_GPUS(1);
  ExpectAllOk(RunWorkers(1, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> host, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan("one_shot", 1));
    auto on_host = CudaPlanExecutor::Create(s, *host, plan, 16, DataType::kF32);
    if (on_host.ok() || !absl::StrContains(on_host.status().message(), "CUDA IPC allocator")) {
      return absl::InternalError(absl::StrCat("host allocator: ", on_host.status().ToString()));
    }
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> gpu, CreateCudaIPCAllocator(&s, 0));
    auto ints = CudaPlanExecutor::Create(s, *gpu, plan, 16, DataType::kI32);
    if (ints.ok() || !absl::StrContains(ints.status().message(), "f32, f16 and bf16")) {
      return absl::InternalError(absl::StrCat("i32: ", ints.status().ToString()));
    }
    return absl::OkStatus();
  }));
}

}  // namespace
}  // namespace vdev::channels
