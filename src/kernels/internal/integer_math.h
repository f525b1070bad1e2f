// Integer division and power of the element-wise kernels, written once for the CPU kernels and the
// CUDA device code so that both backends give the same bits. Both are total: C++ leaves division by
// zero and MIN / -1 undefined, and ONNX leaves them unspecified, so vdev defines them (below).
#ifndef VDEV_SRC_KERNELS_INTERNAL_INTEGER_MATH_H_
#define VDEV_SRC_KERNELS_INTERNAL_INTEGER_MATH_H_

#include <type_traits>

#include "host_device.h"

namespace vdev::kernels_internal {

// a / b truncated toward zero (C++'s and ONNX's integer Div); x / 0 is 0, and MIN / -1 wraps to MIN
// as the negation of MIN does in two's complement.
template <typename T>
VDEV_HOST_DEVICE inline T IntegerDivide(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return static_cast<T>(static_cast<U>(0) - static_cast<U>(a));
  }
  return static_cast<T>(a / b);
}

// base ** exponent by repeated squaring, wrapping around like unsigned arithmetic (NumPy's integer
// power). A negative exponent gives the truncated 1 / base ** -exponent: 1 for base 1, +-1 for base
// -1, and 0 otherwise (base 0 included, as for x / 0).
template <typename T>
VDEV_HOST_DEVICE inline T IntegerPower(T base, T exponent) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) != 0 ? -1 : 1;
      return 0;
    }
  }
  U result = 1, square = static_cast<U>(base);
  for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
    if ((e & 1) != 0) result = static_cast<U>(result * square);
    square = static_cast<U>(square * square);
  }
  return static_cast<T>(result);
}

}  // namespace vdev::kernels_internal

#endif  // VDEV_SRC_KERNELS_INTERNAL_INTEGER_MATH_H_
