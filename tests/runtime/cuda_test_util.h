// Helpers shared by the CUDA all-reduce tests: the GPU count, exact integer-valued inputs, and one
// checked all-reduce call.
#ifndef VDEV_TESTS_RUNTIME_CUDA_TEST_UTIL_H_
#define VDEV_TESTS_RUNTIME_CUDA_TEST_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev::testing {

// The parent process never touches CUDA (a CUDA context does not survive fork): the GPU count comes
// from a forked probe.
inline int GpuCount() {
  static int count = [] {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int n = 0;
      _exit(cudaGetDeviceCount(&n) == cudaSuccess ? n : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  }();
  return count;
}

#define REQUIRE_GPUS(n) \
  if (GpuCount() < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs, found " << GpuCount()

inline absl::Status Cuda(cudaError_t e) {
  return e == cudaSuccess ? absl::OkStatus() : absl::InternalError(cudaGetErrorString(e));
}

// A host-to-device copy that has landed when it returns. cudaMemcpy from pageable memory may return
// once the data is staged, before its DMA is done, and a kernel on a non-blocking stream does not
// wait for that DMA (a test then reads a stale input element).
inline absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return Cuda(e);
  return Cuda(cudaDeviceSynchronize());
}

// Integer-valued inputs: every sum is exact in every type (|sum| <= 8 * 40).
inline int Value(int rank, size_t i, int salt) { return static_cast<int>((i * 5 + salt) % 41) - 20 + rank; }

template <typename T>
inline T FromInt(int v) {
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(v);
  if constexpr (std::is_same_v<T, __half>) return __float2half(static_cast<float>(v));
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(static_cast<float>(v));
}
template <typename T>
inline float ToFloat(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
}

template <typename T>
absl::Status CheckOne(PeerGroup& s, CudaCommunicator& comm, DataType type, AllReduceAlgorithm algo, size_t count,
                      bool in_place, int salt, cudaStream_t stream) {
  std::vector<T> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = FromInt<T>(Value(s.rank(), i, salt));
  T *in = nullptr, *out = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&in), count * sizeof(T))));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&out), count * sizeof(T))));
  VDEV_RETURN_IF_ERROR(CopyToDevice(in, host.data(), count * sizeof(T)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(out, 0xff, count * sizeof(T))));
  T* dst = in_place ? in : out;
  VDEV_RETURN_IF_ERROR(comm.AllReduce(in, dst, count, type, algo, stream));
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  VDEV_RETURN_IF_ERROR(comm.CheckErrors());
  std::vector<T> got(count), input_after(count);
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), dst, count * sizeof(T), cudaMemcpyDeviceToHost)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(input_after.data(), in, count * sizeof(T), cudaMemcpyDeviceToHost)));
  cudaFree(in);
  cudaFree(out);
  for (size_t i = 0; i < count; ++i) {
    int want = 0;
    for (int r = 0; r < s.world_size(); ++r) want += Value(r, i, salt);
    if (ToFloat(got[i]) != static_cast<float>(want)) {
      return absl::InternalError(absl::StrCat(AlgorithmName(algo), " ", DataTypeName(type), " count ", count,
                                              in_place ? " in place" : "", ": element ", i, " is ", ToFloat(got[i]),
                                              ", want ", want));
    }
    if (!in_place && std::memcmp(&input_after[i], &host[i], sizeof(T)) != 0) {
      return absl::InternalError(absl::StrCat(AlgorithmName(algo), " modified its input"));
    }
  }
  return absl::OkStatus();
}

}  // namespace vdev::testing

#endif  // VDEV_TESTS_RUNTIME_CUDA_TEST_UTIL_H_
