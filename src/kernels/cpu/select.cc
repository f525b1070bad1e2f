// CPU kernels that pick or compare elements: the comparisons (bool result), where, broadcast_to
// and strided_slice, and the reductions sum/mean/max/min/prod. Any dtype moves as bytes; values
// are compared and accumulated in double (exact for every f32/f16/bf16/i32 value, and i64 up to
// 2^53), and a reduction rounds once on store.
#include <cmath>
#include <cstring>

#include "internal/cpu_util.h"
#include "vdev/status_macros.h"

namespace vdev::kernels_internal {
namespace {

// Walks a tensor of shape `dims` in row-major order; operand k starts at base[k] and moves by
// strides[k][d] elements per step of output dim d. Calls fn(out_index, offsets).
template <typename Fn>
void ForEachStrided(const Shape& dims, const std::vector<int64_t>& base, const std::vector<std::vector<int64_t>>& strides,
                    Fn&& fn) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> offset = base, coord(dims.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    fn(o, offset.data());
    for (size_t d = dims.size(); d-- > 0;) {
      for (size_t k = 0; k < offset.size(); ++k) offset[k] += strides[k][d];
      if (++coord[d] < dims[d]) break;
      for (size_t k = 0; k < offset.size(); ++k) offset[k] -= strides[k][d] * dims[d];
      coord[d] = 0;
    }
  }
}

// Strides (elements) of `in` broadcast against `out`: 0 along broadcast dims. False when `in` does
// not broadcast to `out`.
bool BroadcastStrides(const Shape& out, const Shape& in, std::vector<int64_t>* strides) {
  if (in.size() > out.size()) return false;
  strides->assign(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    const size_t d = i + out.size() - in.size();
    if (in[i] != out[d] && in[i] != 1) return false;
    (*strides)[d] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return true;
}

double Read(const TensorRef& t, int64_t i) { return ReadAsDouble(t, i); }

template <typename Cmp>
absl::Status CompareKernel(absl::string_view name, const KernelCall& call, Cmp cmp) {
  const KernelOp op = KernelOp::Cpu(name);
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 2, 1));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, b, a.dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, ir::DType::kBool, "the output"));
  std::vector<std::vector<int64_t>> strides(2);
  if (!BroadcastStrides(out.shape, a.shape, &strides[0]) || !BroadcastStrides(out.shape, b.shape, &strides[1]))
    return Invalid(op, "the operands do not broadcast to the output ", ShapeString(out.shape));
  auto* o = static_cast<uint8_t*>(out.data);
  ForEachStrided(out.shape, {0, 0}, strides, [&](int64_t i, const int64_t* at) {
    o[i] = cmp(Read(a, at[0]), Read(b, at[1])) ? 1 : 0;
  });
  return absl::OkStatus();
}

absl::Status WhereKernel(const KernelCall& call) {
  const KernelOp op = KernelOp::Cpu("where");
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 3, 1));
  const TensorRef &c = call.inputs[0], &x = call.inputs[1], &y = call.inputs[2], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, c, ir::DType::kBool, "the condition"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, y, x.dtype, "operand 3"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  std::vector<std::vector<int64_t>> strides(3);
  for (int k = 0; k < 3; ++k) {
    if (!BroadcastStrides(out.shape, call.inputs[k].shape, &strides[k]))
      return Invalid(op, "operand ", k + 1, " does not broadcast to the output ", ShapeString(out.shape));
  }
  const size_t bytes = DTypeBytes(x.dtype);
  const auto* cond = static_cast<const uint8_t*>(c.data);
  const auto *xs = static_cast<const std::byte*>(x.data), *ys = static_cast<const std::byte*>(y.data);
  auto* o = static_cast<std::byte*>(out.data);
  ForEachStrided(out.shape, {0, 0, 0}, strides, [&](int64_t i, const int64_t* at) {
    std::memcpy(o + i * bytes, cond[at[0]] ? xs + at[1] * bytes : ys + at[2] * bytes, bytes);
  });
  return absl::OkStatus();
}

// Copies elements of x: out[i] = x[base + Σ i_d strides[d]] (broadcast_to, strided_slice).
void Gather(const TensorRef& x, const TensorRef& out, int64_t base, const std::vector<int64_t>& strides) {
  const size_t bytes = DTypeBytes(x.dtype);
  const auto* in = static_cast<const std::byte*>(x.data);
  auto* o = static_cast<std::byte*>(out.data);
  ForEachStrided(out.shape, {base}, {strides}, [&](int64_t i, const int64_t* at) {
    std::memcpy(o + i * bytes, in + at[0] * bytes, bytes);
  });
}

absl::Status BroadcastToKernel(const KernelCall& call) {
  const KernelOp op = KernelOp::Cpu("broadcast_to");
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  std::vector<int64_t> strides;
  if (!BroadcastStrides(out.shape, x.shape, &strides))
    return Invalid(op, ShapeString(x.shape), " does not broadcast to ", ShapeString(out.shape));
  Gather(x, out, 0, strides);
  return absl::OkStatus();
}

