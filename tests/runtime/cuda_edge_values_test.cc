// Edge values through every algorithm: NaN with kOneShotSentinel's bit pattern in an input, negative
// zeros; and the sentinel workspace left all sentinel after every call. Skipped without two GPUs.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/cuda_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using testing::CopyToDevice;
using testing::Cuda;
using testing::ExpectAllOk;
using testing::FromInt;
using testing::GpuCount;
using testing::RunWorkers;
using testing::ToFloat;
using testing::UniqueSessionId;
using testing::Value;

// Rank 0's element i carries the all-ones pattern where i % 97 == 5; every rank's is -0.0 where
// i % 89 == 3 (and not the former). The sum must be NaN at the first, -0.0 at the second (as IEEE
// adds -0 + -0, which an accumulator starting at +0 would lose), exact elsewhere, and bitwise the
// same on every rank. A sentinel reader that took the pattern for "not yet arrived" would hang
// (reported as a timeout), one that dropped it would give a number.
template <typename T, typename Bits>
absl::Status EdgeValues(PeerGroup& s, CudaCommunicator& comm, DataType type, AllReduceAlgorithm algo, size_t count,
                        cudaStream_t stream) {
  auto all_ones = [](size_t i) { return i % 97 == 5; };
  auto negative_zero = [&](size_t i) { return i % 89 == 3 && !all_ones(i); };
  std::vector<T> host(count);
  for (size_t i = 0; i < count; ++i) {
    host[i] = FromInt<T>(Value(s.rank(), i, 7));
    const Bits sign_only = static_cast<Bits>(Bits{1} << (8 * sizeof(Bits) - 1)), ones = static_cast<Bits>(~Bits{0});
    if (negative_zero(i)) std::memcpy(&host[i], &sign_only, sizeof(Bits));
    if (all_ones(i) && s.rank() == 0) std::memcpy(&host[i], &ones, sizeof(Bits));
  }
  T *in = nullptr, *out = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&in), count * sizeof(T))));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&out), count * sizeof(T))));
  VDEV_RETURN_IF_ERROR(CopyToDevice(in, host.data(), count * sizeof(T)));
  VDEV_RETURN_IF_ERROR(comm.AllReduce(in, out, count, type, algo, stream));
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  VDEV_RETURN_IF_ERROR(comm.CheckErrors());
  std::vector<T> got(count), input_after(count);
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), out, count * sizeof(T), cudaMemcpyDeviceToHost)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(input_after.data(), in, count * sizeof(T), cudaMemcpyDeviceToHost)));
  cudaFree(in);
  cudaFree(out);
  if (std::memcmp(input_after.data(), host.data(), count * sizeof(T)) != 0) {
    return absl::InternalError(absl::StrCat(AlgorithmName(algo), " ", DataTypeName(type), " modified its input"));
  }
  for (size_t i = 0; i < count; ++i) {
    const float v = ToFloat(got[i]);
    int want = 0;
    for (int r = 0; r < s.world_size(); ++r) want += Value(r, i, 7);
    const bool ok = all_ones(i)        ? std::isnan(v)
                    : negative_zero(i) ? v == 0.0f && std::signbit(v)
                                       : v == static_cast<float>(want);
    if (!ok) {
      return absl::InternalError(absl::StrCat(AlgorithmName(algo), " ", DataTypeName(type), " count ", count,
                                              ": element ", i, " is ", v, ", want ",
                                              all_ones(i)        ? "NaN"
                                              : negative_zero(i) ? "-0"
                                                                 : absl::StrCat(want)));
    }
  }
  std::vector<std::string> all;
  VDEV_RETURN_IF_ERROR(s.AllGather(absl::StrCat("edge-out-", AlgorithmName(algo), DataTypeName(type), count),
                                   std::string(reinterpret_cast<const char*>(got.data()), count * sizeof(T)), &all));
  for (const std::string& other : all) {
    if (other != all[0]) {
      return absl::InternalError(absl::StrCat(AlgorithmName(algo), " ", DataTypeName(type), ": ranks differ bitwise"));
    }
  }
  return absl::OkStatus();
}

// After calls of several sizes the workspace reads all ones again: the next call, of any size, finds
// every slot waiting for data.
absl::Status WorkspaceIsAllSentinel(const CudaCommunicator& comm) {
  const IPCMemory* ws = comm.workspace(AllReduceAlgorithm::kOneShotSentinel);
  std::vector<unsigned char> bytes(ws->size);
  VDEV_RETURN_IF_ERROR(
      Cuda(cudaMemcpy(bytes.data(), ws->remote_data[ws->worker_id], ws->size, cudaMemcpyDeviceToHost)));
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != 0xff) return absl::InternalError(absl::StrCat("workspace byte ", i, " is not the sentinel"));
  }
  return absl::OkStatus();
}

absl::Status EdgeValuesEverywhere(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
  if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
  cudaStream_t stream;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  for (AllReduceAlgorithm algo :
       {AllReduceAlgorithm::kOneShotSentinel, AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotLL,
        AllReduceAlgorithm::kTwoShotLL, AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot,
        AllReduceAlgorithm::kNccl}) {
    for (size_t count : {size_t{1}, size_t{4099}, size_t{100003}}) {
      VDEV_RETURN_IF_ERROR((EdgeValues<float, uint32_t>(s, *comm, DataType::kF32, algo, count, stream)));
      VDEV_RETURN_IF_ERROR((EdgeValues<__nv_bfloat16, uint16_t>(s, *comm, DataType::kBF16, algo, count, stream)));
      VDEV_RETURN_IF_ERROR((EdgeValues<__half, uint16_t>(s, *comm, DataType::kF16, algo, count, stream)));
    }
  }
  VDEV_RETURN_IF_ERROR(WorkspaceIsAllSentinel(*comm));
  return s.Barrier("sentinel done");
}

TEST(CudaEdgeValuesTest, NanSumsToNanNegativeZeroKeepsItsSignSentinelWorkspaceEndsClean) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), EdgeValuesEverywhere));
}

TEST(CudaEdgeValuesTest, SameOnThreeGpus) {
  REQUIRE_GPUS(3);
  ExpectAllOk(RunWorkers(3, UniqueSessionId(), EdgeValuesEverywhere));
}

}  // namespace
}  // namespace vdev
