// Launchers of the ops the ONNX frontend maps onto (cuda_ops.h): comparisons, where, reductions
// and log_softmax. Kept simple: one thread per output element (a reduction or a log_softmax row
// loops over its inputs in f32), grid-stride loops; correct for every shape the CPU kernels
// accept, not tuned.
#include "internal/device_math.cuh"

namespace vdev::cuda_ops {
namespace {

struct Walk3 {
  int rank;
  int64_t dims[kMaxRank];
  int64_t strides[3][kMaxRank];
};

template <typename T>
__device__ __forceinline__ float Load(const T* p, int64_t i) {
  if constexpr (std::is_integral_v<T>) return static_cast<float>(p[i]);
  else return ToF32(p[i]);
}

template <typename T>
__device__ __forceinline__ double LoadExact(const T* p, int64_t i) {
  if constexpr (std::is_integral_v<T>) return static_cast<double>(p[i]);
  else return static_cast<double>(ToF32(p[i]));
}

template <typename T>
__global__ void CompareKernel(int kind, const T* a, const T* b, uint8_t* y, int64_t n, Strided s, bool dense) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t ia = i, ib = i;
    if (!dense) {
      ia = ib = 0;
      int64_t rest = i;
      for (int d = s.rank - 1; d >= 0; --d) {
        const int64_t c = rest % s.dims[d];
        rest /= s.dims[d];
        ia += c * s.a_strides[d];
        ib += c * s.b_strides[d];
      }
    }
    const double x = LoadExact(a, ia), z = LoadExact(b, ib);
    bool r = false;
    switch (kind) {
      case 0: r = x == z; break;
      case 1: r = x != z; break;
      case 2: r = x < z; break;
      case 3: r = x <= z; break;
      case 4: r = x > z; break;
      default: r = x >= z; break;
    }
    y[i] = r ? 1 : 0;
  }
}

template <typename W>
__global__ void WhereKernel(const uint8_t* cond, const W* x, const W* z, W* y, int64_t n, Walk3 s) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rest = i, at[3] = {0, 0, 0};
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t c = rest % s.dims[d];
      rest /= s.dims[d];
      for (int k = 0; k < 3; ++k) at[k] += c * s.strides[k][d];
    }
    y[i] = cond[at[0]] ? x[at[1]] : z[at[2]];
  }
}

struct ReduceShape {
  int kept_rank, red_rank;
  int64_t out_dims[kMaxRank], kept_strides[kMaxRank], red_dims[kMaxRank], red_strides[kMaxRank];
  int64_t red_count;
};

template <typename T>
__global__ void ReduceKernel(int kind, const T* x, T* y, int64_t n, ReduceShape s) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += step) {
    int64_t rest = o, base = 0;
    for (int d = s.kept_rank - 1; d >= 0; --d) {
      base += (rest % s.out_dims[d]) * s.kept_strides[d];
      rest /= s.out_dims[d];
    }
    float acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : kind == 4 ? 1.0f : 0.0f;
    for (int64_t r = 0; r < s.red_count; ++r) {
      int64_t left = r, at = base;
      for (int d = s.red_rank - 1; d >= 0; --d) {
        at += (left % s.red_dims[d]) * s.red_strides[d];
        left /= s.red_dims[d];
      }
      const float v = Load(x, at);
      if (kind == 2) acc = (v != v || v > acc) ? v : acc;
      else if (kind == 3) acc = (v != v || v < acc) ? v : acc;
      else if (kind == 4) acc *= v;
      else acc += v;
    }
    if (kind == 1) acc /= static_cast<float>(s.red_count);
    if constexpr (std::is_integral_v<T>) y[o] = static_cast<T>(acc);
    else y[o] = FromF32<T>(acc);
  }
}

template <typename T>
__global__ void LogSoftmaxKernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  const int64_t rows = outer * inner, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    float max = -INFINITY;
    for (int64_t i = 0; i < len; ++i) max = fmaxf(max, ToF32(x[base + i * inner]));
    float sum = 0;
    for (int64_t i = 0; i < len; ++i) sum += expf(ToF32(x[base + i * inner]) - max);
    const float shift = max + logf(sum);
    for (int64_t i = 0; i < len; ++i) y[base + i * inner] = FromF32<T>(ToF32(x[base + i * inner]) - shift);
  }
}

// Calls f(W{}) with W an unsigned integer of `bytes` bytes (1, 2, 4 or 8): any dtype moves as words.
template <typename F>
void ByWidth(int bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

}  // namespace

cudaError_t LaunchCompare(int kind, Elem t, const void* a, const void* b, uint8_t* y, int64_t n, const Strided* shape,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const Strided s = shape != nullptr ? *shape : Strided{};
  DispatchAny(t, [&](auto tag) {
    using T = decltype(tag);
    CompareKernel<T><<<GridFor(n), kThreads, 0, stream>>>(kind, static_cast<const T*>(a), static_cast<const T*>(b), y,
                                                          n, s, shape == nullptr);
  });
  return cudaGetLastError();
}

cudaError_t LaunchWhere(int elem_bytes, const uint8_t* cond, const void* x, const void* z, void* y, int rank,
                        const int64_t* dims, const int64_t* const strides[3], cudaStream_t stream) {
  Walk3 s{};
  s.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    s.dims[d] = dims[d];
    n *= dims[d];
    for (int k = 0; k < 3; ++k) s.strides[k][d] = strides[k][d];
  }
  if (n == 0) return cudaSuccess;
  ByWidth(elem_bytes, [&](auto word) {
    using W = decltype(word);
    WhereKernel<W><<<GridFor(n), kThreads, 0, stream>>>(cond, static_cast<const W*>(x), static_cast<const W*>(z),
                                                        static_cast<W*>(y), n, s);
  });
  return cudaGetLastError();
}

cudaError_t LaunchReduce(int kind, Elem t, const void* x, void* y, int kept_rank, const int64_t* out_dims,
                         const int64_t* kept_strides, int red_rank, const int64_t* red_dims, const int64_t* red_strides,
                         cudaStream_t stream) {
  ReduceShape s{};
  s.kept_rank = kept_rank;
  s.red_rank = red_rank;
  s.red_count = 1;
  int64_t n = 1;
  for (int d = 0; d < kept_rank; ++d) {
    s.out_dims[d] = out_dims[d];
    s.kept_strides[d] = kept_strides[d];
    n *= out_dims[d];
  }
  for (int d = 0; d < red_rank; ++d) {
    s.red_dims[d] = red_dims[d];
    s.red_strides[d] = red_strides[d];
    s.red_count *= red_dims[d];
  }
  if (n == 0) return cudaSuccess;
  DispatchAny(t, [&](auto tag) {
    using T = decltype(tag);
    ReduceKernel<T><<<GridFor(n), kThreads, 0, stream>>>(kind, static_cast<const T*>(x), static_cast<T*>(y), n, s);
  });
  return cudaGetLastError();
}

cudaError_t LaunchLogSoftmax(Elem t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                             cudaStream_t stream) {
  if (outer * inner == 0 || len == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    LogSoftmaxKernel<T><<<GridFor(outer * inner), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                         outer, len, inner);
  });
  return cudaGetLastError();
}

}  // namespace vdev::cuda_ops
