// The CUDA matmul op: a[...,M,K] @ b[...,K,N] -> [...,M,N] with broadcast batch dims, through
// CudaKernelBackend::Matmul (cuBLASLt).
//
// The batch dims are reduced like a broadcast's (size-1 dims dropped, adjacent dims merged where
// both operands index them alike). The innermost remaining dim becomes one strided-batched call
// when both operands have it, or is folded into M when only a has it (b is one matrix for the
// whole run: weights); when only b has it, each matrix is one call. The outer dims, rare, loop on
// the host. Every call only enqueues work.
#include <vector>

#include "internal/op_util.h"
#include "vdev/support/status_macros.h"

namespace vdev::cuda_internal {
namespace {

constexpr KernelOp kOp = KernelOp::Cuda("matmul");

struct BatchDim {
  int64_t extent, a_stride, b_stride;  // strides in matrices, 0 where broadcast
};

absl::Status Matmul(const KernelCall& call) {
  VDEV_RETURN_IF_ERROR(CheckArity(kOp, call, 2, 1));
  const TensorRef &a = call.inputs[0], &b = call.inputs[1], &out = call.outputs[0];
  VDEV_RETURN_IF_ERROR(ElemOf(kOp, a.dtype).status());
  VDEV_RETURN_IF_ERROR(CheckDType(kOp, b, a.dtype, "operand 2"));
  VDEV_RETURN_IF_ERROR(CheckDType(kOp, out, a.dtype, "the output"));
  if (a.shape.size() < 2 || b.shape.size() < 2) return Invalid(kOp, "operands must have rank >= 2");
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k)
    return Invalid(kOp, "inner dimensions of ", ShapeString(a.shape), " and ", ShapeString(b.shape), " differ");
  // The output's batch dims, and each operand's matrix strides along them.
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  int64_t a_stride = 1, b_stride = 1;
  std::vector<BatchDim> reversed;
  for (size_t i = 0; i + 2 < rank; ++i) {  // from the innermost batch dim outwards
    const int64_t ea = i + 2 < a.shape.size() ? a.shape[a.shape.size() - 3 - i] : 1;
    const int64_t eb = i + 2 < b.shape.size() ? b.shape[b.shape.size() - 3 - i] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      return Invalid(kOp, "batch dims of ", ShapeString(a.shape), " and ", ShapeString(b.shape), " do not broadcast");
    reversed.push_back({std::max(ea, eb), ea == 1 ? 0 : a_stride, eb == 1 ? 0 : b_stride});
    a_stride *= ea;
    b_stride *= eb;
  }
  Shape shape;
  std::vector<BatchDim> dims;
  int64_t batches = 1;
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
    shape.push_back(it->extent);
    batches *= it->extent;
    if (it->extent == 1) continue;
    if (!dims.empty() && dims.back().a_stride == it->a_stride * it->extent &&
        dims.back().b_stride == it->b_stride * it->extent) {
      dims.back() = {dims.back().extent * it->extent, it->a_stride, it->b_stride};
    } else {
      dims.push_back(*it);
    }
  }
  shape.push_back(m);
  shape.push_back(n);
  VDEV_RETURN_IF_ERROR(CheckShape(kOp, out, shape, "the output"));
  VDEV_ASSIGN_OR_RETURN(CudaKernelBackend * backend, BackendOf(kOp, call));
  if (batches == 0) return absl::OkStatus();

  // The innermost dim as one call: (calls, batch per call, rows per matrix, per-call steps).
  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0} : dims.back();
  if (!dims.empty()) dims.pop_back();
  int64_t calls = 1, batch = 1, rows = m;
  if (inner.a_stride != 0 && inner.b_stride != 0) {
    batch = inner.extent;
  } else if (inner.a_stride != 0) {
    rows = m * inner.extent;
  } else if (inner.b_stride != 0) {
    calls = inner.extent;  // b's matrices one by one, against the same a
  }
  int64_t outer = 1;
  for (const BatchDim& d : dims) outer *= d.extent;
  const size_t elem = DTypeBytes(a.dtype);
  const char* pa = static_cast<const char*>(a.data);
  const char* pb = static_cast<const char*>(b.data);
  char* pc = static_cast<char*>(out.data);
  const int64_t per_outer = inner.extent;  // output matrices per outer index
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rest = o, a_at = 0, b_at = 0;  // in matrices
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      const int64_t index = rest % dims[d].extent;
      rest /= dims[d].extent;
      a_at += index * dims[d].a_stride;
      b_at += index * dims[d].b_stride;
    }
    for (int64_t c = 0; c < calls; ++c) {
      const int64_t bi = b_at + c, ci = o * per_outer + c;
      VDEV_RETURN_IF_ERROR(backend->Matmul(a.dtype, pa + a_at * m * k * elem, pb + bi * k * n * elem,
                                           pc + ci * m * n * elem, batch, rows, n, k, call.context->stream));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMatmulOps(KernelRegistry& r) { Add(r, "matmul", Matmul); }

}  // namespace vdev::cuda_internal
