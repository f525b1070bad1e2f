// attention(qkv[T,3,H,D], causal) -> [T,H,D] on the GPU: a tiled kernel with online softmax.
//
// A block takes kQueries queries of one head (kQueriesPerWarp per warp) and walks the keys they see
// in tiles of 32: the K and V tile is staged in shared memory as f32, lane j scores key j against
// each of its warp's queries, the running maximum and sum are rescaled (online softmax), and each
// lane accumulates output dims lane, lane+32, ... in registers. Scores are in base 2 (q is
// pre-scaled by log2(e)/sqrt(D)), which is the same softmax. Plain FMA, no tensor cores: correct
// first; a causal block stops at its last query's key, and the heaviest blocks start first.
#include <cmath>

#include "internal/device_math.cuh"

namespace vdev::cuda_ops {
namespace {

constexpr int kWarps = 8;
constexpr int kQueriesPerWarp = 4;
constexpr int kQueries = kWarps * kQueriesPerWarp;
constexpr int kKeys = 32;
constexpr int kMaxChunks = static_cast<int>(kMaxHeadDim / 32);

__host__ __device__ inline int64_t PaddedDim(int64_t d) { return (d + 3) / 4 * 4; }

// Floats of shared memory: K tile [kKeys][Dp+1] (odd stride: lane j reading row j hits bank
// j*(Dp+1)+d, all distinct), V tile [kKeys][D], queries [kQueries][Dp].
int64_t SharedFloats(int64_t d) { return kKeys * (PaddedDim(d) + 1) + kKeys * d + kQueries * PaddedDim(d); }

// rows x d elements at src (row r at src + r * src_stride; rows past `valid` read as zero) into
// dst as f32 times `scale` (row stride dst_stride, dims d..dst_stride-1 zero-filled).
template <typename T>
__device__ __forceinline__ void Stage(const T* __restrict__ src, int64_t src_stride, int rows, int valid, int d,
                                      float* dst, int dst_stride, int pad_to, float scale, bool packed) {
  if (packed) {  // d and src_stride are whole packs
    constexpr int kP = Pack<T>::kSize;
    const int per_row = d / kP;
    for (int e = threadIdx.x; e < rows * per_row; e += blockDim.x) {
      const int r = e / per_row, c = e % per_row;
      Pack<T> v;
      if (r < valid) v = reinterpret_cast<const Pack<T>*>(src + r * src_stride)[c];
#pragma unroll
      for (int j = 0; j < kP; ++j) dst[r * dst_stride + c * kP + j] = r < valid ? ToF32(v.v[j]) * scale : 0.0f;
    }
  } else {
    for (int e = threadIdx.x; e < rows * d; e += blockDim.x) {
      const int r = e / d, c = e % d;
      dst[r * dst_stride + c] = r < valid ? ToF32(src[r * src_stride + c]) * scale : 0.0f;
    }
  }
  for (int e = threadIdx.x; e < rows * (pad_to - d); e += blockDim.x)
    dst[(e / (pad_to - d)) * dst_stride + d + e % (pad_to - d)] = 0.0f;
}

template <typename T, int kChunks>
__global__ void __launch_bounds__(kWarps * 32) AttentionKernel(const T* __restrict__ qkv, T* __restrict__ out,
                                                              int tokens, int heads, int d, bool causal,
                                                              float q_scale, bool packed) {
  extern __shared__ float shared[];
  const int dp = static_cast<int>(PaddedDim(d));
  float* ks = shared;
  float* vs = ks + kKeys * (dp + 1);
  float* qs = vs + kKeys * d;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int h = blockIdx.y;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kQueries;  // the causal blocks with the most keys first
  const int64_t token_stride = 3LL * heads * d;
  const T* q_base = qkv + static_cast<int64_t>(h) * d;
  const T* k_base = q_base + static_cast<int64_t>(heads) * d;
  const T* v_base = k_base + static_cast<int64_t>(heads) * d;

  Stage(q_base + q0 * token_stride, token_stride, kQueries, min(kQueries, tokens - q0), d, qs, dp, dp, q_scale,
        packed);

  float m[kQueriesPerWarp], l[kQueriesPerWarp], acc[kQueriesPerWarp][kChunks];
  int query[kQueriesPerWarp];
#pragma unroll
  for (int i = 0; i < kQueriesPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
    query[i] = q0 + warp * kQueriesPerWarp + i;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[i][c] = 0.0f;
  }
  const int key_end = causal ? min(tokens, q0 + kQueries) : tokens;
  for (int k0 = 0; k0 < key_end; k0 += kKeys) {
    __syncthreads();  // the previous tile is no longer read (and the queries are staged)
    const int valid = min(kKeys, tokens - k0);
    Stage(k_base + k0 * token_stride, token_stride, kKeys, valid, d, ks, dp + 1, dp, 1.0f, packed);
    Stage(v_base + k0 * token_stride, token_stride, kKeys, valid, d, vs, d, d, 1.0f, packed);
    __syncthreads();
    if (causal && query[kQueriesPerWarp - 1] < k0) continue;  // every key of this tile is in the future

    const int key = k0 + lane;
    float s[kQueriesPerWarp] = {};
    const float* k_row = ks + lane * (dp + 1);
    for (int e = 0; e < dp; e += 4) {
      const float k_0 = k_row[e], k_1 = k_row[e + 1], k_2 = k_row[e + 2], k_3 = k_row[e + 3];
#pragma unroll
      for (int i = 0; i < kQueriesPerWarp; ++i) {
        const float4 q = *reinterpret_cast<const float4*>(qs + (warp * kQueriesPerWarp + i) * dp + e);
        s[i] += q.x * k_0 + q.y * k_1 + q.z * k_2 + q.w * k_3;
      }
    }
    float p[kQueriesPerWarp];
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      // A query past the end (its row is never written) sees every real key, so nothing is NaN.
      const bool seen = key < tokens && (!causal || key <= query[i] || query[i] >= tokens);
      const float score = seen ? s[i] : -INFINITY;
      const float m_new = fmaxf(m[i], WarpMax(score));
      const float correction = exp2f(m[i] - m_new);
      p[i] = exp2f(score - m_new);
      l[i] = l[i] * correction + p[i];
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) acc[i][c] *= correction;
    }
    for (int j = 0; j < kKeys; ++j) {
      float v[kChunks];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) v[c] = lane + 32 * c < d ? vs[j * d + lane + 32 * c] : 0.0f;
#pragma unroll
      for (int i = 0; i < kQueriesPerWarp; ++i) {
        const float pj = __shfl_sync(0xffffffffu, p[i], j);
#pragma unroll
        for (int c = 0; c < kChunks; ++c) acc[i][c] += pj * v[c];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kQueriesPerWarp; ++i) {
    const float inv = 1.0f / WarpSum(l[i]);
    if (query[i] >= tokens) continue;
    T* o = out + (static_cast<int64_t>(query[i]) * heads + h) * d;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (lane + 32 * c < d) o[lane + 32 * c] = FromF32<T>(acc[i][c] * inv);
  }
}

template <typename T, typename F>
void WithChunks(int chunks, F&& f) {
  switch (chunks) {
    case 1: return f(AttentionKernel<T, 1>);
    case 2: return f(AttentionKernel<T, 2>);
    case 3: return f(AttentionKernel<T, 3>);
    case 4: return f(AttentionKernel<T, 4>);
    case 5: return f(AttentionKernel<T, 5>);
    case 6: return f(AttentionKernel<T, 6>);
    case 7: return f(AttentionKernel<T, 7>);
    default: return f(AttentionKernel<T, kMaxChunks>);
  }
}

}  // namespace

