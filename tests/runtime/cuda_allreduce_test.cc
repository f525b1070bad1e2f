// The CUDA all-reduce across real worker processes, one GPU each; skipped without enough GPUs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using testing::CheckOne;
using testing::CopyToDevice;
using testing::Cuda;
using testing::ExpectAllOk;
using testing::FromInt;
using testing::GpuCount;
using ::testing::HasSubstr;
using testing::RunWorkers;
using testing::ToFloat;
using testing::UniqueSessionId;
using testing::Value;
using testing::WorkerResult;

absl::Status ExactSums(PeerGroup& s) {
  CudaCommunicatorOptions options;
  options.max_bytes = 8 << 20;
  options.max_ll_bytes = 8 << 20;
  options.max_ll128_bytes = 8 << 20;
  options.max_sentinel_bytes = 8 << 20;
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, options));
  if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
  if (!comm->ll128_available() && s.rank() == 0)
    std::fprintf(stderr, "no NVLink: one-shot-ll128 runs as one-shot-ll\n");
  cudaStream_t stream;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreate(&stream)));
  int salt = 0;
  for (AllReduceAlgorithm algo :
       {AllReduceAlgorithm::kOneShotSentinel, AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotLL,
        AllReduceAlgorithm::kTwoShotLL, AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot,
        AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kNccl}) {
    for (size_t count : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{1000}, size_t{4097},
                         size_t{65539}, size_t{1} << 20}) {
      for (bool in_place : {false, true}) {
        ++salt;
        VDEV_RETURN_IF_ERROR(CheckOne<float>(s, *comm, DataType::kF32, algo, count, in_place, salt, stream));
        VDEV_RETURN_IF_ERROR(CheckOne<__half>(s, *comm, DataType::kF16, algo, count, in_place, salt, stream));
        VDEV_RETURN_IF_ERROR(CheckOne<__nv_bfloat16>(s, *comm, DataType::kBF16, algo, count, in_place, salt, stream));
      }
    }
  }
  return absl::OkStatus();
}

TEST(CudaAllReduceTest, ExactSumsOnTwoGpus) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), ExactSums));
}

TEST(CudaAllReduceTest, ExactSumsOnThreeGpus) {
  REQUIRE_GPUS(3);
  ExpectAllOk(RunWorkers(3, UniqueSessionId(), ExactSums));
}

TEST(CudaAllReduceTest, ExactSumsOnFourGpus) {
  REQUIRE_GPUS(4);
  ExpectAllOk(RunWorkers(4, UniqueSessionId(), ExactSums));
}

// Back-to-back calls with random algorithms and sizes (the same sequence on every worker), each on
// buffers of its own, checked after each batch: a line taken before it fully arrived, or a workspace
// half reused while a peer still reads it, shows up as a wrong sum. Graph-free and with and without
// programmatic dependent launch.
absl::Status RandomBackToBack(PeerGroup& s, bool programmatic) {
  CudaCommunicatorOptions options;
  options.programmatic_launch = programmatic;
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, options));
  if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
  cudaStream_t stream;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  constexpr int kCalls = 64, kBatches = 40;
  constexpr size_t kMaxCount = 300000;  // bf16: up to ~600 KB, LL128's and LL's sizes
  std::vector<__nv_bfloat16*> ins(kCalls), outs(kCalls);
  for (int k = 0; k < kCalls; ++k) {
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&ins[k]), kMaxCount * 2)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&outs[k]), kMaxCount * 2)));
  }
  const AllReduceAlgorithm algos[] = {
      AllReduceAlgorithm::kOneShotLL128,    AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotSentinel,
      AllReduceAlgorithm::kOneShotSentinel, AllReduceAlgorithm::kOneShotLL,    AllReduceAlgorithm::kOneShot,
      AllReduceAlgorithm::kTwoShot,         AllReduceAlgorithm::kTwoShotLL,    AllReduceAlgorithm::kAuto};
  std::mt19937_64 rng(20261122);  // equal on every worker
  std::vector<__nv_bfloat16> host(kMaxCount), got(kMaxCount);
  for (int batch = 0; batch < kBatches; ++batch) {
    std::vector<size_t> counts(kCalls);
    std::vector<AllReduceAlgorithm> chosen(kCalls);
    for (int k = 0; k < kCalls; ++k) {
      const size_t limit = rng() % 4 == 0 ? kMaxCount : 4096;
      counts[k] = 1 + rng() % limit;
      chosen[k] = algos[rng() % (sizeof(algos) / sizeof(algos[0]))];
      const int salt = batch * kCalls + k;
      for (size_t i = 0; i < counts[k]; ++i) host[i] = FromInt<__nv_bfloat16>(Value(s.rank(), i, salt));
      VDEV_RETURN_IF_ERROR(CopyToDevice(ins[k], host.data(), counts[k] * 2));
    }
    for (int k = 0; k < kCalls; ++k) {
      VDEV_RETURN_IF_ERROR(comm->AllReduce(ins[k], outs[k], counts[k], DataType::kBF16, chosen[k], stream));
    }
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
    VDEV_RETURN_IF_ERROR(comm->CheckErrors());
    for (int k = 0; k < kCalls; ++k) {
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), outs[k], counts[k] * 2, cudaMemcpyDeviceToHost)));
      const int salt = batch * kCalls + k;
      for (size_t i = 0; i < counts[k]; ++i) {
        int want = 0;
        for (int r = 0; r < s.world_size(); ++r) want += Value(r, i, salt);
        if (ToFloat(got[i]) != static_cast<float>(want)) {
          return absl::InternalError(absl::StrCat("batch ", batch, " call ", k, " (", AlgorithmName(chosen[k]),
                                                  ", count ", counts[k], "): element ", i, " is ", ToFloat(got[i]),
                                                  ", want ", want));
        }
      }
    }
  }
  for (int k = 0; k < kCalls; ++k) {
    cudaFree(ins[k]);
    cudaFree(outs[k]);
  }
  return absl::OkStatus();
}

