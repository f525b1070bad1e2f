// softmax, layer_norm and rms_norm on the CPU. Each row is read into f32, its statistics (max,
// sums, mean, variance) are accumulated in double so the reference stays exact to well below f32
// rounding, and each output value is computed in f32 and rounded once.
#include <cmath>

#include "internal/cpu_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

// softmax(x, axis=-1): any axis; the axis is gathered into a contiguous f32 row.
// log_softmax(x, axis=-1): x - max - log(sum exp(x - max)), which keeps every finite value finite.
absl::Status SoftmaxKernel(absl::string_view name, const KernelCall& call, bool log = false) {
  const KernelOp op = KernelOp::Cpu(name);
  VDEV_ASSIGN_OR_RETURN(AroundAxis view, CheckSoftmax(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const int64_t outer = view.outer, len = view.extent, inner = view.inner;
  return DispatchFloat(op, x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x.data);
    T* o = static_cast<T*>(out.data);
    std::vector<float> row(static_cast<size_t>(len));
    for (int64_t p = 0; p < outer; ++p) {
      for (int64_t q = 0; q < inner; ++q) {
        const int64_t base = p * len * inner + q;
        float max = -INFINITY;
        for (int64_t i = 0; i < len; ++i) {
          row[i] = ToFloat(in[base + i * inner]);
          max = std::fmax(max, row[i]);
        }
        double sum = 0;
        for (int64_t i = 0; i < len; ++i) {
          row[i] = std::exp(row[i] - max);
          sum += row[i];
        }
        if (log) {
          const double shift = static_cast<double>(max) + std::log(sum);
          for (int64_t i = 0; i < len; ++i)
            o[base + i * inner] = FromFloat<T>(static_cast<float>(ToFloat(in[base + i * inner]) - shift));
          continue;
        }
        const float scale = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < len; ++i) o[base + i * inner] = FromFloat<T>(row[i] * scale);
      }
    }
    return absl::OkStatus();
  });
}

// layer_norm(x, gamma, beta, epsilon=1e-5) and rms_norm(x, gamma, epsilon=1e-6) over the last axis.
template <bool kRms>
absl::Status NormKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu(kRms ? "rms_norm" : "layer_norm");
  VDEV_ASSIGN_OR_RETURN(NormRows norm, CheckNorm(op, call, kRms));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const int64_t rows = norm.rows, len = norm.len;
  const float eps = norm.epsilon;
  return DispatchFloat(op, x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x.data);
    const T* gamma = static_cast<const T*>(call.inputs[1].data);
    const T* beta = kRms ? nullptr : static_cast<const T*>(call.inputs[2].data);
    T* o = static_cast<T*>(out.data);
    std::vector<float> g(static_cast<size_t>(len)), bias(static_cast<size_t>(len), 0.0f), row(g.size());
    for (int64_t i = 0; i < len; ++i) {
      g[i] = ToFloat(gamma[i]);
      if (beta != nullptr) bias[i] = ToFloat(beta[i]);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = in + r * len;
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < len; ++i) {
        row[i] = ToFloat(src[i]);
        sum += row[i];
        squares += static_cast<double>(row[i]) * row[i];
      }
      float mean = 0, rstd;
      if constexpr (kRms) {
        rstd = static_cast<float>(1.0 / std::sqrt(squares / len + eps));
      } else {
        const double m = sum / len;
        double var = 0;
        for (int64_t i = 0; i < len; ++i) var += (row[i] - m) * (row[i] - m);
        mean = static_cast<float>(m);
        rstd = static_cast<float>(1.0 / std::sqrt(var / len + eps));
      }
      T* dst = o + r * len;
      for (int64_t i = 0; i < len; ++i) dst[i] = FromFloat<T>((row[i] - mean) * rstd * g[i] + bias[i]);
    }
    return absl::OkStatus();
  });
}

// vdev.add_rms_norm(residual, sum, gamma) -> (h, n), the CPU reference of the fused all-reduce's
// epilogue: h = residual + sum rounded to T (as `add` rounds), n = rms_norm of that rounded h (as the
// unfused rms_norm reads it). h may be the sum's memory: each element is read before it is written.
absl::Status AddRmsNormKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu("vdev.add_rms_norm");
  VDEV_ASSIGN_OR_RETURN(NormRows norm, CheckAddRmsNorm(op, call));
  const int64_t rows = norm.rows, len = norm.len;
  return DispatchFloat(op, call.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* residual = static_cast<const T*>(call.inputs[0].data);
    const T* sum = static_cast<const T*>(call.inputs[1].data);
    const T* gamma = static_cast<const T*>(call.inputs[2].data);
    T* h = static_cast<T*>(call.outputs[0].data);
    T* n = static_cast<T*>(call.outputs[1].data);
    std::vector<float> row(static_cast<size_t>(len));
    for (int64_t r = 0; r < rows; ++r) {
      double squares = 0;
      for (int64_t i = 0; i < len; ++i) {
        const int64_t k = r * len + i;
        const T v = FromFloat<T>(ToFloat(residual[k]) + ToFloat(sum[k]));
        h[k] = v;
        row[i] = ToFloat(v);
        squares += static_cast<double>(row[i]) * row[i];
      }
      const float rstd = static_cast<float>(1.0 / std::sqrt(squares / len + norm.epsilon));
      for (int64_t i = 0; i < len; ++i) n[r * len + i] = FromFloat<T>(row[i] * rstd * ToFloat(gamma[i]));
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterNormKernels(KernelRegistry& r) {
  AddCpuKernel(r, "softmax", [](const KernelCall& c) { return SoftmaxKernel("softmax", c); });
  AddCpuKernel(r, "nn.softmax", [](const KernelCall& c) { return SoftmaxKernel("nn.softmax", c); });
  AddCpuKernel(r, "log_softmax", [](const KernelCall& c) { return SoftmaxKernel("log_softmax", c, /*log=*/true); });
  AddCpuKernel(r, "layer_norm", NormKernel<false>);
  AddCpuKernel(r, "rms_norm", NormKernel<true>);
  AddCpuKernel(r, "vdev.add_rms_norm", AddRmsNormKernel);
}

}  // namespace vdev::kernels_internal
