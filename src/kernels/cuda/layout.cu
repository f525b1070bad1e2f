// Layout CUDA kernels: transpose (any permutation), the row copies that concatenate and split are
// made of, and take. They move bytes without looking at them, so one kernel serves every dtype of
// a width; copies use the widest word (16, 8, 4, 2 or 1 bytes) that every address and size allows.
#include <cstdint>

#include "internal/device_math.cuh"

namespace vdev::cuda_ops {
namespace {

template <int kBytes>
struct WordOf;
template <>
struct WordOf<1> {
  using type = uint8_t;
};
template <>
struct WordOf<2> {
  using type = uint16_t;
};
template <>
struct WordOf<4> {
  using type = uint32_t;
};
template <>
struct WordOf<8> {
  using type = uint64_t;
};
template <>
struct WordOf<16> {
  using type = uint4;
};
template <int kBytes>
using Word = typename WordOf<kBytes>::type;

// The widest word that divides every value (addresses, pitches, sizes).
int WordBytes(std::initializer_list<int64_t> values) {
  int64_t bits = 16;
  for (int64_t v : values) bits |= v;
  return static_cast<int>(bits & -bits);
}

template <typename F>
void WithWord(int bytes, F&& f) {
  switch (bytes) {
    case 16: return f(Word<16>{});
    case 8: return f(Word<8>{});
    case 4: return f(Word<4>{});
    case 2: return f(Word<2>{});
    default: return f(Word<1>{});
  }
}

struct PermuteShape {
  int rank;
  int64_t dims[kMaxRank];
  int64_t in_strides[kMaxRank];
};

template <typename W>
__global__ void PermuteKernel(const W* __restrict__ x, W* __restrict__ y, int64_t n, PermuteShape s) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t rest = i, src = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      src += (rest % s.dims[d]) * s.in_strides[d];
      rest /= s.dims[d];
    }
    y[i] = x[src];
  }
}

// Rows of `words` words each, at word pitches.
template <typename W>
__global__ void CopyRowsKernel(const W* __restrict__ src, int64_t src_pitch, W* __restrict__ dst, int64_t dst_pitch,
                               int64_t rows, int64_t words) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * words; i += stride) {
    const int64_t r = i / words, c = i % words;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

template <typename I>
__device__ __forceinline__ int64_t CheckedIndex(const I* indices, int64_t i, int64_t size, DeviceError* error) {
  const int64_t at = static_cast<int64_t>(indices[i]);
  if (at >= 0 && at < size) return at;
  if (atomicCAS(&error->flag, 0ull, 1ull) == 0ull) {
    error->index = at;
    error->position = i;
    error->size = size;
  }
  if (size == 0) return -1;  // an empty axis: nothing to read, the output gets zeros
  return at < 0 ? 0 : size - 1;
}

// Thread per word of out[outer, count, words].
template <typename W, typename I>
__global__ void TakeKernel(const W* __restrict__ table, const I* __restrict__ indices, W* __restrict__ out,
                           int64_t outer, int64_t size, int64_t count, int64_t words, DeviceError* error) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t n = outer * count * words;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t c = i % words, row = i / words, k = row % count, o = row / count;
    const int64_t at = CheckedIndex(indices, k, size, error);
    out[i] = at < 0 ? W{} : table[(o * size + at) * words + c];
  }
}

}  // namespace

cudaError_t LaunchPermute(int elem_bytes, const void* x, void* y, int rank, const int64_t* out_dims,
                          const int64_t* in_strides, cudaStream_t stream) {
  PermuteShape s{};
  s.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    s.dims[d] = out_dims[d];
    s.in_strides[d] = in_strides[d];
    n *= out_dims[d];
  }
  if (n == 0) return cudaSuccess;
  WithWord(elem_bytes, [&](auto word) {
    using W = decltype(word);
    PermuteKernel<W><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const W*>(x), static_cast<W*>(y), n, s);
  });
  return cudaGetLastError();
}

cudaError_t LaunchCopyRows(const void* src, int64_t src_pitch, void* dst, int64_t dst_pitch, int64_t rows,
                           int64_t row_bytes, cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0) return cudaSuccess;
  const int bytes =
      WordBytes({static_cast<int64_t>(reinterpret_cast<uintptr_t>(src)),
                 static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst)), src_pitch, dst_pitch, row_bytes});
  WithWord(bytes, [&](auto word) {
    using W = decltype(word);
    const int64_t words = row_bytes / bytes;
    CopyRowsKernel<W><<<GridFor(rows * words), kThreads, 0, stream>>>(
        static_cast<const W*>(src), src_pitch / bytes, static_cast<W*>(dst), dst_pitch / bytes, rows, words);
  });
  return cudaGetLastError();
}

cudaError_t LaunchTake(const void* table, const void* indices, bool indices_i64, void* out, int64_t outer, int64_t size,
                       int64_t count, int64_t row_bytes, DeviceError* error, cudaStream_t stream) {
  if (outer == 0 || count == 0 || row_bytes == 0) return cudaSuccess;
  const int bytes = WordBytes({static_cast<int64_t>(reinterpret_cast<uintptr_t>(table)),
                               static_cast<int64_t>(reinterpret_cast<uintptr_t>(out)), row_bytes});
  WithWord(bytes, [&](auto word) {
    using W = decltype(word);
    const int64_t words = row_bytes / bytes;
    const unsigned grid = GridFor(outer * count * words);
    if (indices_i64) {
      TakeKernel<W, int64_t><<<grid, kThreads, 0, stream>>>(static_cast<const W*>(table),
                                                            static_cast<const int64_t*>(indices), static_cast<W*>(out),
                                                            outer, size, count, words, error);
    } else {
      TakeKernel<W, int32_t><<<grid, kThreads, 0, stream>>>(static_cast<const W*>(table),
                                                            static_cast<const int32_t*>(indices), static_cast<W*>(out),
                                                            outer, size, count, words, error);
    }
  });
  return cudaGetLastError();
}

}  // namespace vdev::cuda_ops
