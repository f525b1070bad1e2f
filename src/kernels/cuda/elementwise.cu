// Element-wise CUDA kernels: the unary activations and math functions, add/subtract/multiply/divide/
// power/maximum/minimum with NumPy broadcasting, silu_mul and cast. Float values are computed in f32
// (f64 in f64) and rounded once on store; integers wrap; the arithmetic is
// src/kernels/internal/elementwise_math.h's, the CPU kernels' own.
// Where every operand is contiguous and 16-byte aligned each thread moves 16-byte packs; the
// elements past the last whole pack (and misaligned tensors) go element by element.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "internal/device_math.cuh"
#include "src/kernels/internal/elementwise_math.h"

namespace vdev::cuda_ops {
namespace {

// CUDA's conversions, for ApplyBinary (src/kernels/internal/elementwise_math.h).
struct DeviceFloat {
  template <typename T>
  __device__ static float ToFloat(T v) {
    return ToF32(v);
  }
  template <typename T>
  __device__ static T FromFloat(float v) {
    return FromF32<T>(v);
  }
};
using kernels_internal::ApplyUnary;

template <Binary kOp, typename T>
__device__ __forceinline__ T ApplyBinary(T x, T y) {
  return kernels_internal::ApplyBinary<kOp, DeviceFloat>(x, y);
}

// Applies f to element i of every stream: packs first (when `packed`), then the remainder.
template <typename T, typename F>
__device__ __forceinline__ void ForEach(int64_t n, bool packed, F&& f) {
  constexpr int kP = Pack<T>::kSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t packs = packed ? n / kP : 0;
  for (int64_t p = first; p < packs; p += stride) f(p, std::true_type{});
  for (int64_t i = packs * kP + first; i < n; i += stride) f(i, std::false_type{});
}

template <Unary kOp, typename T>
__global__ void UnaryKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, bool packed) {
  ForEach<T>(n, packed, [&](int64_t i, auto whole_pack) {
    if constexpr (decltype(whole_pack)::value) {
      Pack<T> v = reinterpret_cast<const Pack<T>*>(x)[i];
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j) v.v[j] = FromF32<T>(ApplyUnary<kOp>(ToF32(v.v[j])));
      reinterpret_cast<Pack<T>*>(y)[i] = v;
    } else {
      y[i] = FromF32<T>(ApplyUnary<kOp>(ToF32(x[i])));
    }
  });
}

template <Binary kOp, typename T>
__global__ void BinaryKernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, int64_t n,
                             bool packed) {
  ForEach<T>(n, packed, [&](int64_t i, auto whole_pack) {
    if constexpr (decltype(whole_pack)::value) {
      const Pack<T> u = reinterpret_cast<const Pack<T>*>(a)[i], v = reinterpret_cast<const Pack<T>*>(b)[i];
      Pack<T> w;
#pragma unroll
      for (int j = 0; j < Pack<T>::kSize; ++j) w.v[j] = ApplyBinary<kOp>(u.v[j], v.v[j]);
      reinterpret_cast<Pack<T>*>(y)[i] = w;
    } else {
      y[i] = ApplyBinary<kOp>(a[i], b[i]);
    }
  });
}

template <Binary kOp, typename T>
__global__ void BroadcastKernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y, int64_t n,
                                Strided s) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t index = rest % s.dims[d];
      rest /= s.dims[d];
      ia += index * s.a_strides[d];
      ib += index * s.b_strides[d];
    }
    y[i] = ApplyBinary<kOp>(a[ia], b[ib]);
  }
}

template <typename T>
__global__ void SiluMulKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t f, bool packed) {
  constexpr int kP = Pack<T>::kSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto silu_mul = [](float g, float u) { return FromF32<T>(g / (1.0f + expf(-g)) * u); };
  if (packed) {  // f is a multiple of the pack size: packs never straddle a row
    const int64_t per_row = f / kP;
    for (int64_t p = first; p < rows * per_row; p += stride) {
      const int64_t r = p / per_row, c = p % per_row;
      const Pack<T> g = reinterpret_cast<const Pack<T>*>(x + r * 2 * f)[c];
      const Pack<T> u = reinterpret_cast<const Pack<T>*>(x + r * 2 * f + f)[c];
      Pack<T> o;
#pragma unroll
      for (int j = 0; j < kP; ++j) o.v[j] = silu_mul(ToF32(g.v[j]), ToF32(u.v[j]));
      reinterpret_cast<Pack<T>*>(y + r * f)[c] = o;
    }
    return;
  }
  for (int64_t i = first; i < rows * f; i += stride) {
    const int64_t r = i / f, c = i % f;
    y[i] = silu_mul(ToF32(x[r * 2 * f + c]), ToF32(x[r * 2 * f + f + c]));
  }
}

