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

#include "src/kernels/internal/elementwise_math.h"

namespace vdev::cuda_ops {

enum class Elem { kF32, kF16, kBF16, kI32, kI64, kF64, kI8, kU8 };

// The element-wise ops, as the CPU kernels name them (their arithmetic is shared too).
using Unary = kernels_internal::UnaryOp;
using Binary = kernels_internal::BinaryOp;

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
// y = op(a, b) over `n` outputs; f32/f16/bf16 (computed in f32), f64 (in f64) and i8/u8/i32/i64
// (wrapping; divide and power as src/kernels/internal/integer_math.h defines them).
// `shape` == nullptr: a and b both have n elements.
cudaError_t LaunchBinary(Binary op, Elem t, const void* a, const void* b, void* y, int64_t n, const Strided* shape,
                         cudaStream_t stream);
// y[r, i] = silu(x[r, i]) * x[r, f + i], x: [rows, 2f].
cudaError_t LaunchSiluMul(Elem t, const void* x, void* y, int64_t rows, int64_t f, cudaStream_t stream);
// Conversion between f32, f16, bf16, f64, i8, u8, i32, i64: floats to integers truncate and
// saturate (NaN -> 0), integers to integers wrap, everything else rounds once to nearest even.
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
cudaError_t LaunchTake(const void* table, const void* indices, bool indices_i64, void* out, int64_t outer, int64_t size,
                       int64_t count, int64_t row_bytes, DeviceError* error, cudaStream_t stream);

// The ops of select.cu. Comparisons: y (bool bytes) = a cmp b under `shape`'s broadcast (nullptr:
// dense); kinds 0..5 = equal, not_equal, less, less_equal, greater, greater_equal.
cudaError_t LaunchCompare(int kind, Elem t, const void* a, const void* b, uint8_t* y, int64_t n, const Strided* shape,
                          cudaStream_t stream);
// y[i] = cond[i] ? x[i] : z[i] with each operand's strides over `rank` output dims (0: broadcast).
cudaError_t LaunchWhere(int elem_bytes, const uint8_t* cond, const void* x, const void* z, void* y, int rank,
                        const int64_t* dims, const int64_t* const strides[3], cudaStream_t stream);
// y[o] = reduce over the `reduced` dims of x; x's dims split into kept (out_dims, x strides
// kept_strides) and reduced (red_dims, red_strides). kind 0..4 = sum, mean, max, min, prod; f32 accumulation.
cudaError_t LaunchReduce(int kind, Elem t, const void* x, void* y, int kept_rank, const int64_t* out_dims,
                         const int64_t* kept_strides, int red_rank, const int64_t* red_dims, const int64_t* red_strides,
                         cudaStream_t stream);
// log_softmax over the middle axis of x viewed as [outer, len, inner]: one thread per row.
cudaError_t LaunchLogSoftmax(Elem t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                             cudaStream_t stream);

// out[t, h, :] = softmax(q k^T / sqrt(d)) v per head from qkv[T, 3, H, D]; f32/f16/bf16, D <= 256.
// f16/bf16 with D of 64 or 128 run on tensor cores unless `tensor_cores` is false (the benchmark's
// peer: the FMA kernel every other case runs).
constexpr int64_t kMaxHeadDim = 256;
cudaError_t LaunchAttention(Elem t, const void* qkv, void* out, int64_t tokens, int64_t heads, int64_t head_dim,
                            bool causal, cudaStream_t stream, bool tensor_cores = true);

}  // namespace vdev::cuda_ops

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_CUDA_OPS_H_
