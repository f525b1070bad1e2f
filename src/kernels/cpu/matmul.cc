// matmul on the CPU through OpenBLAS (cblas_sgemm). f16/bf16 operands are widened to f32 panels,
// multiplied with f32 accumulation and rounded once into the output. Batch dims broadcast; when
// the right operand is one matrix for every batch (weights), the batches fold into one sgemm.
#include <cblas.h>

#include <algorithm>
#include <climits>

#include "internal/cpu_util.h"
#include "internal/openblas_loader.h"
#include "vdev/support/status_macros.h"

namespace vdev::kernels_internal {
namespace {

constexpr KernelOp kOp = KernelOp::Cpu("matmul");
// Columns of the right operand widened per sgemm: bounds the panel at K x 1024 floats.
constexpr int64_t kPanelColumns = 1024;

struct Gemm {
  ir::DType dtype;
  int64_t m, n, k;
};

// C[m,n] = A[m,k] B[k,n] for one matrix of each, all row-major at the given element offsets.
void RunOne(const Gemm& g, const void* a, const void* b, void* c) {
  const size_t elem = DTypeBytes(g.dtype);
  if (g.k == 0) {  // sgemm is not asked to handle an empty inner dimension
    std::vector<float> zeros(static_cast<size_t>(g.n), 0.0f);
    for (int64_t i = 0; i < g.m; ++i)
      NarrowFromFloat(g.dtype, zeros.data(), static_cast<char*>(c) + i * g.n * elem, g.n);
    return;
  }
  if (g.dtype == ir::DType::kF32) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m), static_cast<int>(g.n),
                static_cast<int>(g.k), 1.0f, static_cast<const float*>(a), static_cast<int>(g.k),
                static_cast<const float*>(b), static_cast<int>(g.n), 0.0f, static_cast<float*>(c),
                static_cast<int>(g.n));
    return;
  }
  float* a32 = Scratch(0, g.m * g.k);
  WidenToFloat(g.dtype, a, a32, g.m * g.k);
  const int64_t width = std::min(g.n, kPanelColumns);
  float* b32 = Scratch(1, g.k * width);
  float* c32 = Scratch(2, g.m * width);
  for (int64_t n0 = 0; n0 < g.n; n0 += width) {
    const int64_t w = std::min(width, g.n - n0);
    for (int64_t r = 0; r < g.k; ++r)
      WidenToFloat(g.dtype, static_cast<const char*>(b) + (r * g.n + n0) * elem, b32 + r * w, w);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m), static_cast<int>(w),
                static_cast<int>(g.k), 1.0f, a32, static_cast<int>(g.k), b32, static_cast<int>(w), 0.0f, c32,
                static_cast<int>(w));
    for (int64_t r = 0; r < g.m; ++r)
      NarrowFromFloat(g.dtype, c32 + r * w, static_cast<char*>(c) + (r * g.n + n0) * elem, w);
  }
}

absl::Status MatmulKernel(const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(kOp, call, 2, 1));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(CheckNumeric(kOp, a.dtype, /*integers=*/false));
  VDEV_RETURN_IF_ERROR(CheckDType(kOp, b, a.dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(kOp, out, a.dtype, "the output"));
  const size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra < 2 || rb < 2) return Invalid(kOp, "operands must have rank >= 2, not ", ra, " and ", rb);
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k)
    return Invalid(kOp, "inner dimensions of ", ShapeString(a.shape), " and ", ShapeString(b.shape), " differ");
  if (out.shape.size() < 2 || out.shape[out.shape.size() - 2] != m || out.shape.back() != n)
    return Invalid(kOp, "the output has shape ", ShapeString(out.shape), ", expected [...,", m, ",", n, "]");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return Invalid(kOp, "a matrix dimension exceeds 2^31-1");
  const Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  const Shape batch_out(out.shape.begin(), out.shape.end() - 2);
  VDEV_ASSIGN_OR_RETURN(BroadcastWalk walk, BroadcastWalk::Make(kOp, batch_out, batch_a, batch_b));
  const int64_t elem = static_cast<int64_t>(DTypeBytes(a.dtype));
  const int64_t batches = TensorRef{nullptr, a.dtype, batch_out}.NumElements();
  const int64_t b_matrices = TensorRef{nullptr, a.dtype, batch_b}.NumElements();
  if (batches == 0 || m == 0 || n == 0) return absl::OkStatus();
  VDEV_RETURN_IF_ERROR(LoadOpenBlas());
  if (b_matrices == 1 && batch_a == batch_out && batches * m <= INT_MAX) {
    RunOne(Gemm{a.dtype, batches * m, n, k}, a.data, b.data, out.data);  // one matrix of weights
    return absl::OkStatus();
  }
  walk.ForEachRun([&](int64_t o, int64_t ia, int64_t ib, int64_t run, int64_t sa, int64_t sb) {
    for (int64_t i = 0; i < run; ++i) {
      RunOne(Gemm{a.dtype, m, n, k}, static_cast<const char*>(a.data) + (ia + i * sa) * m * k * elem,
             static_cast<const char*>(b.data) + (ib + i * sb) * k * n * elem,
             static_cast<char*>(out.data) + (o + i) * m * n * elem);
    }
  });
  return absl::OkStatus();
}

}  // namespace

void RegisterMatmulKernels(KernelRegistry& r) { AddCpuKernel(r, kOp.name(), MatmulKernel); }

}  // namespace vdev::kernels_internal

namespace vdev {

void SetCpuKernelThreads(int n) { openblas_set_num_threads(std::max(1, n)); }

}  // namespace vdev