// Integers to a float type: f32 and f64 round to nearest; f16/bf16 go through an f32 rounded to odd
// (truncate, then set the last bit when inexact) so the narrowing rounds once, as from the integer.
template <typename To, typename From>
__device__ __forceinline__ To ConvertInt(From v) {
  const long long w = static_cast<long long>(v);
  if constexpr (std::is_same_v<To, double>) return __ll2double_rn(w);
  if constexpr (std::is_same_v<To, float>) return __ll2float_rn(w);
  float f = __ll2float_rz(w);
  if (__float2ll_rz(f) != w) f = __uint_as_float(__float_as_uint(f) | 1u);
  return FromF32<To>(f);
}

// f64 to f32, f16 or bf16, rounding once: f16/bf16 through an f32 rounded to odd, as ConvertInt.
template <typename To>
__device__ __forceinline__ To NarrowDouble(double d) {
  if constexpr (std::is_same_v<To, float>) return __double2float_rn(d);
  float f = __double2float_rz(d);
  if (static_cast<double>(f) != d) f = __uint_as_float(__float_as_uint(f) | 1u);  // NaN stays NaN
  return FromF32<To>(f);
}

// Floats (F = float or double) to integers: truncation toward zero, saturating at the range,
// NaN -> 0.
template <typename To, typename F>
__device__ __forceinline__ To ConvertToInt(F f) {
  using U = std::make_unsigned_t<To>;
  constexpr To kMax = static_cast<To>(static_cast<U>(~U{0}) >> (std::is_signed_v<To> ? 1 : 0));
  constexpr To kMin = std::is_signed_v<To> ? static_cast<To>(-kMax - 1) : To{0};
  constexpr F kHigh = static_cast<F>(kMax / 2 + 1) * 2;  // kMax + 1, a power of two: exact
  if (f != f) return 0;
  if (f >= kHigh) return kMax;
  if (f <= static_cast<F>(kMin)) return kMin;
  return static_cast<To>(f);
}

template <typename To, typename From>
__global__ void CastKernel(const From* __restrict__ x, To* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
      y[i] = static_cast<To>(x[i]);  // wraps
    } else if constexpr (std::is_integral_v<From>) {
      y[i] = ConvertInt<To>(x[i]);
    } else if constexpr (std::is_same_v<From, double>) {
      if constexpr (std::is_integral_v<To>) y[i] = ConvertToInt<To>(x[i]);
      else if constexpr (std::is_same_v<To, double>) y[i] = x[i];
      else y[i] = NarrowDouble<To>(x[i]);
    } else if constexpr (std::is_integral_v<To>) {
      y[i] = ConvertToInt<To>(ToF32(x[i]));
    } else if constexpr (std::is_same_v<To, double>) {
      y[i] = static_cast<double>(ToF32(x[i]));
    } else {
      y[i] = FromF32<To>(ToF32(x[i]));
    }
  }
}

template <Unary kOp, typename T>
void Unary1(const void* x, void* y, int64_t n, cudaStream_t stream) {
  const bool packed = Aligned16(x) && Aligned16(y);
  const int64_t work = packed ? n / Pack<T>::kSize + n % Pack<T>::kSize : n;
  UnaryKernel<kOp, T><<<GridFor(work), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n, packed);
}

template <Binary kOp, typename T>
void Binary1(const void* a, const void* b, void* y, int64_t n, const Strided* s, cudaStream_t stream) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (s != nullptr) {
    BroadcastKernel<kOp, T><<<GridFor(n), kThreads, 0, stream>>>(pa, pb, static_cast<T*>(y), n, *s);
    return;
  }
  const bool packed = Aligned16(a) && Aligned16(b) && Aligned16(y);
  const int64_t work = packed ? n / Pack<T>::kSize + n % Pack<T>::kSize : n;
  BinaryKernel<kOp, T><<<GridFor(work), kThreads, 0, stream>>>(pa, pb, static_cast<T*>(y), n, packed);
}

