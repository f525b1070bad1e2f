// softmax, layer_norm and rms_norm on the GPU: one block per row, statistics accumulated in f32
// (block reductions), each output rounded once. The row is read again for each pass (from L1/L2);
// rows whose length is a whole number of 16-byte packs are read and written in packs. A softmax
// over an inner axis (inner > 1) gives each thread one column instead.
#include <cmath>

#include "internal/device_math.cuh"

namespace vdev::cuda_ops {
namespace {

// Calls f(i, value) over this block's share of row[0, len) (as f32), in packs when `packed`.
template <typename T, typename F>
__device__ __forceinline__ void RowForEach(const T* __restrict__ row, int64_t len, bool packed, F&& f) {
  if (packed) {
    constexpr int kP = Pack<T>::kSize;
    for (int64_t p = threadIdx.x; p < len / kP; p += blockDim.x) {
      const Pack<T> v = reinterpret_cast<const Pack<T>*>(row)[p];
#pragma unroll
      for (int j = 0; j < kP; ++j) f(p * kP + j, ToF32(v.v[j]));
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) f(i, ToF32(row[i]));
}

// out[i] = g(i, x[i]) over this block's share of the row, in packs when `packed`.
template <typename T, typename G>
__device__ __forceinline__ void RowMap(const T* __restrict__ row, T* __restrict__ out, int64_t len, bool packed,
                                       G&& g) {
  if (packed) {
    constexpr int kP = Pack<T>::kSize;
    for (int64_t p = threadIdx.x; p < len / kP; p += blockDim.x) {
      Pack<T> v = reinterpret_cast<const Pack<T>*>(row)[p];
#pragma unroll
      for (int j = 0; j < kP; ++j) v.v[j] = FromF32<T>(g(p * kP + j, ToF32(v.v[j])));
      reinterpret_cast<Pack<T>*>(out)[p] = v;
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) out[i] = FromF32<T>(g(i, ToF32(row[i])));
}

template <typename T>
__global__ void SoftmaxRowsKernel(const T* __restrict__ x, T* __restrict__ y, int64_t len, bool packed) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * len;
  float max = -INFINITY;
  RowForEach(row, len, packed, [&](int64_t, float v) { max = fmaxf(max, v); });
  max = BlockReduce<true>(max, scratch);
  float sum = 0;
  RowForEach(row, len, packed, [&](int64_t, float v) { sum += expf(v - max); });
  const float scale = 1.0f / BlockReduce<false>(sum, scratch);
  RowMap(row, y + blockIdx.x * len, len, packed, [&](int64_t, float v) { return expf(v - max) * scale; });
}

// One thread per (outer, inner) column; neighbouring threads read neighbouring columns.
template <typename T>
__global__ void SoftmaxColumnsKernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t len,
                                     int64_t inner) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner; c += stride) {
    const int64_t base = (c / inner) * len * inner + c % inner;
    float max = -INFINITY, sum = 0;
    for (int64_t i = 0; i < len; ++i) max = fmaxf(max, ToF32(x[base + i * inner]));
    for (int64_t i = 0; i < len; ++i) sum += expf(ToF32(x[base + i * inner]) - max);
    const float scale = 1.0f / sum;
    for (int64_t i = 0; i < len; ++i) y[base + i * inner] = FromF32<T>(expf(ToF32(x[base + i * inner]) - max) * scale);
  }
}

// (x - mean) * rstd * gamma + beta; rms_norm is the case mean = 0, beta = nullptr.
template <typename T>
__global__ void NormKernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                           T* __restrict__ y, int64_t len, float epsilon, bool packed) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * len;
  const float inv_len = 1.0f / static_cast<float>(len);
  float mean = 0;
  if (beta != nullptr) {
    float sum = 0;
    RowForEach(row, len, packed, [&](int64_t, float v) { sum += v; });
    mean = BlockReduce<false>(sum, scratch) * inv_len;
  }
  float squares = 0;
  RowForEach(row, len, packed, [&](int64_t, float v) { squares += (v - mean) * (v - mean); });
  const float rstd = rsqrtf(BlockReduce<false>(squares, scratch) * inv_len + epsilon);
  RowMap(row, y + blockIdx.x * len, len, packed, [&](int64_t i, float v) {
    const float out = (v - mean) * rstd * ToF32(gamma[i]);
    return beta != nullptr ? out + ToF32(beta[i]) : out;
  });
}

