// The fused all-reduce + residual add + RMS norm: one kernel that pushes this worker's partial to
// its peers in the one-shot sentinel protocol, sums each row's partials in rank order, adds the
// residual and normalises the row, so the all-reduce's result never makes a round trip through
// memory and no second kernel starts.
#include "internal/cuda_sentinel.cuh"

namespace vdev::internal {
namespace {

// The sum of every thread's `v`, in every thread; the same order of additions in each, so all
// threads (and all workers, whose rows are equal) get the same value. blockDim.x is a multiple of 32.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  __syncthreads();  // the previous row's readers are done with scratch
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) total += scratch[w];
  return total;
}

// Two 512-thread blocks fit an SM (at most 64 registers), which FusedNormBlockCap counts on.
// Each block sends all its rows first, then takes them one by one: sum the peers' packs (the
// sentinel put back behind them, as OneShotSentinelKernel does), round the sum to T as the
// all-reduce's result is, add the residual and round again (h, as `add` rounds), then n from the
// rounded h (as rms_norm reads it). Thread t holds packs t, t + blockDim.x, ... of the row.
template <typename T, int kBatch, int kPacks>
__global__ void __launch_bounds__(kFusedNormMaxThreads, 2)
    AllReduceAddRmsNormKernel(const __grid_constant__ FusedNormArgs f) {
  const KernelArgs& a = f.all_reduce;
  FollowPreviousGrid();
  constexpr int P = kPer<T>;
  __shared__ float scratch[kFusedNormMaxThreads / 32];
  const uint64_t call = a.epochs[blockIdx.x] + 1;
  const size_t parity = call & 1;
  const size_t row_packs = f.hidden * sizeof(T) / 16;
  const uint4* in = static_cast<const uint4*>(a.in);
  for (size_t row = blockIdx.x; row < f.rows; row += gridDim.x) {
    for (size_t p = threadIdx.x; p < row_packs; p += blockDim.x) {
      SendPack(a, parity, row * row_packs + p, WithoutSentinel<T>(in[row * row_packs + p]));
    }
  }
  char* mine = a.data[a.rank] + parity * a.half_bytes;
  const uint4* residual = static_cast<const uint4*>(f.residual);
  const uint4* gamma = static_cast<const uint4*>(f.gamma);
  uint4* h_out = static_cast<uint4*>(a.out);
  uint4* n_out = static_cast<uint4*>(f.normed);
  for (size_t row = blockIdx.x; row < f.rows; row += gridDim.x) {
    float h[kPacks][P];
    float squares = 0;
#pragma unroll
    for (int u = 0; u < kPacks; ++u) {
      const size_t p = threadIdx.x + u * blockDim.x;
      if (p >= row_packs) continue;
      const size_t i = row * row_packs + p;
      float acc[P];
      ReceivePack<T, kBatch>(a, mine, i, WithoutSentinel<T>(in[i]), acc);
      float sum[P];
      StartSums(sum);
      AddPack<T>(sum, ToPack<T>(acc));
      AddPack<T>(sum, residual[i]);
      const uint4 hv = ToPack<T>(sum);
      h_out[i] = hv;
      StartSums(h[u]);
      AddPack<T>(h[u], hv);
#pragma unroll
      for (int k = 0; k < P; ++k) squares += h[u][k] * h[u][k];
    }
    const float rstd = rsqrtf(BlockSum(squares, scratch) / static_cast<float>(f.hidden) + f.epsilon);
#pragma unroll
    for (int u = 0; u < kPacks; ++u) {
      const size_t p = threadIdx.x + u * blockDim.x;
      if (p >= row_packs) continue;
      float g[P];
      StartSums(g);
      AddPack<T>(g, gamma[p]);
#pragma unroll
      for (int k = 0; k < P; ++k) g[k] = h[u][k] * rstd * g[k];
      n_out[row * row_packs + p] = ToPack<T>(g);
    }
  }
  FinishEpoch(a.epochs, call);
}

// The instances PlanFusedNormGrid can ask for (FusedNormMaxPacks): 4 packs for f32 only.
template <typename T, int kBatch>
FusedNormFn ForPacks(int packs) {
  if (packs <= 1) return AllReduceAddRmsNormKernel<T, kBatch, 1>;
  if constexpr (sizeof(T) == 4) {
    if (packs > 2) return AllReduceAddRmsNormKernel<T, kBatch, 4>;
  }
  return AllReduceAddRmsNormKernel<T, kBatch, 2>;
}

template <typename T>
FusedNormFn ForWorld(int world, int packs) {
  return world > 2 ? ForPacks<T, kPeersAtOnce>(packs) : ForPacks<T, 1>(packs);
}

}  // namespace

FusedNormFn FusedNormInstance(DataType type, int world, int packs) {
  switch (type) {
    case DataType::kF32: return ForWorld<float>(world, packs);
    case DataType::kF16: return ForWorld<__half>(world, packs);
    case DataType::kBF16: return ForWorld<__nv_bfloat16>(world, packs);
    default: return nullptr;
  }
}

}  // namespace vdev::internal
