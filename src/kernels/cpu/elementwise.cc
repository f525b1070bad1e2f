// Element-wise CPU kernels: add/subtract/multiply/divide/power/maximum/minimum with NumPy
// broadcasting, and the unary activations and math functions. f16/bf16 compute in f32 and round
// once per stored value; f64 computes in f64; integers (i8, u8, i32, i64) wrap around like unsigned
// arithmetic; the arithmetic itself is internal/elementwise_math.h's, shared with the CUDA kernels.
#include <cmath>
#include <type_traits>

#include "internal/cpu_util.h"
#include "internal/elementwise_math.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

constexpr KernelOp BinaryName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return KernelOp::Cpu("add");
    case BinaryOp::kSubtract: return KernelOp::Cpu("subtract");
    case BinaryOp::kMultiply: return KernelOp::Cpu("multiply");
    case BinaryOp::kDivide: return KernelOp::Cpu("divide");
    case BinaryOp::kPower: return KernelOp::Cpu("power");
    case BinaryOp::kMaximum: return KernelOp::Cpu("maximum");
    case BinaryOp::kMinimum: return KernelOp::Cpu("minimum");
  }
  return KernelOp::Cpu("?");
}

// half.h's conversions, for ApplyBinary (internal/elementwise_math.h).
struct CpuFloat {
  template <typename T>
  static float ToFloat(T v) {
    return kernels_internal::ToFloat(v);
  }
  template <typename T>
  static T FromFloat(float f) {
    return kernels_internal::FromFloat<T>(f);
  }
};

template <BinaryOp kOp, typename T>
void RunBinary(const BroadcastWalk& walk, const T* a, const T* b, T* out) {
  walk.ForEachRun([&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t sa, int64_t sb) {
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) out[o + i] = ApplyBinary<kOp, CpuFloat>(a[ia + i], b[ib + i]);
    } else if (sb == 0) {
      const T y = b[ib];
      for (int64_t i = 0; i < n; ++i) out[o + i] = ApplyBinary<kOp, CpuFloat>(a[ia + i * sa], y);
    } else if (sa == 0) {
      const T x = a[ia];
      for (int64_t i = 0; i < n; ++i) out[o + i] = ApplyBinary<kOp, CpuFloat>(x, b[ib + i * sb]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[o + i] = ApplyBinary<kOp, CpuFloat>(a[ia + i * sa], b[ib + i * sb]);
    }
  });
}

template <BinaryOp kOp>
absl::Status BinaryKernel(const KernelCall& call) {
  constexpr KernelOp op = BinaryName(kOp);
  VDEV_RETURN_IF_ERROR(CheckArity(op, call, 2, 1));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckDType(op, b, a.dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(op, out, a.dtype, "the output"));
  VDEV_ASSIGN_OR_RETURN(BroadcastWalk walk, BroadcastWalk::Make(op, out.shape, a.shape, b.shape));
  return DispatchNumeric(op, a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    RunBinary<kOp>(walk, static_cast<const T*>(a.data), static_cast<const T*>(b.data), static_cast<T*>(out.data));
    return absl::OkStatus();
  });
}

template <UnaryOp kOp>
absl::Status RunUnary(absl::string_view name, const KernelCall& call) {
  const KernelOp op = KernelOp::Cpu(name);
  VDEV_RETURN_IF_ERROR(CheckUnary(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  return DispatchFloat(op, x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x.data);
    T* o = static_cast<T*>(out.data);
    const int64_t n = x.NumElements();
    for (int64_t i = 0; i < n; ++i) o[i] = FromFloat<T>(ApplyUnary<kOp>(ToFloat(in[i])));
    return absl::OkStatus();
  });
}

// gelu(x, approximate="none"|"tanh").
absl::Status GeluKernel(const KernelCall& call) {
  std::optional<std::string> approximate = AttrsOf(call).Text("approximate");
  if (!approximate || *approximate == "none") return RunUnary<UnaryOp::kGeluErf>("gelu", call);
  if (*approximate == "tanh") return RunUnary<UnaryOp::kGeluTanh>("gelu", call);
  return Invalid(KernelOp::Cpu("gelu"), "approximate must be \"none\" or \"tanh\", not \"", *approximate, "\"");
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& r) {
  AddCpuKernel(r, "add", BinaryKernel<BinaryOp::kAdd>);
  AddCpuKernel(r, "subtract", BinaryKernel<BinaryOp::kSubtract>);
  AddCpuKernel(r, "multiply", BinaryKernel<BinaryOp::kMultiply>);
  AddCpuKernel(r, "divide", BinaryKernel<BinaryOp::kDivide>);
  AddCpuKernel(r, "power", BinaryKernel<BinaryOp::kPower>);
  AddCpuKernel(r, "maximum", BinaryKernel<BinaryOp::kMaximum>);
  AddCpuKernel(r, "minimum", BinaryKernel<BinaryOp::kMinimum>);
  AddCpuKernel(r, "relu", [](const KernelCall& c) { return RunUnary<UnaryOp::kRelu>("relu", c); });
  AddCpuKernel(r, "nn.relu", [](const KernelCall& c) { return RunUnary<UnaryOp::kRelu>("nn.relu", c); });
  AddCpuKernel(r, "gelu", GeluKernel);
  AddCpuKernel(r, "silu", [](const KernelCall& c) { return RunUnary<UnaryOp::kSilu>("silu", c); });
  AddCpuKernel(r, "exp", [](const KernelCall& c) { return RunUnary<UnaryOp::kExp>("exp", c); });
  AddCpuKernel(r, "tanh", [](const KernelCall& c) { return RunUnary<UnaryOp::kTanh>("tanh", c); });
  AddCpuKernel(r, "sigmoid", [](const KernelCall& c) { return RunUnary<UnaryOp::kSigmoid>("sigmoid", c); });
  AddCpuKernel(r, "negative", [](const KernelCall& c) { return RunUnary<UnaryOp::kNegative>("negative", c); });
  AddCpuKernel(r, "sqrt", [](const KernelCall& c) { return RunUnary<UnaryOp::kSqrt>("sqrt", c); });
  AddCpuKernel(r, "rsqrt", [](const KernelCall& c) { return RunUnary<UnaryOp::kRsqrt>("rsqrt", c); });
  AddCpuKernel(r, "log", [](const KernelCall& c) { return RunUnary<UnaryOp::kLog>("log", c); });
  AddCpuKernel(r, "erf", [](const KernelCall& c) { return RunUnary<UnaryOp::kErf>("erf", c); });
  AddCpuKernel(r, "abs", [](const KernelCall& c) { return RunUnary<UnaryOp::kAbs>("abs", c); });
  AddCpuKernel(r, "reciprocal", [](const KernelCall& c) { return RunUnary<UnaryOp::kReciprocal>("reciprocal", c); });
}

}  // namespace vdev::kernels_internal