TEST(CudaAllReduceTest, RandomBackToBackCallsOnTwoGpus) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) { return RandomBackToBack(s, true); }));
}

TEST(CudaAllReduceTest, RandomBackToBackCallsOnFourGpusWithAndWithoutProgrammaticLaunch) {
  REQUIRE_GPUS(4);
  ExpectAllOk(RunWorkers(4, UniqueSessionId(), [](PeerGroup& s) { return RandomBackToBack(s, true); }));
  ExpectAllOk(RunWorkers(4, UniqueSessionId(), [](PeerGroup& s) { return RandomBackToBack(s, false); }));
}

// Zero-copy: the input lies in CUDA IPC memory. Per size, `kCalls` back-to-back calls on one stream,
// each preceded by a device-to-device "producer" that rewrites the input as soon as the previous
// call's kernel ends on this GPU: a kernel that finished while a peer still read its input would
// hand the peer the next call's values. Every call gets its own output, checked at the end.
// Call k reads ins[k % ins.size()]: two buffers (double-buffered inputs) are what
// ZeroCopyRead::kInPlaceNoExitBarrier needs, one buffer is the harder case for the others.
template <typename T>
absl::Status ZeroCopyBackToBack(PeerGroup& s, CudaCommunicator& comm, const std::vector<IPCBuffer>& ins,
                                ZeroCopyRead read, DataType type, size_t count, int salt, cudaStream_t stream) {
  constexpr int kCalls = 6;
  std::vector<T> host(kCalls * count);
  for (int k = 0; k < kCalls; ++k) {
    for (size_t i = 0; i < count; ++i) host[k * count + i] = FromInt<T>(Value(s.rank(), i, salt + k));
  }
  T *staged = nullptr, *outs = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&staged), host.size() * sizeof(T))));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&outs), host.size() * sizeof(T))));
  VDEV_RETURN_IF_ERROR(CopyToDevice(staged, host.data(), host.size() * sizeof(T)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(outs, 0xff, host.size() * sizeof(T))));
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
  VDEV_RETURN_IF_ERROR(s.Barrier("zero-copy staged"));
  for (int k = 0; k < kCalls; ++k) {
    const IPCBuffer& in = ins[k % ins.size()];
    VDEV_RETURN_IF_ERROR(
        Cuda(cudaMemcpyAsync(in.Local(), staged + k * count, count * sizeof(T), cudaMemcpyDeviceToDevice, stream)));
    VDEV_RETURN_IF_ERROR(comm.AllReduceZeroCopy(in, outs + k * count, count, type, stream, read));
  }
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  VDEV_RETURN_IF_ERROR(comm.CheckErrors());
  std::vector<T> got(host.size()), input_after(count);
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), outs, got.size() * sizeof(T), cudaMemcpyDeviceToHost)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(input_after.data(), ins[(kCalls - 1) % ins.size()].Local(), count * sizeof(T),
                                       cudaMemcpyDeviceToHost)));
  cudaFree(staged);
  cudaFree(outs);
  for (int k = 0; k < kCalls; ++k) {
    for (size_t i = 0; i < count; ++i) {
      int want = 0;
      for (int r = 0; r < s.world_size(); ++r) want += Value(r, i, salt + k);
      if (ToFloat(got[k * count + i]) != static_cast<float>(want)) {
        return absl::InternalError(absl::StrCat("zero-copy (read ", static_cast<int>(read), ") ", DataTypeName(type),
                                                " count ", count, " call ", k, ": element ", i, " is ",
                                                ToFloat(got[k * count + i]), ", want ", want));
      }
    }
  }
  if (std::memcmp(input_after.data(), &host[(kCalls - 1) * count], count * sizeof(T)) != 0) {
    return absl::InternalError("zero-copy all-reduce modified its input");
  }
  return absl::OkStatus();
}

