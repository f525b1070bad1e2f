// attention(qkv[T,3,H,D], causal) -> [T,H,D] on the GPU: tiled kernels with online softmax.
//
// f16/bf16 with D of 64 or 128 (and 16-byte aligned tensors) take the tensor-core kernel below
// (MmaAttentionKernel). Everything else takes the FMA kernel: a block takes kQueries queries of
// one head (kQueriesPerWarp per warp) and walks the keys they see in tiles of 32: the K and V tile
// is staged in shared memory as f32, lane j scores key j against each of its warp's queries, the
// running maximum and sum are rescaled (online softmax), and each lane accumulates output dims
// lane, lane+32, ... in registers. Both score in base 2 (q k scaled by log2(e)/sqrt(D)), which is
// the same softmax; a causal block stops at its last query's key, and the heaviest blocks start
// first.
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
__global__ void __launch_bounds__(kWarps * 32)
    AttentionKernel(const T* __restrict__ qkv, T* __restrict__ out, int tokens, int heads, int d, bool causal,
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

  Stage(q_base + q0 * token_stride, token_stride, kQueries, min(kQueries, tokens - q0), d, qs, dp, dp, q_scale, packed);

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

// --- The tensor-core path: f16/bf16 with D of 64 or 128 (the transformer's heads). ---
//
// FlashAttention-2's shape with mma.sync m16n8k16 (f32 accumulation): a block of 4 warps takes 64
// queries of one head, 16 per warp, whose Q fragments stay in registers; per tile of 64 keys the
// block stages K (row-major) and V (transposed, so a B fragment is two adjacent keys) in shared
// memory; each warp computes its 16x64 scores S = Q K^T into registers, masks and rescales them
// (online softmax over the quad of lanes that holds a row), rounds P to the input type and
// accumulates O += P V in registers. Rows are padded by 8 elements so the fragment loads of a warp
// hit 32 different banks.
constexpr int kMmaQueries = 64;
constexpr int kMmaKeys = 64;
constexpr int kMmaThreads = 128;

template <int kD>
constexpr int MmaSharedBytes() {
  return ((kMmaQueries + kMmaKeys) * (kD + 8) + kD * (kMmaKeys + 8)) * 2;
}

template <typename T>
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// Two elements at p (p even-aligned) as one fragment register.
template <typename T>
__device__ __forceinline__ uint32_t Load2(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// (lo, hi) rounded to T, lo in the low half.
template <typename T>
__device__ __forceinline__ uint32_t Pack2(float lo, float hi) {
  uint32_t bits;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    bits = *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    bits = *reinterpret_cast<const uint32_t*>(&v);
  }
  return bits;
}

template <typename T, int kD>
__global__ void __launch_bounds__(kMmaThreads) MmaAttentionKernel(const T* __restrict__ qkv, T* __restrict__ out,
                                                                  int tokens, int heads, bool causal, float scale) {
  constexpr int kStride = kD + 8, kVStride = kMmaKeys + 8, kPacks = kD / 8;
  extern __shared__ __align__(16) unsigned char raw[];
  T* qs = reinterpret_cast<T*>(raw);   // [queries][kStride]
  T* ks = qs + kMmaQueries * kStride;  // [keys][kStride]
  T* vt = ks + kMmaKeys * kStride;     // [kD][kVStride]: V transposed
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int h = blockIdx.y;
  const int64_t token_stride = 3LL * heads * kD;
  const T* q_base = qkv + static_cast<int64_t>(h) * kD;
  const T* k_base = q_base + static_cast<int64_t>(heads) * kD;
  const T* v_base = k_base + static_cast<int64_t>(heads) * kD;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kMmaQueries;  // the causal blocks with the most keys first

  for (int e = threadIdx.x; e < kMmaQueries * kPacks; e += kMmaThreads) {
    const int r = e / kPacks, c = e % kPacks;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (q0 + r < tokens) v = *reinterpret_cast<const uint4*>(q_base + (q0 + r) * token_stride + c * 8);
    *reinterpret_cast<uint4*>(qs + r * kStride + c * 8) = v;
  }
  __syncthreads();
  const int row0 = warp * 16;
  uint32_t qf[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    const T* p = qs + (row0 + g) * kStride + kk * 16 + 2 * t;
    qf[kk][0] = Load2(p);
    qf[kk][1] = Load2(p + 8 * kStride);
    qf[kk][2] = Load2(p + 8);
    qf[kk][3] = Load2(p + 8 * kStride + 8);
  }
  float o[kD / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const int query[2] = {q0 + row0 + g, q0 + row0 + g + 8};
  const int key_end = causal ? min(tokens, q0 + kMmaQueries) : tokens;
  for (int k0 = 0; k0 < key_end; k0 += kMmaKeys) {
    __syncthreads();  // the previous tile is no longer read
    for (int e = threadIdx.x; e < kMmaKeys * kPacks; e += kMmaThreads) {
      const int r = e / kPacks, c = e % kPacks;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;  // keys past the end: zeros, never NaN
      if (k0 + r < tokens) {
        kv = *reinterpret_cast<const uint4*>(k_base + (k0 + r) * token_stride + c * 8);
        vv = *reinterpret_cast<const uint4*>(v_base + (k0 + r) * token_stride + c * 8);
      }
      *reinterpret_cast<uint4*>(ks + r * kStride + c * 8) = kv;
      const T* v8 = reinterpret_cast<const T*>(&vv);
#pragma unroll
      for (int j = 0; j < 8; ++j) vt[(c * 8 + j) * kVStride + r] = v8[j];
    }
    __syncthreads();
    if (causal && q0 + row0 + 15 < k0) continue;  // every key of this tile is in this warp's future

    float s[kMmaKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kMmaKeys / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const T* p = ks + (n * 8 + g) * kStride + kk * 16 + 2 * t;
        const uint32_t b[2] = {Load2(p), Load2(p + 8)};
        Mma<T>(s[n], qf[kk], b);
      }
    }
    float max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kMmaKeys / 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = k0 + n * 8 + 2 * t + (i & 1);
        const bool seen = key < tokens && (!causal || key <= query[i / 2]);
        s[n][i] = seen ? s[n][i] * scale : -INFINITY;
        max[i / 2] = fmaxf(max[i / 2], s[n][i]);
      }
    }
    float correction[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {  // the quad of lanes t = 0..3 holds the row
      max[r] = fmaxf(max[r], __shfl_xor_sync(0xffffffffu, max[r], 1));
      max[r] = fmaxf(max[r], __shfl_xor_sync(0xffffffffu, max[r], 2));
      const float m_new = fmaxf(m[r], max[r]);
      correction[r] = exp2f(m[r] - m_new);
      m[r] = m_new;
      l[r] *= correction[r];
    }
#pragma unroll
    for (int n = 0; n < kMmaKeys / 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        s[n][i] = exp2f(s[n][i] - m[i / 2]);
        l[i / 2] += s[n][i];
      }
    }
#pragma unroll
    for (int dn = 0; dn < kD / 8; ++dn) {
      o[dn][0] *= correction[0];
      o[dn][1] *= correction[0];
      o[dn][2] *= correction[1];
      o[dn][3] *= correction[1];
    }
#pragma unroll
    for (int kk = 0; kk < kMmaKeys / 16; ++kk) {
      // The C fragments of two adjacent 8-key score tiles are the A fragment of 16 keys of P.
      const uint32_t a[4] = {Pack2<T>(s[2 * kk][0], s[2 * kk][1]), Pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                             Pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             Pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dn = 0; dn < kD / 8; ++dn) {
        const T* p = vt + (dn * 8 + g) * kVStride + kk * 16 + 2 * t;
        const uint32_t b[2] = {Load2(p), Load2(p + 8)};
        Mma<T>(o[dn], a, b);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    if (query[r] >= tokens) continue;
    const float inv = 1.0f / l[r];
    T* row = out + (static_cast<int64_t>(query[r]) * heads + h) * kD + 2 * t;
#pragma unroll
    for (int dn = 0; dn < kD / 8; ++dn)
      *reinterpret_cast<uint32_t*>(row + dn * 8) = Pack2<T>(o[dn][2 * r] * inv, o[dn][2 * r + 1] * inv);
  }
}

template <typename T, int kD>
void LaunchMma(const void* qkv, void* out, int64_t tokens, int64_t heads, bool causal, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((tokens + kMmaQueries - 1) / kMmaQueries), static_cast<unsigned>(heads));
  const float scale = 1.4426950408889634f / sqrtf(static_cast<float>(kD));
  MmaAttentionKernel<T, kD><<<grid, kMmaThreads, MmaSharedBytes<kD>(), stream>>>(
      static_cast<const T*>(qkv), static_cast<T*>(out), static_cast<int>(tokens), static_cast<int>(heads), causal,
      scale);
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
  auto raise = [&](auto kernel, int shared) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    if (result == cudaSuccess) result = e;
  };
  raise(MmaAttentionKernel<__half, 64>, MmaSharedBytes<64>());
  raise(MmaAttentionKernel<__half, 128>, MmaSharedBytes<128>());
  raise(MmaAttentionKernel<__nv_bfloat16, 64>, MmaSharedBytes<64>());
  raise(MmaAttentionKernel<__nv_bfloat16, 128>, MmaSharedBytes<128>());
  return result;
}

cudaError_t LaunchAttention(Elem t, const void* qkv, void* out, int64_t tokens, int64_t heads, int64_t head_dim,
                            bool causal, cudaStream_t stream, bool tensor_cores) {
  if (tokens == 0 || heads == 0 || head_dim == 0) return cudaSuccess;
  if (tensor_cores && t != Elem::kF32 && (head_dim == 64 || head_dim == 128) && Aligned16(qkv) && Aligned16(out)) {
    DispatchFloat(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, float>) {
        if (head_dim == 64) LaunchMma<T, 64>(qkv, out, tokens, heads, causal, stream);
        else LaunchMma<T, 128>(qkv, out, tokens, heads, causal, stream);
      }
    });
    return cudaGetLastError();
  }
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
