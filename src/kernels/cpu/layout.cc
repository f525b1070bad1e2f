// Layout CPU kernels: transpose, concatenate/concat, split, cast and take. All but cast move
// elements without looking at them, so they take any dtype; cast converts between f32, f16, bf16,
// f64, i8, u8, i32 and i64 with one rounding.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "internal/cpu_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

// Calls f with an unsigned integer of `bytes` bytes (1, 2, 4, 8), so a copy moves an element in
// one load and store.
template <typename F>
void WithWord(size_t bytes, F&& f) {
  if (bytes == 1) return f(uint8_t{});
  if (bytes == 2) return f(uint16_t{});
  if (bytes == 4) return f(uint32_t{});
  return f(uint64_t{});
}

// out[i0, ..., ir] = in[sum i_d * in_strides[d]] over the output's dims, in output order.
template <typename W>
void GatherStrided(const W* in, W* out, const Shape& dims, const std::vector<int64_t>& in_strides) {
  const int rank = static_cast<int>(dims.size());
  const int64_t total = TensorRef{nullptr, ir::DType::kU8, dims}.NumElements();
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  const int64_t run = dims[rank - 1], step = in_strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  for (int64_t o = 0; o < total; o += run) {
    for (int64_t i = 0; i < run; ++i) out[o + i] = in[src + i * step];
    for (int d = rank - 2; d >= 0; --d) {
      src += in_strides[d];
      if (++index[d] < dims[d]) break;
      src -= in_strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

// transpose(x, axes=[...]): out.shape[i] = x.shape[axes[i]]; default: reversed axes.
absl::Status TransposeKernel(const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(Permutation p, CheckTranspose(KernelOp::Cpu("transpose"), call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  WithWord(DTypeBytes(x.dtype), [&](auto word) {
    using W = decltype(word);
    GatherStrided(static_cast<const W*>(x.data), static_cast<W*>(out.data), p.shape, p.in_strides);
  });
  return absl::OkStatus();
}

// Copies between `whole` and its `pieces` along `axis`: into the whole (concatenate) or out of it.
void MovePieces(const TensorRef& whole, absl::Span<const TensorRef> pieces, int64_t axis, bool into_whole) {
  const AroundAxis view = ViewAround(whole.shape, axis, static_cast<int64_t>(DTypeBytes(whole.dtype)));
  char* w = static_cast<char*>(whole.data);
  for (int64_t o = 0; o < view.outer; ++o) {
    for (const TensorRef& p : pieces) {
      const int64_t bytes = p.shape[axis] * view.inner;
      char* q = static_cast<char*>(p.data) + o * bytes;
      if (bytes > 0) std::memcpy(into_whole ? w : q, into_whole ? q : w, static_cast<size_t>(bytes));
      w += bytes;
    }
  }
}

absl::Status ConcatenateKernel(absl::string_view name, const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(int64_t axis, CheckConcatenate(KernelOp::Cpu(name), call));
  MovePieces(call.outputs[0], call.inputs, axis, /*into_whole=*/true);
  return absl::OkStatus();
}

// split(x, indices_or_sections=N | [i, ...], axis=0): the outputs are the parts, checked against
// the attribute when it is given.
absl::Status SplitKernel(const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(int64_t axis, CheckSplit(KernelOp::Cpu("split"), call));
  MovePieces(call.inputs[0], call.outputs, axis, /*into_whole=*/false);
  return absl::OkStatus();
}

// An integer as the f32 nearest it, but with inexact results rounded to odd: narrowing that to f16
// or bf16 then rounds once, as if from the exact integer.
float IntToFloatRoundOdd(int64_t v) {
  float f = static_cast<float>(v);
  const long double exact = static_cast<long double>(v);
  if (static_cast<long double>(f) == exact) return f;
  if (std::fabs(static_cast<long double>(f)) > std::fabs(exact)) f = std::nextafter(f, 0.0f);
  return BitsToFloat(FloatToBits(f) | 1u);
}

// An f64 as the f32 nearest it, with inexact results rounded to odd, as IntToFloatRoundOdd.
float DoubleToFloatRoundOdd(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return BitsToFloat(FloatToBits(f) | 1u);
}

// Truncates toward zero, saturating at the integer's range; NaN becomes 0.
template <typename I, typename F>
I FloatToInt(F f) {
  constexpr F kHigh = static_cast<F>(std::numeric_limits<I>::max()) + 1;  // 2^digits, exact
  constexpr F kLow = static_cast<F>(std::numeric_limits<I>::min());       // -2^digits or 0
  if (std::isnan(f)) return 0;
  if (f >= kHigh) return std::numeric_limits<I>::max();
  if (f <= kLow) return std::numeric_limits<I>::min();
  return static_cast<I>(f);
}

// f64 converts from and to every type directly (one rounding); f32, f16 and bf16 through f32, the
// narrowing from integers and f64 rounded to odd first, so that it too rounds once.
template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    return static_cast<To>(v);  // wraps (C++20)
  } else if constexpr (std::is_same_v<To, double>) {
    if constexpr (std::is_integral_v<From> || std::is_same_v<From, double>) return static_cast<double>(v);
    else return static_cast<double>(ToFloat(v));
  } else if constexpr (std::is_same_v<From, double>) {
    if constexpr (std::is_integral_v<To>) return FloatToInt<To>(v);
    else if constexpr (std::is_same_v<To, float>) return static_cast<float>(v);
    else return FromFloat<To>(DoubleToFloatRoundOdd(v));
  } else if constexpr (std::is_integral_v<From>) {
    if constexpr (std::is_same_v<To, float>) return static_cast<float>(v);
    else return FromFloat<To>(IntToFloatRoundOdd(v));
  } else if constexpr (std::is_integral_v<To>) {
    return FloatToInt<To>(ToFloat(v));
  } else {
    return FromFloat<To>(ToFloat(v));
  }
}

absl::Status CastKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu("cast");
  VDEV_RETURN_IF_ERROR(CheckCast(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const int64_t n = x.NumElements();
  return DispatchNumeric(op, x.dtype, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return DispatchNumeric(op, out.dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* in = static_cast<const From*>(x.data);
      To* o = static_cast<To*>(out.data);
      for (int64_t i = 0; i < n; ++i) o[i] = Convert<To>(in[i]);
      return absl::OkStatus();
    });
  });
}

// take(table, indices, axis=0): out = table[:axis] + indices.shape + table[axis+1:].
absl::Status TakeKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu("take");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, CheckTake(op, call));
  const TensorRef &table = call.inputs[0], &indices = call.inputs[1], &out = call.outputs[0];
  const int64_t count = indices.NumElements(), size = table.shape[axis];
  std::vector<int64_t> at(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    at[i] = indices.dtype == ir::DType::kI32 ? static_cast<const int32_t*>(indices.data)[i]
                                             : static_cast<const int64_t*>(indices.data)[i];
    if (at[i] < 0 || at[i] >= size)
      return Invalid(op, "index ", at[i], " (element ", i, " of the indices) is out of range [0, ", size, ")");
  }
  const AroundAxis view = ViewAround(table.shape, axis, static_cast<int64_t>(DTypeBytes(table.dtype)));
  const int64_t inner = view.inner;
  const char* src = static_cast<const char*>(table.data);
  char* dst = static_cast<char*>(out.data);
  if (inner == 0) return absl::OkStatus();
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < count; ++i, dst += inner)
      std::memcpy(dst, src + (o * size + at[i]) * inner, static_cast<size_t>(inner));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterLayoutKernels(KernelRegistry& r) {
  AddCpuKernel(r, "cast", CastKernel);  // the one that converts; the others move elements as they are
  AddCpuKernel(r, "transpose", TransposeKernel);
  AddCpuKernel(r, "concatenate", [](const KernelCall& c) { return ConcatenateKernel("concatenate", c); });
  AddCpuKernel(r, "concat", [](const KernelCall& c) { return ConcatenateKernel("concat", c); });
  AddCpuKernel(r, "split", SplitKernel);
  AddCpuKernel(r, "take", TakeKernel);
}

}  // namespace vdev::kernels_internal