absl::Status ZeroCopySums(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
  if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateCudaIPCAllocator(&s, comm->device()));
  const size_t max_count = (size_t{1} << 20) + 3;
  const size_t second = 256 + (max_count * sizeof(float) + 255) / 256 * 256;
  VDEV_ASSIGN_OR_RETURN(IPCMemory * mem, alloc->Allocate(second + max_count * sizeof(float)));
  const IPCBuffer in{mem, 256};  // a value placed after another one in the same allocation
  const IPCBuffer in2{mem, second};
  cudaStream_t stream;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  int salt = 0;
  const std::pair<ZeroCopyRead, std::vector<IPCBuffer>> cases[] = {
      {ZeroCopyRead::kInPlace, {in}}, {ZeroCopyRead::kAuto, {in}}, {ZeroCopyRead::kInPlaceNoExitBarrier, {in, in2}}};
  for (const auto& [read, ins] : cases) {
    for (size_t count :
         {size_t{1}, size_t{3}, size_t{7}, size_t{9}, size_t{1000}, size_t{4097}, size_t{65539}, max_count}) {
      salt += 10;
      VDEV_RETURN_IF_ERROR(ZeroCopyBackToBack<float>(s, *comm, ins, read, DataType::kF32, count, salt, stream));
      VDEV_RETURN_IF_ERROR(ZeroCopyBackToBack<__half>(s, *comm, ins, read, DataType::kF16, count, salt, stream));
      VDEV_RETURN_IF_ERROR(
          ZeroCopyBackToBack<__nv_bfloat16>(s, *comm, ins, read, DataType::kBF16, count, salt, stream));
    }
  }
  // Overlapping input and output is refused, not raced.
  absl::Status overlap = comm->AllReduceZeroCopy(in, in.Local(), 16, DataType::kF32, stream);
  if (overlap.code() != absl::StatusCode::kInvalidArgument) {
    return absl::InternalError(absl::StrCat("overlap accepted: ", overlap.ToString()));
  }
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  return s.Barrier("zero-copy done");  // peers may still read this worker's memory until all are here
}

TEST(CudaAllReduceTest, ZeroCopyExactSumsBackToBackOnTwoGpus) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), ZeroCopySums));
}

TEST(CudaAllReduceTest, ZeroCopyExactSumsBackToBackOnFourGpus) {
  REQUIRE_GPUS(4);
  ExpectAllOk(RunWorkers(4, UniqueSessionId(), ZeroCopySums));
}

TEST(CudaAllReduceTest, GraphReplaysSeeNewInputsAndStayInStep) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
    cudaStream_t stream;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    const size_t count = 10001;
    float *in, *out;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&in), count * sizeof(float))));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&out), count * sizeof(float))));
    cudaGraph_t graph;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal)));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(in, out, count, DataType::kF32, AllReduceAlgorithm::kOneShot, stream));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(out, out, count, DataType::kF32, AllReduceAlgorithm::kTwoShot, stream));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(out, out, count, DataType::kF32, AllReduceAlgorithm::kOneShotLL, stream));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(out, out, count, DataType::kF32, AllReduceAlgorithm::kTwoShotLL, stream));
    VDEV_RETURN_IF_ERROR(comm->AllReduce(out, out, count, DataType::kF32, AllReduceAlgorithm::kOneShotLL128, stream));
    VDEV_RETURN_IF_ERROR(
        comm->AllReduce(out, out, count, DataType::kF32, AllReduceAlgorithm::kOneShotSentinel, stream));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamEndCapture(stream, &graph)));
    cudaGraphExec_t exec;
    VDEV_RETURN_IF_ERROR(Cuda(cudaGraphInstantiate(&exec, graph, 0)));
    std::vector<float> host(count), got(count);
    for (int replay = 0; replay < 6; ++replay) {
      for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(Value(s.rank(), i, replay));
      VDEV_RETURN_IF_ERROR(CopyToDevice(in, host.data(), count * sizeof(float)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaGraphLaunch(exec, stream)));
      VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
      VDEV_RETURN_IF_ERROR(comm->CheckErrors());
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost)));
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < s.world_size(); ++r) want += static_cast<float>(Value(r, i, replay));
        for (int later = 0; later < 5; ++later) want *= s.world_size();  // the later all-reduces re-sum equal sums
        if (got[i] != want) return absl::InternalError(absl::StrCat("replay ", replay, " element ", i));
      }
    }
    return absl::OkStatus();
  }));
}

