// attention and silu_mul on the CPU.
//
// attention(qkv[T,3,H,D], causal) -> [T,H,D]: per head, blocks of queries against the keys they
// see: S = Q K^T / sqrt(D) and O = softmax(S) V are two sgemm calls on strided views of qkv (f16
// and bf16 are widened to f32 once), so the work is O(T^2 D) at BLAS speed, and a causal block
// multiplies only the keys up to its last query.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "internal/cpu_util.h"
#include "internal/openblas_loader.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

constexpr int64_t kQueryBlock = 128;

absl::Status AttentionKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu("attention");
  VDEV_ASSIGN_OR_RETURN(AttentionShape shape, CheckAttention(op, call));
  const TensorRef &qkv = call.inputs[0], &out = call.outputs[0];
  const int64_t t = shape.tokens, heads = shape.heads, d = shape.head_dim;
  const bool causal = shape.causal;
  if (t == 0 || heads == 0 || d == 0) return absl::OkStatus();
  VDEV_RETURN_IF_ERROR(LoadOpenBlas());
  const int64_t elem = static_cast<int64_t>(DTypeBytes(qkv.dtype));
  const int64_t row = 3 * heads * d;  // qkv's stride between tokens
  const float* all = static_cast<const float*>(qkv.data);
  if (qkv.dtype != ir::DType::kF32) {
    float* widened = Scratch(0, t * row);
    WidenToFloat(qkv.dtype, qkv.data, widened, t * row);
    all = widened;
  }
  const int64_t block = std::min(t, kQueryBlock);
  float* scores = Scratch(1, block * t);
  float* o32 = Scratch(2, block * d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int ld = static_cast<int>(row);
  for (int64_t h = 0; h < heads; ++h) {
    const float* q = all + h * d;
    const float* k = all + heads * d + h * d;
    const float* v = all + 2 * heads * d + h * d;
    for (int64_t q0 = 0; q0 < t; q0 += block) {
      const int64_t rows = std::min(block, t - q0);
      const int64_t keys = causal ? q0 + rows : t;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(keys),
                  static_cast<int>(d), scale, q + q0 * row, ld, k, ld, 0.0f, scores, static_cast<int>(keys));
      for (int64_t i = 0; i < rows; ++i) {
        float* s = scores + i * keys;
        const int64_t seen = causal ? q0 + i + 1 : keys;  // keys this query attends to
        const float max = *std::max_element(s, s + seen);
        double sum = 0;
        for (int64_t j = 0; j < seen; ++j) {
          s[j] = std::exp(s[j] - max);
          sum += s[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < seen; ++j) s[j] *= inv;
        std::fill(s + seen, s + keys, 0.0f);
      }
      // O rows go straight into an f32 output (stride H*D), else through o32 and one rounding.
      const bool direct = qkv.dtype == ir::DType::kF32;
      float* o = direct ? static_cast<float*>(out.data) + q0 * heads * d + h * d : o32;
      const int ldo = direct ? static_cast<int>(heads * d) : static_cast<int>(d);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(d),
                  static_cast<int>(keys), 1.0f, scores, static_cast<int>(keys), v, ld, 0.0f, o, ldo);
      if (!direct) {
        for (int64_t i = 0; i < rows; ++i)
          NarrowFromFloat(qkv.dtype, o32 + i * d, static_cast<char*>(out.data) + ((q0 + i) * heads + h) * d * elem, d);
      }
    }
  }
  return absl::OkStatus();
}

// silu_mul(x[..., 2F]) -> [..., F]: silu(x[..., :F]) * x[..., F:], rounded once.
absl::Status SiluMulKernel(const KernelCall& call) {
  constexpr KernelOp op = KernelOp::Cpu("silu_mul");
  VDEV_ASSIGN_OR_RETURN(Rows shape, CheckSiluMul(op, call));
  const TensorRef &x = call.inputs[0], &out = call.outputs[0];
  const int64_t rows = shape.rows, f = shape.len;
  return DispatchFloat(op, x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t r = 0; r < rows; ++r) {
      const T* gate = static_cast<const T*>(x.data) + r * 2 * f;
      const T* up = gate + f;
      T* o = static_cast<T*>(out.data) + r * f;
      for (int64_t i = 0; i < f; ++i) {
        const float g = ToFloat(gate[i]);
        o[i] = FromFloat<T>(g / (1.0f + std::exp(-g)) * ToFloat(up[i]));
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterAttentionKernels(KernelRegistry& r) {
  AddCpuKernel(r, "attention", AttentionKernel);
  AddCpuKernel(r, "silu_mul", SiluMulKernel);
}

}  // namespace vdev::kernels_internal
