// The element-wise ops' arithmetic, written once for the CPU kernels (src/kernels/cpu/elementwise.cc)
// and the CUDA device code (src/kernels/cuda/elementwise.cu), as integer_math.h is: the same formula
// in the same precision on both backends. Float values compute in f32 (f64 in f64) and are rounded
// once by the caller's conversion; integers wrap like unsigned arithmetic.
#ifndef VDEV_SRC_KERNELS_INTERNAL_ELEMENTWISE_MATH_H_
#define VDEV_SRC_KERNELS_INTERNAL_ELEMENTWISE_MATH_H_

#include <cmath>
#include <type_traits>

#include "host_device.h"
#include "integer_math.h"

namespace vdev::kernels_internal {

enum class UnaryOp {
  kRelu,
  kGeluErf,
  kGeluTanh,
  kSilu,
  kExp,
  kTanh,
  kSigmoid,
  kNegative,
  kSqrt,
  kRsqrt,
  kLog,
  kErf,
  kAbs,
  kReciprocal
};
enum class BinaryOp { kAdd, kSubtract, kMultiply, kDivide, kPower, kMaximum, kMinimum };

template <UnaryOp kOp>
VDEV_HOST_DEVICE inline float ApplyUnary(float x) {
  if constexpr (kOp == UnaryOp::kRelu) return x < 0.0f ? 0.0f : x;  // NaN stays NaN
  // erfc and the logistic form of 0.5 (1 + tanh u) keep the negative tail accurate, where
  // 1 + erf and 1 + tanh cancel.
  if constexpr (kOp == UnaryOp::kGeluErf) return 0.5f * x * std::erfc(x * -0.70710678118654752f);
  if constexpr (kOp == UnaryOp::kGeluTanh) {
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi) (x + 0.044715 x^3)
    return x / (1.0f + std::exp(-2.0f * u));
  }
  if constexpr (kOp == UnaryOp::kSilu) return x / (1.0f + std::exp(-x));
  if constexpr (kOp == UnaryOp::kExp) return std::exp(x);
  if constexpr (kOp == UnaryOp::kTanh) return std::tanh(x);
  if constexpr (kOp == UnaryOp::kSigmoid) return 1.0f / (1.0f + std::exp(-x));
  if constexpr (kOp == UnaryOp::kNegative) return -x;
  if constexpr (kOp == UnaryOp::kSqrt) return std::sqrt(x);
  if constexpr (kOp == UnaryOp::kRsqrt) return 1.0f / std::sqrt(x);
  if constexpr (kOp == UnaryOp::kLog) return std::log(x);
  if constexpr (kOp == UnaryOp::kErf) return std::erf(x);
  if constexpr (kOp == UnaryOp::kAbs) return std::fabs(x);
  if constexpr (kOp == UnaryOp::kReciprocal) return 1.0f / x;
}

template <BinaryOp kOp, typename V>
VDEV_HOST_DEVICE inline V Arithmetic(V a, V b) {
  if constexpr (kOp == BinaryOp::kAdd) return a + b;
  if constexpr (kOp == BinaryOp::kSubtract) return a - b;
  if constexpr (kOp == BinaryOp::kMultiply) return a * b;
  if constexpr (kOp == BinaryOp::kDivide) return a / b;
  if constexpr (kOp == BinaryOp::kPower) return std::pow(a, b);
  if constexpr (kOp == BinaryOp::kMaximum) return a != a || a > b ? a : b;  // NaN propagates
  if constexpr (kOp == BinaryOp::kMinimum) return a != a || a < b ? a : b;
}

// The op on two elements of type T. f16/bf16 (and f32) go through f32 by `Convert::ToFloat` and back
// by `Convert::template FromFloat<T>`, the one rounding per value; each backend gives its own
// conversions (the CPU's half.h, CUDA's intrinsics).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable  // a backend's Convert may be host-only or device-only
#endif
template <BinaryOp kOp, typename Convert, typename T>
VDEV_HOST_DEVICE inline T ApplyBinary(T x, T y) {
  if constexpr (std::is_same_v<T, double> ||
                (std::is_integral_v<T> && (kOp == BinaryOp::kMaximum || kOp == BinaryOp::kMinimum))) {
    return Arithmetic<kOp>(x, y);
  } else if constexpr (std::is_integral_v<T> && kOp == BinaryOp::kDivide) {
    return IntegerDivide(x, y);
  } else if constexpr (std::is_integral_v<T> && kOp == BinaryOp::kPower) {
    return IntegerPower(x, y);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(Arithmetic<kOp>(static_cast<U>(x), static_cast<U>(y)));
  } else {
    return Convert::template FromFloat<T>(Arithmetic<kOp>(Convert::ToFloat(x), Convert::ToFloat(y)));
  }
}

}  // namespace vdev::kernels_internal

#endif  // VDEV_SRC_KERNELS_INTERNAL_ELEMENTWISE_MATH_H_