void ExpectPeerThatNeverLaunchesIsReported(AllReduceAlgorithm algo) {
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [algo](PeerGroup& s) -> absl::Status {
    CudaCommunicatorOptions options;
    options.kernel_timeout = absl::Milliseconds(200);
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, options));
    float* buf;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&buf), 1024 * sizeof(float))));
    if (s.rank() == 0) {
      VDEV_RETURN_IF_ERROR(comm->AllReduce(buf, buf, 1024, DataType::kF32, algo, nullptr));
      VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
      absl::Status st = comm->CheckErrors();
      VDEV_RETURN_IF_ERROR(s.Barrier("done"));
      return st;
    }
    return s.Barrier("done");
  });
  EXPECT_EQ(results[1].exit_code, 0) << results[1].message;
  EXPECT_EQ(results[0].exit_code, 1);
  EXPECT_THAT(results[0].message, HasSubstr("waited more than 200ms for worker 1"));
}

TEST(CudaAllReduceTest, PeerThatNeverLaunchesIsReportedNotHung) {
  REQUIRE_GPUS(2);
  ExpectPeerThatNeverLaunchesIsReported(AllReduceAlgorithm::kOneShot);
}

TEST(CudaAllReduceTest, PeerThatNeverSendsLinesIsReportedNotHung) {
  REQUIRE_GPUS(2);
  ExpectPeerThatNeverLaunchesIsReported(AllReduceAlgorithm::kOneShotLL128);
  ExpectPeerThatNeverLaunchesIsReported(AllReduceAlgorithm::kOneShotSentinel);
}

// SIZE_MAX - 100 bytes wrapped around (with the region's barrier flags) to a 36 KiB cudaMalloc.
TEST(CudaAllReduceTest, IPCAllocationWhoseSizeOverflowsIsAnErrorOnEveryWorker) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_RETURN_IF_ERROR(Cuda(cudaSetDevice(s.rank())));
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateCudaIPCAllocator(&s, s.rank()));
    absl::StatusOr<IPCMemory*> huge = alloc->Allocate(SIZE_MAX - 100);
    if (huge.ok() || huge.status().code() != absl::StatusCode::kInvalidArgument) {
      return absl::InternalError(
          absl::StrCat("SIZE_MAX - 100 bytes: ", huge.ok() ? "allocated" : huge.status().ToString()));
    }
    return alloc->Allocate(4096).status();  // still in step
  }));
}

// A stream of another device would run the kernel there (an illegal address, a poisoned context):
// refused up front, and the communicator stays usable.
TEST(CudaAllReduceTest, StreamOfAnotherDeviceIsRefused) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
    const int other = 1 - comm->device();
    cudaStream_t foreign, own;
    VDEV_RETURN_IF_ERROR(Cuda(cudaSetDevice(other)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreate(&foreign)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaSetDevice(comm->device())));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreate(&own)));
    float* buf;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&buf), 1024 * sizeof(float))));
    absl::Status refused = comm->AllReduce(buf, buf, 1024, DataType::kF32, AllReduceAlgorithm::kOneShotLL, foreign);
    if (refused.code() != absl::StatusCode::kInvalidArgument ||
        !absl::StrContains(refused.message(), absl::StrCat("belongs to device ", other))) {
      return absl::InternalError(absl::StrCat("a foreign stream was not refused: ", refused.ToString()));
    }
    cudaFree(buf);
    return CheckOne<float>(s, *comm, DataType::kF32, AllReduceAlgorithm::kOneShotLL, 1000, false, 1, own);
  }));
}

TEST(CudaAllReduceTest, WithoutP2PEverythingGoesThroughNccl) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    CudaCommunicatorOptions options;
    options.force_nccl = true;
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, options));
    if (comm->ipc_available()) return absl::InternalError("IPC despite force_nccl");
    if (comm->Choose(4096) != AllReduceAlgorithm::kNccl) return absl::InternalError("auto did not pick NCCL");
    cudaStream_t stream;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreate(&stream)));
    return CheckOne<float>(s, *comm, DataType::kF32, AllReduceAlgorithm::kOneShot, 1000, false, 1, stream);
  }));
}

}  // namespace
}  // namespace vdev
