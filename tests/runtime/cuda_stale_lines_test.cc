// What keeps an all-reduce reader from taking an old line for this call's: LL flags are never 0,
// also where a 32-bit counter wraps; LL calls zero their receive halves slice by slice; and a new
// communicator's workspaces start zeroed even where cudaMalloc hands back an earlier one's memory.
// In each test the last worker launches late, so a reader that accepted a stale line would finish
// with a wrong sum before the real line arrived.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "internal/allreduce_layout.h"
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
using testing::GpuCount;
using testing::RunWorkers;
using testing::UniqueSessionId;

// A checked call in which the last worker enqueues its kernel 50 ms after the others.
absl::Status LateCall(PeerGroup& s, CudaCommunicator& comm, AllReduceAlgorithm algo, size_t count, int salt,
                      cudaStream_t stream) {
  if (s.rank() == s.world_size() - 1) absl::SleepFor(absl::Milliseconds(50));
  return CheckOne<float>(s, comm, DataType::kF32, algo, count, /*in_place=*/false, salt, stream);
}

absl::Status SetEpochs(const IPCMemory& ws, uint64_t value) {
  const std::vector<uint64_t> epochs(kMaxBarrierBlocks, value);
  return CopyToDevice(ws.barrier_flag, epochs.data(), epochs.size() * sizeof(uint64_t));
}

// Bytes of this worker's region of `ws` that are not zero, in 16-byte lines.
absl::StatusOr<size_t> NonZeroLines(const IPCMemory& ws) {
  std::vector<uint64_t> words(ws.size / 8);
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(words.data(), ws.remote_data[ws.worker_id], ws.size, cudaMemcpyDeviceToHost)));
  size_t lines = 0;
  for (size_t i = 0; i + 1 < words.size(); i += 2) lines += (words[i] | words[i + 1]) != 0;
  return lines;
}

// The LL calls numbered 2^32 - 3 .. 2^32 + 4, each larger than the last so that it reads lines no
// earlier call wrote: 2^32 is the call whose flag a plain 32-bit truncation would make 0.
TEST(CudaStaleLinesTest, LLFlagsStayDistinctFromZeroedMemoryAcrossTheir32BitWrap) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
    if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
    const IPCMemory& ll = *comm->workspace(AllReduceAlgorithm::kOneShotLL);
    const uint64_t first = (uint64_t{1} << 32) - 3;
    VDEV_RETURN_IF_ERROR(SetEpochs(ll, first - 1));
    VDEV_RETURN_IF_ERROR(s.Barrier("epochs set"));
    cudaStream_t stream;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    for (int k = 0; k < 8; ++k) {
      const AllReduceAlgorithm algo = k % 2 == 0 ? AllReduceAlgorithm::kOneShotLL : AllReduceAlgorithm::kTwoShotLL;
      absl::Status st = LateCall(s, *comm, algo, 1000 + 6000 * k, k, stream);
      if (!st.ok()) return absl::Status(st.code(), absl::StrCat("LL call ", first + k, ": ", st.message()));
    }
    uint64_t counted = 0;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(&counted, ll.barrier_flag, sizeof(counted), cudaMemcpyDeviceToHost)));
    if (counted != first + 7) return absl::InternalError(absl::StrCat("the LL epochs read ", counted));
    return s.Barrier("done");
  }));
}

// One large LL call, then 2 * kLLSweepEvery * kLLSweepSlices + 2 one-line calls: every line the large call left must
// be zero again (only the last two calls' lines remain), and a late large call is still exact.
TEST(CudaStaleLinesTest, EveryLLCallZeroesASliceSoOldLinesDisappear) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
    if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
    const IPCMemory& ll = *comm->workspace(AllReduceAlgorithm::kOneShotLL);
    cudaStream_t stream;
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    const size_t large = size_t{1} << 17;  // floats: 65,536 lines from each peer
    VDEV_RETURN_IF_ERROR(
        CheckOne<float>(s, *comm, DataType::kF32, AllReduceAlgorithm::kOneShotLL, large, false, 1, stream));
    VDEV_ASSIGN_OR_RETURN(const size_t after_large, NonZeroLines(ll));
    float* small = nullptr;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&small), 2 * sizeof(float))));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(small, 0, 2 * sizeof(float))));
    for (uint64_t k = 0; k < 2 * internal::kLLSweepEvery * internal::kLLSweepSlices + 2; ++k) {
      VDEV_RETURN_IF_ERROR(comm->AllReduce(small, small, 2, DataType::kF32, AllReduceAlgorithm::kOneShotLL, stream));
    }
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
    VDEV_RETURN_IF_ERROR(comm->CheckErrors());
    VDEV_RETURN_IF_ERROR(s.Barrier("small calls done"));  // no peer writes into this region any more
    VDEV_ASSIGN_OR_RETURN(const size_t after_sweep, NonZeroLines(ll));
    const size_t last_two_calls = 2 * (s.world_size() - 1);
    if (after_large < large / 2 * (s.world_size() - 1) || after_sweep > last_two_calls) {
      return absl::InternalError(absl::StrCat("non-zero lines: ", after_large, " after the large call, ", after_sweep,
                                              " after the sweep (want at most ", last_two_calls, ")"));
    }
    cudaFree(small);
    VDEV_RETURN_IF_ERROR(LateCall(s, *comm, AllReduceAlgorithm::kOneShotLL, large, 2, stream));
    return s.Barrier("done");
  }));
}

// A communicator is built, used and destroyed, then another one in the same processes: the second
// one's workspaces read as zero, and its first calls (whose epochs equal the first one's first
// calls') are exact with a late peer.
TEST(CudaStaleLinesTest, NewCommunicatorStartsFromZeroedWorkspaces) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    cudaStream_t stream = nullptr;  // created once the first communicator has set this worker's device
    const AllReduceAlgorithm algos[] = {AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotLL,
                                        AllReduceAlgorithm::kOneShot};
    const size_t count = 50000;
    std::vector<const void*> first_regions;
    {
      VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
      if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
      VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
      for (AllReduceAlgorithm algo : algos) {
        VDEV_RETURN_IF_ERROR(CheckOne<float>(s, *comm, DataType::kF32, algo, count, false, 1, stream));
        first_regions.push_back(comm->workspace(algo)->remote_data[s.rank()]);
      }
    }
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
    int reused = 0;
    for (size_t i = 0; i < 3; ++i) {
      const IPCMemory* ws = comm->workspace(algos[i]);
      if (ws == nullptr) continue;  // no NVLink: no LL128 workspace
      reused += ws->remote_data[s.rank()] == first_regions[i];
      VDEV_ASSIGN_OR_RETURN(const size_t dirty, NonZeroLines(*ws));
      if (dirty != 0) {
        return absl::InternalError(absl::StrCat(AlgorithmName(algos[i]), " workspace: ", dirty, " non-zero lines"));
      }
    }
    if (s.rank() == 0) std::fprintf(stderr, "%d workspaces reuse the first communicator's memory\n", reused);
    VDEV_RETURN_IF_ERROR(s.Barrier("checked"));
    for (AllReduceAlgorithm algo : algos) VDEV_RETURN_IF_ERROR(LateCall(s, *comm, algo, count, 2, stream));
    return s.Barrier("done");
  }));
}

}  // namespace
}  // namespace vdev