cudaError_t Prepare() {
  const int bytes = static_cast<int>(SharedFloats(kMaxHeadDim) * sizeof(float));
  cudaError_t result = cudaSuccess;
  for (Elem t : {Elem::kF32, Elem::kF16, Elem::kBF16}) {
    DispatchFloat(t, [&](auto tag) {
      for (int chunks = 1; chunks <= kMaxChunks; ++chunks) {
        WithChunks<decltype(tag)>(chunks, [&](auto kernel) {
          cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
          if (result == cudaSuccess) result = e;
        });
      }
    });
  }
  return result;
}

cudaError_t LaunchAttention(Elem t, const void* qkv, void* out, int64_t tokens, int64_t heads, int64_t head_dim,
                            bool causal, cudaStream_t stream) {
  if (tokens == 0 || heads == 0 || head_dim == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    const bool packed = head_dim % Pack<T>::kSize == 0 && Aligned16(qkv);
    const float q_scale = 1.4426950408889634f / sqrtf(static_cast<float>(head_dim));
    const dim3 grid(static_cast<unsigned>((tokens + kQueries - 1) / kQueries), static_cast<unsigned>(heads));
    const size_t shared = SharedFloats(head_dim) * sizeof(float);
    WithChunks<T>(static_cast<int>((head_dim + 31) / 32), [&](auto kernel) {
      kernel<<<grid, kWarps * 32, shared, stream>>>(static_cast<const T*>(qkv), static_cast<T*>(out),
                                                    static_cast<int>(tokens), static_cast<int>(heads),
                                                    static_cast<int>(head_dim), causal, q_scale, packed);
    });
  });
  return cudaGetLastError();
}

}  // namespace vdev::cuda_ops
