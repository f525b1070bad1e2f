// The one-layer transformer benchmark (bench/layer_bench.cc): the pieces a further column needs.
//
// Columns measure the same layer (hidden 4096, 32 heads of 128, gated MLP of 11008, bf16, one
// worker): the hand-written baseline (HandLayer: the CUDA kernels' launchers and cuBLASLt in
// sequence, captured as one CUDA graph) and, to be added by the executor's side, the program of
// LayerProgramText run by the executor with graph replay. Each is timed with MedianMicros.
//
//   std::string text = LayerProgramText(2048);   // what `vdev run` / the executor would load
//   VDEV_ASSIGN_OR_RETURN(double us, MedianMicros(stream, 20, [&] { return executor.Replay(stream); }));
#ifndef VDEV_BENCH_LAYER_BENCH_H_
#define VDEV_BENCH_LAYER_BENCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transformer_program.h"
#include "vdev/kernels/cuda_kernels.h"

namespace vdev::bench {

// The layer's shape: TransformerShape with one layer, tensor_parallel 1, bf16.
TransformerShape LayerShape(int64_t tokens);

// The text of the layer's program (TransformerProgram of LayerShape): rms_norm, fused QKV matmul,
// causal attention, output projection, all-reduce (a world of one), residual add, rms_norm, gate/up
// matmul, silu_mul, down projection, all-reduce, residual add; the result copied to cpu:0.
std::string LayerProgramText(int64_t tokens);

// The median over `samples` of the time between cudaEvents recorded on `stream` around one call
// of `enqueue` (which enqueues work on `stream`), in microseconds, after one untimed warm-up call.
absl::StatusOr<double> MedianMicros(cudaStream_t stream, int samples, const std::function<absl::Status()>& enqueue);

// The layer written by hand with the CUDA kernels' launchers and CudaKernelBackend::Matmul, on
// its own device buffers (random weights and input). The all-reduces of a world of one are the
// identity and are left out.
class HandLayer {
 public:
  static absl::StatusOr<std::unique_ptr<HandLayer>> Create(CudaKernelBackend* backend, int64_t tokens);
  ~HandLayer();
  HandLayer(const HandLayer&) = delete;
  HandLayer& operator=(const HandLayer&) = delete;

  // Enqueues the layer on `stream`.
  absl::Status Enqueue(cudaStream_t stream);
  // Captures Enqueue into a CUDA graph (after one eager run that builds the matmul plans).
  absl::Status Capture(cudaStream_t stream);
  // Replays the captured graph on `stream`.
  absl::Status Replay(cudaStream_t stream);

 private:
  struct Buffers;
  HandLayer(CudaKernelBackend* backend, TransformerShape shape, std::unique_ptr<Buffers> buffers);
  CudaKernelBackend* backend_;
  TransformerShape shape_;
  std::unique_ptr<Buffers> buffers_;
  cudaGraphExec_t graph_ = nullptr;
};

}  // namespace vdev::bench

#endif  // VDEV_BENCH_LAYER_BENCH_H_