absl::Status StridedSliceKernel(const KernelCall& call) {
  const KernelOp op = KernelOp::Cpu("strided_slice");
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  std::optional<std::vector<int64_t>> begin = AttrsOf(call).Ints("begin");
  std::optional<std::vector<int64_t>> step = AttrsOf(call).Ints("strides");
  const size_t rank = x.shape.size();
  if (!step) step = std::vector<int64_t>(rank, 1);
  if (!begin || begin->size() != rank || step->size() != rank || out.shape.size() != rank)
    return Invalid(op, "begin and strides need one entry per axis of ", ShapeString(x.shape));
  std::vector<int64_t> strides(rank);
  int64_t base = 0, stride = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t last = (*begin)[d] + (out.shape[d] - 1) * (*step)[d];
    if (out.shape[d] > 0 && ((*begin)[d] < 0 || (*begin)[d] >= x.shape[d] || last < 0 || last >= x.shape[d]))
      return Invalid(op, "axis ", d, " reads outside [0, ", x.shape[d], ")");
    base += (*begin)[d] * stride;
    strides[d] = (*step)[d] * stride;
    stride *= x.shape[d];
  }
  Gather(x, out, base, strides);
  return absl::OkStatus();
}

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

template <Reduction kOp>
absl::Status ReduceKernel(absl::string_view name, const KernelCall& call) {
  const KernelOp op = KernelOp::Cpu(name);
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 1, 1));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, x.dtype, "the output"));
  VDEV_RETURN_IF_ERROR(CheckNumeric(op, x.dtype, /*integers=*/true));
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, !AttrsOf(call).Find("axis"));
  for (int64_t a : AttrsOf(call).Ints("axis").value_or(std::vector<int64_t>{})) {
    VDEV_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(op, a, rank));
    reduced[axis] = true;
  }
  // Output strides per input dim (0 along reduced dims), so every input element lands in its output.
  std::vector<int64_t> strides(rank, 0);
  int64_t count = 1, stride = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      count *= x.shape[d];
    } else {
      strides[d] = stride;
      stride *= x.shape[d];
    }
  }
  if (out.NumElements() != stride) return Invalid(op, "the output ", ShapeString(out.shape), " does not fit the reduction");
  const double init = kOp == Reduction::kMax ? -INFINITY : kOp == Reduction::kMin ? INFINITY
                      : kOp == Reduction::kProd ? 1.0 : 0.0;
  if ((kOp == Reduction::kMax || kOp == Reduction::kMin) && count == 0) return Invalid(op, "reduces an empty axis");
  std::vector<double> acc(static_cast<size_t>(stride), init);
  ForEachStrided(x.shape, {0}, {strides}, [&](int64_t i, const int64_t* at) {
    const double v = Read(x, i);
    double& a = acc[at[0]];
    if constexpr (kOp == Reduction::kMax) a = std::isnan(v) || v > a ? v : a;
    else if constexpr (kOp == Reduction::kMin) a = std::isnan(v) || v < a ? v : a;
    else if constexpr (kOp == Reduction::kProd) a *= v;
    else a += v;
  });
  for (int64_t o = 0; o < stride; ++o) {
    WriteFromDouble(out, o, kOp == Reduction::kMean ? acc[o] / static_cast<double>(count) : acc[o]);
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterSelectKernels(KernelRegistry& r) {
  AddCpuKernel(r, "equal", [](const KernelCall& c) { return CompareKernel("equal", c, [](double a, double b) { return a == b; }); });
  AddCpuKernel(r, "not_equal", [](const KernelCall& c) { return CompareKernel("not_equal", c, [](double a, double b) { return a != b; }); });
  AddCpuKernel(r, "less", [](const KernelCall& c) { return CompareKernel("less", c, [](double a, double b) { return a < b; }); });
  AddCpuKernel(r, "less_equal", [](const KernelCall& c) { return CompareKernel("less_equal", c, [](double a, double b) { return a <= b; }); });
  AddCpuKernel(r, "greater", [](const KernelCall& c) { return CompareKernel("greater", c, [](double a, double b) { return a > b; }); });
  AddCpuKernel(r, "greater_equal", [](const KernelCall& c) { return CompareKernel("greater_equal", c, [](double a, double b) { return a >= b; }); });
  AddCpuKernel(r, "where", WhereKernel);
  AddCpuKernel(r, "broadcast_to", BroadcastToKernel);
  AddCpuKernel(r, "strided_slice", StridedSliceKernel);
  AddCpuKernel(r, "sum", [](const KernelCall& c) { return ReduceKernel<Reduction::kSum>("sum", c); });
  AddCpuKernel(r, "mean", [](const KernelCall& c) { return ReduceKernel<Reduction::kMean>("mean", c); });
  AddCpuKernel(r, "max", [](const KernelCall& c) { return ReduceKernel<Reduction::kMax>("max", c); });
  AddCpuKernel(r, "min", [](const KernelCall& c) { return ReduceKernel<Reduction::kMin>("min", c); });
  AddCpuKernel(r, "prod", [](const KernelCall& c) { return ReduceKernel<Reduction::kProd>("prod", c); });
}

}  // namespace vdev::kernels_internal
