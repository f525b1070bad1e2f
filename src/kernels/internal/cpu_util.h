// What the CPU kernel families share: element types, dtype dispatch, broadcasting and the f32
// panels the f16/bf16 kernels compute in. Their argument checks are internal/op_checks.h's (shared
// with the CUDA op wrappers).
//
// A float kernel is written once over an element type T (float, F16 or BF16): it widens with
// ToFloat, computes in f32 and stores with FromFloat<T>, the one rounding (half.h's RNE) per value.
#ifndef VDEV_SRC_KERNELS_INTERNAL_CPU_UTIL_H_
#define VDEV_SRC_KERNELS_INTERNAL_CPU_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "internal/op_checks.h"
#include "vdev/kernels/kernels.h"
#include "vdev/kernels/tensor.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

inline float ToFloat(float v) { return v; }
inline float ToFloat(F16 v) { return HalfToFloat(v.bits); }
inline float ToFloat(BF16 v) { return BF16ToFloat(v.bits); }

template <typename T>
T FromFloat(float f);
template <>
inline float FromFloat<float>(float f) {
  return f;
}
template <>
inline F16 FromFloat<F16>(float f) {
  return F16{FloatToHalf(f)};
}
template <>
inline BF16 FromFloat<BF16>(float f) {
  return BF16{FloatToBF16(f)};
}

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the element type of a float dtype (f32, f16, bf16); InvalidArgument
// naming the op for any other dtype.
template <typename F>
absl::Status DispatchFloat(const KernelOp& op, ir::DType dtype, F&& f) {
  switch (dtype) {
    case ir::DType::kF32: return f(Tag<float>{});
    case ir::DType::kF16: return f(Tag<F16>{});
    case ir::DType::kBF16: return f(Tag<BF16>{});
    default: return CheckNumeric(op, dtype, /*integers=*/false);  // the error: not a float dtype
  }
}

// Like DispatchFloat, and also f64 (T = double, which computes in double, not f32) and the
// integers i8, u8, i32 and i64 (T = int8_t, uint8_t, int32_t, int64_t): the dtypes of
// CheckArithmetic, which the element-wise arithmetic and cast kernels take.
template <typename F>
absl::Status DispatchNumeric(const KernelOp& op, ir::DType dtype, F&& f) {
  switch (dtype) {
    case ir::DType::kF64: return f(Tag<double>{});
    case ir::DType::kI8: return f(Tag<int8_t>{});
    case ir::DType::kU8: return f(Tag<uint8_t>{});
    case ir::DType::kI32: return f(Tag<int32_t>{});
    case ir::DType::kI64: return f(Tag<int64_t>{});
    default: break;
  }
  VDEV_RETURN_IF_ERROR(CheckArithmetic(op, dtype));
  return DispatchFloat(op, dtype, std::forward<F>(f));
}

// Widens n elements of a float dtype (f32, f16, bf16) to f32; f16 uses the CPU's F16C instructions
// when it has them (exact, like HalfToFloat).
void WidenToFloat(ir::DType dtype, const void* in, float* out, int64_t n);
// Narrows n f32 values to a float dtype, rounding each once to nearest even.
void NarrowFromFloat(ir::DType dtype, const float* in, void* out, int64_t n);

// A per-thread f32 buffer of at least n values, reused across calls (slot 0..3: distinct buffers),
// so large panels are not mapped and faulted in again on every kernel call.
float* Scratch(int slot, int64_t n);

// Broadcasting of two operands against an output shape, collapsed to the fewest dimensions: the
// output is walked in runs of `run` contiguous elements; in a run, operand k advances by step[k]
// (0 where it broadcasts). Used for element-wise ops and for the batch dims of matmul.
class BroadcastWalk {
 public:
  // a and b must broadcast to out (NumPy rules; checked by Make).
  static absl::StatusOr<BroadcastWalk> Make(const KernelOp& op, const Shape& out, const Shape& a, const Shape& b);

  // Calls fn(out_offset, a_offset, b_offset, run, a_step, b_step) for each run, in output order.
  template <typename Fn>
  void ForEachRun(Fn&& fn) const {
    const int rank = static_cast<int>(dims_.size());
    const int64_t run = rank == 0 ? 1 : dims_[rank - 1];
    const int64_t step_a = rank == 0 ? 0 : stride_a_[rank - 1];
    const int64_t step_b = rank == 0 ? 0 : stride_b_[rank - 1];
    if (total_ == 0) return;
    std::vector<int64_t> index(rank > 0 ? rank - 1 : 0, 0);
    int64_t out = 0, a = 0, b = 0;
    while (true) {
      fn(out, a, b, run, step_a, step_b);
      out += run;
      int d = rank - 2;
      for (; d >= 0; --d) {
        a += stride_a_[d];
        b += stride_b_[d];
        if (++index[d] < dims_[d]) break;
        a -= stride_a_[d] * dims_[d];
        b -= stride_b_[d] * dims_[d];
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  std::vector<int64_t> dims_, stride_a_, stride_b_;
  int64_t total_ = 0;
};

// Registers a CPU kernel; a second registration of the same op is a bug of the caller and is ignored.
void AddCpuKernel(KernelRegistry& registry, absl::string_view op, KernelFn fn);

// The kernel families, one file each; RegisterCpuKernels calls them all.
void RegisterElementwiseKernels(KernelRegistry& registry);  // elementwise.cc
void RegisterMatmulKernels(KernelRegistry& registry);       // matmul.cc
void RegisterNormKernels(KernelRegistry& registry);         // norm.cc
void RegisterLayoutKernels(KernelRegistry& registry);       // layout.cc
void RegisterAttentionKernels(KernelRegistry& registry);    // attention.cc
void RegisterSelectKernels(KernelRegistry& registry);       // select.cc

}  // namespace vdev::kernels_internal

#endif  // VDEV_SRC_KERNELS_INTERNAL_CPU_UTIL_H_
