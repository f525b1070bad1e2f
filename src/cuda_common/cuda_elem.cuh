// Element conversions and 16-byte pack sums in f32, shared by the all-reduce kernels
// (cuda_kernel_device.cuh) and the channel plan executor (src/channels/): f16 and bf16 are summed in
// f32 and rounded once, to nearest even.
#ifndef VDEV_SRC_CUDA_COMMON_CUDA_ELEM_CUH_
#define VDEV_SRC_CUDA_COMMON_CUDA_ELEM_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace vdev::internal {

template <typename T>
struct Elem;
template <>
struct Elem<float> {
  static __device__ __forceinline__ float ToF(float v) { return v; }
  static __device__ __forceinline__ float FromF(float v) { return v; }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ float ToF(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half FromF(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float ToF(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 FromF(float v) { return __float2bfloat16_rn(v); }
};

template <typename T>
constexpr int kPer = 16 / sizeof(T);

// Sums start at -0.0, the identity of IEEE addition (-0 + x is x for every x, -0 and +0 included);
// a +0 start would turn a sum of negative zeros into +0.
template <int N>
__device__ __forceinline__ void StartSums(float (&acc)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) acc[k] = -0.0f;
}

// A pack V (uint4: 16 bytes; uint2: an LL line's 8 data bytes) of elements T, added to / made from
// f32 sums.
template <typename T, typename V>
__device__ __forceinline__ void AddPack(float (&acc)[sizeof(V) / sizeof(T)], V v) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(V) / sizeof(T)); ++k) acc[k] += Elem<T>::ToF(e[k]);
}

template <typename T, typename V = uint4>
__device__ __forceinline__ V ToPack(const float (&acc)[sizeof(V) / sizeof(T)]) {
  V v;
  T* e = reinterpret_cast<T*>(&v);
#pragma unroll
  for (int k = 0; k < static_cast<int>(sizeof(V) / sizeof(T)); ++k) e[k] = Elem<T>::FromF(acc[k]);
  return v;
}

}  // namespace vdev::internal

#endif  // VDEV_SRC_CUDA_COMMON_CUDA_ELEM_CUH_
