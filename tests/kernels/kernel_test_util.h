// Helpers of the kernel tests: tensors filled from doubles or at random, one kernel call through
// the registry, and comparison against a double-precision reference.
#ifndef VDEV_TESTS_KERNELS_KERNEL_TEST_UTIL_H_
#define VDEV_TESTS_KERNELS_KERNEL_TEST_UTIL_H_

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "vdev/kernels/kernels.h"
#include "vdev/kernels/tensor.h"
#include "vdev/support/half.h"

namespace vdev::testing {

using ir::DType;

// Stores v into element i, rounding once to the tensor's dtype (f16/bf16 through f32, whose
// double rounding is innocuous for the test's values).
inline void Write(HostTensor& t, int64_t i, double v) {
  char* p = reinterpret_cast<char*>(t.bytes.data()) + i * static_cast<int64_t>(DTypeBytes(t.dtype));
  auto store = [p](auto value) { std::memcpy(p, &value, sizeof value); };
  switch (t.dtype) {
    case DType::kF64: return store(v);
    case DType::kF32: return store(static_cast<float>(v));
    case DType::kF16: return store(FloatToHalf(static_cast<float>(v)));
    case DType::kBF16: return store(FloatToBF16(static_cast<float>(v)));
    case DType::kI64: return store(static_cast<int64_t>(v));
    case DType::kI32: return store(static_cast<int32_t>(v));
    case DType::kI8: return store(static_cast<int8_t>(v));
    case DType::kU8: return store(static_cast<uint8_t>(v));
    case DType::kBool: return store(static_cast<uint8_t>(v != 0));
  }
}

inline double Read(const HostTensor& t, int64_t i) { return ReadAsDouble(t.Ref(), i); }

inline HostTensor Make(DType dtype, Shape shape, const std::vector<double>& values) {
  HostTensor t = HostTensor::Zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.NumElements(); ++i) Write(t, i, values.at(i));
  return t;
}

// Uniform in [lo, hi] (integers for integer dtypes, whose range must hold [lo, hi]), rounded to the
// dtype; fixed seed.
inline HostTensor Random(DType dtype, Shape shape, uint32_t seed, double lo = -2.0, double hi = 2.0) {
  HostTensor t = HostTensor::Zeros(dtype, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  const bool integer = dtype == DType::kI32 || dtype == DType::kI64 || dtype == DType::kI8 || dtype == DType::kU8;
  for (int64_t i = 0; i < t.NumElements(); ++i) Write(t, i, integer ? std::round(dist(gen)) : dist(gen));
  return t;
}

inline std::vector<double> Values(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.NumElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = Read(t, static_cast<int64_t>(i));
  return v;
}

// Runs the CPU kernel of `op` on host tensors.
inline absl::Status RunKernel(absl::string_view op, const std::vector<const HostTensor*>& inputs,
                              const std::vector<HostTensor*>& outputs, const KernelAttrs& attrs = {}) {
  KernelFn fn = KernelRegistry::Global().Find(op, DeviceType::kCPU);
  if (fn == nullptr) return absl::NotFoundError(absl::StrCat("no CPU kernel for ", op));
  std::vector<TensorRef> in, out;
  for (const HostTensor* t : inputs) in.push_back(t->Ref());
  for (HostTensor* t : outputs) out.push_back(t->Ref());
  KernelContext context;
  KernelCall call{.inputs = in, .outputs = out, .attrs = &attrs, .context = &context};
  return fn(call);
}

// One unit in the last place of the dtype, relative (f32, f16, bf16).
inline double Ulp(DType dtype) {
  switch (dtype) {
    case DType::kF16: return std::ldexp(1.0, -10);
    case DType::kBF16: return std::ldexp(1.0, -7);
    default: return std::ldexp(1.0, -23);
  }
}

// The bound on the error of an f32 dot product of `length` terms whose |a_i b_i| sum to `magnitude`,
// in any order of summation (with or without FMA): gamma_n * magnitude with gamma_n = n u / (1 - n u)
// and u = 2^-24 (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1). BLAS libraries
// block, vectorise and split the sum across threads differently by CPU and thread count; this
// bound holds for all of them.
inline double DotProductErrorBound(int64_t length, double magnitude) {
  const double nu = static_cast<double>(length) * std::ldexp(1.0, -24);
  return nu / (1 - nu) * magnitude;
}

// The absolute rounding error below the dtype's normal range: f16's subnormal spacing (bf16 and
// f32 share f32's exponent range and the tests' values stay far above it).
inline double Tiny(DType dtype) { return dtype == DType::kF16 ? std::ldexp(1.0, -24) : 1e-37; }

// Expects |got - want| <= rel * |want| + abs element by element (NaN matches NaN); reports the
// first element that differs.
inline void ExpectNear(const HostTensor& got, const std::vector<double>& want, double rel, double abs,
                       const std::string& what = "") {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = Read(got, static_cast<int64_t>(i)), w = want[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= rel * std::fabs(w) + abs)) {
      ADD_FAILURE() << what << " element " << i << ": got " << g << ", want " << w << " (rel " << rel << ", abs " << abs
                    << ")";
      return;
    }
  }
}

// The linear index into an operand of shape `in` that broadcasts to element `o` of shape `out`.
inline int64_t BroadcastSource(const Shape& out, const Shape& in, int64_t o) {
  int64_t index = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = o % out[d];
    o /= out[d];
    if (k < in.size()) {
      const int64_t extent = in[in.size() - 1 - k];
      if (extent != 1) index += coord * stride;
      stride *= extent;
    }
  }
  return index;
}

inline std::string DTypeLabel(DType dtype) { return std::string(ir::DTypeName(dtype)); }

inline constexpr DType kFloatDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

}  // namespace vdev::testing

#endif  // VDEV_TESTS_KERNELS_KERNEL_TEST_UTIL_H_
