// The GPUs of ProbeMachine: memory (cudaMemGetInfo), matmul rate per dtype (vdev's own matmul,
// CudaKernelBackend::Matmul on cuBLASLt, 4096^3, f32 accumulation: what the executor gets), memory bandwidth (a device-to-device copy reads and writes each byte), and
// links: pinned host<->device and peer copies, bandwidth from 256 MiB, latency from 4 bytes.
// Every timing is the best of `repetitions` after a warm-up, by CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "internal_probe_cuda.h"
#include "vdev/kernels/cuda_kernels.h"
#include "vdev/support/status_macros.h"

namespace vdev::probe_internal {
namespace {

absl::Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("machine probe: ", what, ": ", cudaGetErrorString(e)));
}

// The best time of `work` (enqueued on the current device's default stream), in seconds.
absl::StatusOr<double> BestSeconds(int repetitions, const std::function<absl::Status()>& work) {
  cudaEvent_t start, stop;
  VDEV_RETURN_IF_ERROR(Check(cudaEventCreate(&start), "cudaEventCreate"));
  VDEV_RETURN_IF_ERROR(Check(cudaEventCreate(&stop), "cudaEventCreate"));
  double best = 1e30;
  absl::Status status;
  for (int r = 0; r <= repetitions && status.ok(); ++r) {
    status = Check(cudaEventRecord(start), "cudaEventRecord");
    if (status.ok()) status = work();
    if (status.ok()) status = Check(cudaEventRecord(stop), "cudaEventRecord");
    if (status.ok()) status = Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    if (status.ok()) status = Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (status.ok() && r > 0) best = std::min(best, ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return best;
}

// Device memory freed when it goes out of scope.
struct DeviceMemory {
  void* ptr = nullptr;
  ~DeviceMemory() { cudaFree(ptr); }
};

absl::StatusOr<double> MatmulFlops(CudaKernelBackend& kernels, ir::DType type, int repetitions) {
  constexpr int kN = 4096;
  const size_t bytes = size_t{kN} * kN * (type == ir::DType::kF32 ? 4 : 2);
  DeviceMemory a, b, c;
  for (DeviceMemory* m : {&a, &b, &c}) VDEV_RETURN_IF_ERROR(Check(cudaMalloc(&m->ptr, bytes), "cudaMalloc"));
  for (DeviceMemory* m : {&a, &b}) VDEV_RETURN_IF_ERROR(Check(cudaMemset(m->ptr, 0, bytes), "cudaMemset"));
  VDEV_ASSIGN_OR_RETURN(double seconds, BestSeconds(repetitions, [&] {
                          return kernels.Matmul(type, a.ptr, b.ptr, c.ptr, 1, kN, kN, kN, /*stream=*/nullptr);
                        }));
  return 2.0 * kN * kN * kN / seconds;
}

absl::StatusOr<DeviceSpec> ProbeGpu(int gpu, int repetitions) {
  VDEV_RETURN_IF_ERROR(Check(cudaSetDevice(gpu), "cudaSetDevice"));
  DeviceSpec spec;
  size_t free_bytes = 0, total_bytes = 0;
  VDEV_RETURN_IF_ERROR(Check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  spec.memory_bytes = static_cast<double>(total_bytes);
  constexpr size_t kCopyBytes = size_t{256} << 20;
  DeviceMemory from, to;
  VDEV_RETURN_IF_ERROR(Check(cudaMalloc(&from.ptr, kCopyBytes), "cudaMalloc"));
  VDEV_RETURN_IF_ERROR(Check(cudaMalloc(&to.ptr, kCopyBytes), "cudaMalloc"));
  VDEV_ASSIGN_OR_RETURN(double copy, BestSeconds(repetitions, [&] {
                          return Check(cudaMemcpyAsync(to.ptr, from.ptr, kCopyBytes, cudaMemcpyDeviceToDevice),
                                       "cudaMemcpyAsync");
                        }));
  spec.bandwidth = 2.0 * kCopyBytes / copy;
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernelBackend> kernels, CudaKernelBackend::Create(gpu));
  for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    VDEV_ASSIGN_OR_RETURN(spec.flops[dtype], MatmulFlops(*kernels, dtype, repetitions));
  }
  spec.default_flops = spec.flops[ir::DType::kF32];
  return spec;
}

// A link's bandwidth (256 MiB) and latency (4 bytes) by `copy(bytes)`, timed on the current device.
absl::StatusOr<LinkSpec> ProbeLink(int repetitions, const std::function<cudaError_t(size_t)>& copy) {
  constexpr size_t kBig = size_t{256} << 20;
  LinkSpec link;
  VDEV_ASSIGN_OR_RETURN(double big, BestSeconds(repetitions, [&] { return Check(copy(kBig), "copy"); }));
  VDEV_ASSIGN_OR_RETURN(double small, BestSeconds(repetitions, [&] { return Check(copy(4), "copy"); }));
  link.latency = small;
  link.bandwidth = kBig / std::max(big - small, 1e-9);
  return link;
}

absl::StatusOr<LinkSpec> ProbeCpuLink(int gpu, int repetitions) {
  VDEV_RETURN_IF_ERROR(Check(cudaSetDevice(gpu), "cudaSetDevice"));
  constexpr size_t kBig = size_t{256} << 20;
  void* host = nullptr;
  VDEV_RETURN_IF_ERROR(Check(cudaMallocHost(&host, kBig), "cudaMallocHost"));
  DeviceMemory device;
  if (const absl::Status allocated = Check(cudaMalloc(&device.ptr, kBig), "cudaMalloc"); !allocated.ok()) {
    cudaFreeHost(host);
    return allocated;
  }
  absl::StatusOr<LinkSpec> link = ProbeLink(
      repetitions, [&](size_t bytes) { return cudaMemcpyAsync(device.ptr, host, bytes, cudaMemcpyHostToDevice); });
  cudaFreeHost(host);
  return link;
}

absl::StatusOr<LinkSpec> ProbeGpuLink(int from, int to, int repetitions) {
  constexpr size_t kBig = size_t{256} << 20;
  DeviceMemory src, dst;
  VDEV_RETURN_IF_ERROR(Check(cudaSetDevice(to), "cudaSetDevice"));
  VDEV_RETURN_IF_ERROR(Check(cudaMalloc(&dst.ptr, kBig), "cudaMalloc"));
  VDEV_RETURN_IF_ERROR(Check(cudaSetDevice(from), "cudaSetDevice"));
  VDEV_RETURN_IF_ERROR(Check(cudaMalloc(&src.ptr, kBig), "cudaMalloc"));
  int can = 0;
  VDEV_RETURN_IF_ERROR(Check(cudaDeviceCanAccessPeer(&can, from, to), "cudaDeviceCanAccessPeer"));
  if (can) {
    cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();  // clears it
    else VDEV_RETURN_IF_ERROR(Check(e, "cudaDeviceEnablePeerAccess"));
  }
  return ProbeLink(repetitions, [&](size_t bytes) { return cudaMemcpyPeerAsync(dst.ptr, to, src.ptr, from, bytes); });
}

}  // namespace

absl::StatusOr<int> VisibleGpus() {
  int count = 0;
  VDEV_RETURN_IF_ERROR(Check(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  return count;
}

absl::StatusOr<std::vector<GpuProbe>> ProbeGpus(int gpus, int repetitions) {
  std::vector<GpuProbe> probed(gpus);
  for (int g = 0; g < gpus; ++g) {
    cudaDeviceProp properties;
    VDEV_RETURN_IF_ERROR(Check(cudaGetDeviceProperties(&properties, g), "cudaGetDeviceProperties"));
    probed[g].name = properties.name;
    VDEV_ASSIGN_OR_RETURN(probed[g].spec, ProbeGpu(g, repetitions));
    VDEV_ASSIGN_OR_RETURN(probed[g].to_cpu, ProbeCpuLink(g, repetitions));
    probed[g].to_gpu.resize(gpus);
  }
  for (int g = 0; g < gpus; ++g) {
    for (int h = g + 1; h < gpus; ++h) {
      VDEV_ASSIGN_OR_RETURN(probed[g].to_gpu[h], ProbeGpuLink(g, h, repetitions));
    }
  }
  return probed;
}

}  // namespace vdev::probe_internal