// The fused all-reduce's epilogue: h = residual + sum, rounded to T, then y = rms_norm(h) * gamma.
// h may be the sum's memory (no __restrict__ there): each thread reads an element before writing it,
// and reads back only the elements it wrote itself.
template <typename T>
__global__ void AddRmsNormKernel(const T* __restrict__ residual, const T* sum, const T* __restrict__ gamma, T* h,
                                 T* __restrict__ y, int64_t len, float epsilon, bool packed) {
  __shared__ float scratch[32];
  const int64_t base = blockIdx.x * len;
  float squares = 0;
  // The sum and h move in packs too: element-wise they took more time than the rest of the kernel.
  if (packed) {
    constexpr int kP = Pack<T>::kSize;
    for (int64_t p = threadIdx.x; p < len / kP; p += blockDim.x) {
      const Pack<T> r = reinterpret_cast<const Pack<T>*>(residual + base)[p];
      const Pack<T> s = reinterpret_cast<const Pack<T>*>(sum + base)[p];
      Pack<T> v;
#pragma unroll
      for (int j = 0; j < kP; ++j) {
        v.v[j] = FromF32<T>(ToF32(r.v[j]) + ToF32(s.v[j]));
        squares += ToF32(v.v[j]) * ToF32(v.v[j]);
      }
      reinterpret_cast<Pack<T>*>(h + base)[p] = v;
    }
  } else {
    RowForEach(residual + base, len, false, [&](int64_t i, float r) {
      const T v = FromF32<T>(r + ToF32(sum[base + i]));
      h[base + i] = v;
      squares += ToF32(v) * ToF32(v);
    });
  }
  const float rstd = rsqrtf(BlockReduce<false>(squares, scratch) / static_cast<float>(len) + epsilon);
  RowMap(h + base, y + base, len, packed, [&](int64_t i, float v) { return v * rstd * ToF32(gamma[i]); });
}

// 32..256 threads: a warp for short rows, 256 for long ones.
int RowThreads(int64_t len, int pack) {
  const int64_t per_thread = len / pack + 1;
  int threads = 32;
  while (threads < kThreads && threads * 4 < per_thread) threads *= 2;
  return threads;
}

}  // namespace

cudaError_t LaunchSoftmax(Elem t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                          cudaStream_t stream) {
  if (outer == 0 || len == 0 || inner == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    if (inner == 1) {
      const bool packed = len % Pack<T>::kSize == 0 && Aligned16(x) && Aligned16(y);
      const int threads = RowThreads(len, packed ? Pack<T>::kSize : 1);
      SoftmaxRowsKernel<T><<<static_cast<unsigned>(outer), threads, 0, stream>>>(in, out, len, packed);
    } else {
      SoftmaxColumnsKernel<T><<<GridFor(outer * inner), kThreads, 0, stream>>>(in, out, outer, len, inner);
    }
  });
  return cudaGetLastError();
}

cudaError_t LaunchNorm(Elem t, const void* x, const void* gamma, const void* beta, void* y, int64_t rows, int64_t len,
                       float epsilon, cudaStream_t stream) {
  if (rows == 0 || len == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    const bool packed = len % Pack<T>::kSize == 0 && Aligned16(x) && Aligned16(y);
    const int threads = RowThreads(len, packed ? Pack<T>::kSize : 1);
    NormKernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta), static_cast<T*>(y), len,
        epsilon, packed);
  });
  return cudaGetLastError();
}

cudaError_t LaunchAddRmsNorm(Elem t, const void* residual, const void* sum, const void* gamma, void* h, void* y,
                             int64_t rows, int64_t len, float epsilon, cudaStream_t stream) {
  if (rows == 0 || len == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    const bool packed =
        len % Pack<T>::kSize == 0 && Aligned16(residual) && Aligned16(sum) && Aligned16(h) && Aligned16(y);
    const int threads = RowThreads(len, packed ? Pack<T>::kSize : 1);
    AddRmsNormKernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        static_cast<const T*>(residual), static_cast<const T*>(sum), static_cast<const T*>(gamma), static_cast<T*>(h),
        static_cast<T*>(y), len, epsilon, packed);
  });
  return cudaGetLastError();
}

}  // namespace vdev::cuda_ops
