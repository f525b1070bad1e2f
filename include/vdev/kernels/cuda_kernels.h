// The CUDA kernels of vdev/kernels/kernels.h (built when CUDA is: VDEV_HAVE_CUDA_KERNELS) and the
// per-GPU state they share.
//
// Every op of the list at the top of kernels.h has a kernel for DeviceType::kCUDA, with the same
// semantics as the CPU kernel (the reference); f16/bf16 compute in f32 and round once. matmul runs
// through cuBLASLt (f16/bf16 with f32 compute, f32 with CUBLAS_COMPUTE_32F). A kernel only
// enqueues work on KernelContext::stream: no allocation, no synchronisation, no host reads, so a
// whole program can be captured into one CUDA graph. The one exception is the first matmul of a
// new shape, which builds its cuBLASLt plan on the host (no device work); run a program once
// eagerly before capturing it. take() cannot stop a running stream on a bad index: it clamps the
// index and records it in the backend's device error word, which CheckErrors() turns into a Status.
//
//   VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaKernelBackend> backend, CudaKernelBackend::Create(0));
//   KernelContext cuda{.device_type = DeviceType::kCUDA, .device_index = 0, .stream = stream,
//                      .backend = backend.get()};
//   KernelFn add = KernelRegistry::Global().Find("add", DeviceType::kCUDA);  // registered by Create
//   VDEV_RETURN_IF_ERROR(add(KernelCall{.inputs = in, .outputs = out, .attrs = &attrs, .context = &cuda}));
//   cudaStreamSynchronize(stream);
//   VDEV_RETURN_IF_ERROR(backend->CheckErrors());  // e.g. "take: index 7 (element 3 of the indices) ..."
#ifndef VDEV_CUDA_KERNELS_H_
#define VDEV_CUDA_KERNELS_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/kernels.h"

namespace vdev {

// Adds the CUDA kernels to `registry` for DeviceType::kCUDA. Idempotent: ops that already have a
// CUDA kernel keep it. CudaKernelBackend::Create calls it for KernelRegistry::Global().
void RegisterCudaKernels(KernelRegistry& registry);

// The state of the CUDA kernels on one GPU: the cuBLASLt handle and workspace, the matmul plans
// (one per shape and dtype, built on first use) and the device error word of take(). Made once
// per GPU and worker; KernelContext::backend points at it. Not copyable. The kernels launch on
// the calling thread's current device (the executor makes KernelContext::device_index current).
// The plan cache is thread-safe, but all matmuls share one cuBLASLt workspace: matmuls of one
// backend must not run concurrently on different streams.
class CudaKernelBackend {
 public:
  // Sets `device` current, creates the cuBLASLt handle, allocates the workspace and error word,
  // and registers the CUDA kernels globally. Internal on a CUDA or cuBLASLt failure.
  static absl::StatusOr<std::unique_ptr<CudaKernelBackend>> Create(int device);
  ~CudaKernelBackend();
  CudaKernelBackend(const CudaKernelBackend&) = delete;
  CudaKernelBackend& operator=(const CudaKernelBackend&) = delete;

  int device() const;

  // Reads and clears the device error word; call after synchronising the streams that ran kernels.
  // InvalidArgument naming the op, the index and its position when take() saw an index out of range.
  absl::Status CheckErrors();

  // c[i] = a[i] @ b[i] for i < batch, all dense row-major at strides m*k, k*n, m*n; f32, f16 or
  // bf16 (the matmul kernel's own path, also what bench/layer_bench times). Builds the plan of a
  // new (dtype, batch, m, n, k) on the host first.
  absl::Status Matmul(ir::DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n,
                      int64_t k, void* stream);

  // The device word take() reports into (a cuda_ops::DeviceError in device memory).
  void* error_word() const;

  // Plans built so far (for tests: a replay must not build any).
  int64_t matmul_plans() const;

 private:
  struct State;
  explicit CudaKernelBackend(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vdev

#endif  // VDEV_CUDA_KERNELS_H_
