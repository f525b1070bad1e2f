// CPU kernels that pick or compare elements: the comparisons (bool result), where, broadcast_to
// and strided_slice, and the reductions sum/mean/max/min/prod. Any dtype moves as bytes; values
// are compared and accumulated in double (exact for every f32/f16/bf16/i32 value, and i64 up to
// 2^53), and a reduction rounds once on store.
#include <cmath>
#include <cstring>

#include "internal/cpu_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

// Walks a tensor of shape `dims` in row-major order; operand k starts at base[k] and moves by
// strides[k][d] elements per step of output dim d. Calls fn(out_index, offsets).
template <typename Fn>
void ForEachStrided(const Shape& dims, const std::vector<int64_t>& base,
                    const std::vector<std::vector<int64_t>>& strides, Fn&& fn) {
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

double Read(const TensorRef& t, int64_t i) { return ReadAsDouble(t, i); }

template <typename Cmp>
absl::Status CompareKernel(absl::string_view name, const KernelCall& call, Cmp cmp) {
  const KernelOp op = KernelOp::Cpu(name);
  VDEV_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> strides, CheckCompare(op, call));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  auto* o = static_cast<uint8_t*>(out.data);
  ForEachStrided(out.shape, {0, 0}, strides,
                 [&](int64_t i, const int64_t* at) { o[i] = cmp(Read(a, at[0]), Read(b, at[1])) ? 1 : 0; });
  return absl::OkStatus();
}

absl::Status WhereKernel(const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> strides, CheckWhere(KernelOp::Cpu("where"), call));
  const TensorRef &c = call.inputs[0], &x = call.inputs[1], &y = call.inputs[2], &out = call.outputs[0];
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
  ForEachStrided(out.shape, {base}, {strides},
                 [&](int64_t i, const int64_t* at) { std::memcpy(o + i * bytes, in + at[0] * bytes, bytes); });
}

absl::Status BroadcastToKernel(const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> strides, CheckBroadcastTo(KernelOp::Cpu("broadcast_to"), call));
  Gather(call.inputs[0], call.outputs[0], 0, strides);
  return absl::OkStatus();
}

absl::Status StridedSliceKernel(const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(SliceView view, CheckStridedSlice(KernelOp::Cpu("strided_slice"), call));
  Gather(call.inputs[0], call.outputs[0], view.base, view.strides);
  return absl::OkStatus();
}

enum class Reduction { kSum, kMean, kMax, kMin, kProd };

template <Reduction kOp>
absl::Status ReduceKernel(absl::string_view name, const KernelCall& call) {
  VDEV_ASSIGN_OR_RETURN(std::vector<bool> reduced, CheckReduce(KernelOp::Cpu(name), call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const size_t rank = x.shape.size();
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
  const double init = kOp == Reduction::kMax    ? -INFINITY
                      : kOp == Reduction::kMin  ? INFINITY
                      : kOp == Reduction::kProd ? 1.0
                                                : 0.0;
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
  AddCpuKernel(r, "equal", [](const KernelCall& c) {
    return CompareKernel("equal", c, [](double a, double b) { return a == b; });
  });
  AddCpuKernel(r, "not_equal", [](const KernelCall& c) {
    return CompareKernel("not_equal", c, [](double a, double b) { return a != b; });
  });
  AddCpuKernel(r, "less",
               [](const KernelCall& c) { return CompareKernel("less", c, [](double a, double b) { return a < b; }); });
  AddCpuKernel(r, "less_equal", [](const KernelCall& c) {
    return CompareKernel("less_equal", c, [](double a, double b) { return a <= b; });
  });
  AddCpuKernel(r, "greater", [](const KernelCall& c) {
    return CompareKernel("greater", c, [](double a, double b) { return a > b; });
  });
  AddCpuKernel(r, "greater_equal", [](const KernelCall& c) {
    return CompareKernel("greater_equal", c, [](double a, double b) { return a >= b; });
  });
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
