// Device-side helpers of the CUDA kernels: f32 <-> storage conversions (rounding once, to nearest
// even, as vdev/support/half.h does on the host), 16-byte packs, block reductions, grid sizing and dispatch
// from cuda_ops::Elem to a C++ type.
#ifndef VDEV_SRC_KERNELS_CUDA_INTERNAL_DEVICE_MATH_CUH_
#define VDEV_SRC_KERNELS_CUDA_INTERNAL_DEVICE_MATH_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "internal/cuda_ops.h"

namespace vdev::cuda_ops {

template <typename T>
__device__ __forceinline__ float ToF32(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T FromF32(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

// 16 bytes of T, so that a thread moves one aligned pack per load or store.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

__host__ __device__ inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

constexpr int kThreads = 256;

// Blocks for `work` items at kThreads each, capped so that a grid-stride loop covers the rest
// (132 SMs x 16 resident blocks of 256 threads is far below the cap).
inline unsigned GridFor(int64_t work, int threads = kThreads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (kMax: the maximum) of v over the block; every thread gets it. `scratch` holds 32 floats;
// the block size is a multiple of 32.
template <bool kMax>
__device__ float BlockReduce(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = kMax ? WarpMax(v) : WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
  return kMax ? WarpMax(v) : WarpSum(v);
}

// Calls f(T{}) with T the type of a float element type; false for an integer one.
template <typename F>
bool DispatchFloat(Elem t, F&& f) {
  switch (t) {
    case Elem::kF32: f(float{}); return true;
    case Elem::kF16: f(__half{}); return true;
    case Elem::kBF16: f(__nv_bfloat16{}); return true;
    default: return false;
  }
}

// Like DispatchFloat, and also i32 and i64 (T = int32_t, int64_t): the element types of ElemOf
// with `integers`.
template <typename F>
void DispatchAny(Elem t, F&& f) {
  if (t == Elem::kI32) return f(int32_t{});
  if (t == Elem::kI64) return f(int64_t{});
  DispatchFloat(t, f);
}

// Like DispatchAny, and also f64, i8 and u8 (T = double, int8_t, uint8_t): the element types of
// ArithmeticElemOf, which the element-wise arithmetic and cast take.
template <typename F>
void DispatchArithmetic(Elem t, F&& f) {
  if (t == Elem::kF64) return f(double{});
  if (t == Elem::kI8) return f(int8_t{});
  if (t == Elem::kU8) return f(uint8_t{});
  DispatchAny(t, f);
}

}  // namespace vdev::cuda_ops

#endif  // VDEV_SRC_KERNELS_CUDA_INTERNAL_DEVICE_MATH_CUH_