template <Binary kOp>
void BinaryAnyType(Elem t, const void* a, const void* b, void* y, int64_t n, const Strided* s, cudaStream_t stream) {
  DispatchArithmetic(t, [&](auto tag) { Binary1<kOp, decltype(tag)>(a, b, y, n, s, stream); });
}

}  // namespace

cudaError_t LaunchUnary(Unary op, Elem t, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case Unary::kRelu: return Unary1<Unary::kRelu, T>(x, y, n, stream);
      case Unary::kGeluErf: return Unary1<Unary::kGeluErf, T>(x, y, n, stream);
      case Unary::kGeluTanh: return Unary1<Unary::kGeluTanh, T>(x, y, n, stream);
      case Unary::kSilu: return Unary1<Unary::kSilu, T>(x, y, n, stream);
      case Unary::kExp: return Unary1<Unary::kExp, T>(x, y, n, stream);
      case Unary::kTanh: return Unary1<Unary::kTanh, T>(x, y, n, stream);
      case Unary::kSigmoid: return Unary1<Unary::kSigmoid, T>(x, y, n, stream);
      case Unary::kNegative: return Unary1<Unary::kNegative, T>(x, y, n, stream);
      case Unary::kSqrt: return Unary1<Unary::kSqrt, T>(x, y, n, stream);
      case Unary::kRsqrt: return Unary1<Unary::kRsqrt, T>(x, y, n, stream);
      case Unary::kLog: return Unary1<Unary::kLog, T>(x, y, n, stream);
      case Unary::kErf: return Unary1<Unary::kErf, T>(x, y, n, stream);
      case Unary::kAbs: return Unary1<Unary::kAbs, T>(x, y, n, stream);
      case Unary::kReciprocal: return Unary1<Unary::kReciprocal, T>(x, y, n, stream);
    }
  });
  return cudaGetLastError();
}

cudaError_t LaunchBinary(Binary op, Elem t, const void* a, const void* b, void* y, int64_t n, const Strided* shape,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (op) {
    case Binary::kAdd: BinaryAnyType<Binary::kAdd>(t, a, b, y, n, shape, stream); break;
    case Binary::kSubtract: BinaryAnyType<Binary::kSubtract>(t, a, b, y, n, shape, stream); break;
    case Binary::kMultiply: BinaryAnyType<Binary::kMultiply>(t, a, b, y, n, shape, stream); break;
    case Binary::kDivide: BinaryAnyType<Binary::kDivide>(t, a, b, y, n, shape, stream); break;
    case Binary::kPower: BinaryAnyType<Binary::kPower>(t, a, b, y, n, shape, stream); break;
    case Binary::kMaximum: BinaryAnyType<Binary::kMaximum>(t, a, b, y, n, shape, stream); break;
    case Binary::kMinimum: BinaryAnyType<Binary::kMinimum>(t, a, b, y, n, shape, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchSiluMul(Elem t, const void* x, void* y, int64_t rows, int64_t f, cudaStream_t stream) {
  if (rows == 0 || f == 0) return cudaSuccess;
  DispatchFloat(t, [&](auto tag) {
    using T = decltype(tag);
    const bool packed = f % Pack<T>::kSize == 0 && Aligned16(x) && Aligned16(y);
    const int64_t work = packed ? rows * f / Pack<T>::kSize : rows * f;
    SiluMulKernel<T>
        <<<GridFor(work), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), rows, f, packed);
  });
  return cudaGetLastError();
}

cudaError_t LaunchCast(Elem from, Elem to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DispatchArithmetic(from, [&](auto from_tag) {
    DispatchArithmetic(to, [&](auto to_tag) {
      using From = decltype(from_tag);
      using To = decltype(to_tag);
      CastKernel<To, From><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const From*>(x), static_cast<To*>(y), n);
    });
  });
  return cudaGetLastError();
}

}  // namespace vdev::cuda_ops
