// The CUDA kernels' launchers: plain pointers and sizes in, a launch on `stream` out.
//
// The op wrappers (src/kernels/cuda/*_ops.cc) check shapes and dtypes and call these; so does the
// hand-written layer of bench/layer_bench.cc, which must run the very kernels the executor runs.
// Every launcher only enqueues work (no allocation, no synchronisation, no host reads), so it may be
// captured into a CUDA graph. Each returns cudaGetLastError() after its launch. Sizes of zero
// launch nothing.
#ifndef VDEV_SRC_KERNELS_CUDA_INTERNAL_CUDA_OPS_H_
#define VDEV_SRC_KERNELS_CUDA_INTERNAL_CUDA_OPS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace vdev::cuda_ops {

enum class Elem { kF32, kF16, kBF16, kI32, kI64 };

enum class Unary { kRelu, kGeluErf, kGeluTanh, kSilu, kExp, kTanh, kSigmoid, kNegative, kSqrt, kRsqrt };
enum class Binary { kAdd, kSubtract, kMultiply, kDivide };

// Dims of a broadcast after adjacent dims were merged: out index -> element offsets of a and b
// (stride 0 where an operand is broadcast).
constexpr int kMaxRank = 8;
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// Where take() reports an index out of range: the first such index, its position in the indices
// and the axis size (flag != 0 once reported). Lives in device memory (CudaKernelBackend).
struct DeviceError {
  unsigned long long flag;
  long long index;
  long long position;
  long long size;
};

// Raises the dynamic shared-memory limit of the kernels that need more than 48 KB; once per device
// before any launch (CudaKernelBackend::Create).
cudaError_t Prepare();

// y[i] = op(x[i]), f32/f16/bf16.
cudaError_t LaunchUnary(Unary op, Elem t, const void* x, void* y, int64_t n, cudaStream_t stream);
// y = op(a, b) over `n` outputs; f32/f16/bf16, and i32/i64 for add, subtract, multiply (wrapping).
// `shape` == nullptr: a and b both have n elements.
cudaError_t LaunchBinary(Binary op, Elem t, const void* a, const void* b, void* y, int64_t n, const Strided* shape,
                         cudaStream_t stream);
// y[r, i] = silu(x[r, i]) * x[r, f + i], x: [rows, 2f].
cudaError_t LaunchSiluMul(Elem t, const void* x, void* y, int64_t rows, int64_t f, cudaStream_t stream);
// Conversion between f32, f16, bf16, i32, i64: floats to integers truncate and saturate (NaN -> 0),
// integers to f16/bf16 round once.
cudaError_t LaunchCast(Elem from, Elem to, const void* x, void* y, int64_t n, cudaStream_t stream);

// softmax over the middle axis of x viewed as [outer, len, inner].
cudaError_t LaunchSoftmax(Elem t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t stream);
// layer_norm (beta != nullptr) or rms_norm (beta == nullptr) of each row of x[rows, len].
cudaError_t LaunchNorm(Elem t, const void* x, const void* gamma, const void* beta, void* y, int64_t rows, int64_t len,
                       float epsilon, cudaStream_t stream);

// vdev.add_rms_norm: h = residual + sum (h may be sum's memory), y = rms_norm(h) * gamma; one block per row.
cudaError_t LaunchAddRmsNorm(Elem t, const void* residual, const void* sum, const void* gamma, void* h, void* y,
                             int64_t rows, int64_t len, float epsilon, cudaStream_t stream);

// y[out index] = x[sum index_d * in_strides[d]], elements of `elem_bytes` (1, 2, 4, 8) bytes.
cudaError_t LaunchPermute(int elem_bytes, const void* x, void* y, int rank, const int64_t* out_dims,
                          const int64_t* in_strides, cudaStream_t stream);
// `rows` rows of `row_bytes` bytes from src (pitch src_pitch) to dst (pitch dst_pitch): one piece
// of a concatenate or split.
cudaError_t LaunchCopyRows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch, int64_t rows,
                           int64_t row_bytes, cudaStream_t stream);
// out[o, i, :] = table[o, indices[i], :] with table [outer, size, row_bytes]; indices i32 or i64.
// An index outside [0, size) is clamped and reported in *error.
cudaError_t LaunchTake(const void* table, const void* indices, bool indices_i64, void* out, int64_t outer,
                       int64_t size, int64_t count, int64_t row_bytes, DeviceError* error, cudaStream_t stream);

// out[t, h, :] = softmax(q k^T / sqrt(d)) v per head from qkv[T, 3, H, D]; f32/f16/bf16, D <= 256.
// f16/bf16 with D of 64 or 128 run on tensor cores unless `tensor_cores` is false (the benchmark's
// peer: the FMA kernel every other case runs).
constexpr int64_t kMaxHeadDim = 256;
cudaError_t LaunchAttention(Elem t, const void* qkv, void* out, int64_t tokens, int64_t heads, int64_t head_dim,
                            bool causal, cudaStream_t stream, bool tensor_cores = true);

}  // namespace vdev::cuda_ops

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_CUDA_OPS_H_
