// ReduceInRankOrder (vdev/executor/executor.h): the arithmetic every host all-reduce shares.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "session_reduce.h"
#include "vdev/executor/executor.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

template <typename T, typename Acc, typename Load, typename Store>
void Reduce(absl::Span<const void* const> inputs, void* out, int64_t count, ReduceOp op, Load load, Store store) {
  const size_t n = inputs.size();
  for (int64_t i = 0; i < count; ++i) {
    Acc acc = load(static_cast<const T*>(inputs[0])[i]);
    for (size_t r = 1; r < n; ++r) {
      const Acc x = load(static_cast<const T*>(inputs[r])[i]);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg: acc = acc + x; break;
        case ReduceOp::kMax: acc = x > acc ? x : acc; break;
        case ReduceOp::kMin: acc = x < acc ? x : acc; break;
        case ReduceOp::kProd: acc = acc * x; break;
      }
    }
    if (op == ReduceOp::kAvg) acc = acc / static_cast<Acc>(n);
    static_cast<T*>(out)[i] = store(acc);
  }
}

template <typename T>
void ReducePlain(absl::Span<const void* const> inputs, void* out, int64_t count, ReduceOp op) {
  Reduce<T, T>(
      inputs, out, count, op, [](T x) { return x; }, [](T x) { return x; });
}

}  // namespace

absl::Status ReduceInRankOrder(absl::Span<const void* const> inputs, void* out, int64_t count, ir::DType dtype,
                               ReduceOp op) {
  if (inputs.empty()) return absl::InvalidArgumentError("a reduction of no inputs");
  switch (dtype) {
    case ir::DType::kF64: ReducePlain<double>(inputs, out, count, op); break;
    case ir::DType::kF32: ReducePlain<float>(inputs, out, count, op); break;
    case ir::DType::kI64: ReducePlain<int64_t>(inputs, out, count, op); break;
    case ir::DType::kI32: ReducePlain<int32_t>(inputs, out, count, op); break;
    case ir::DType::kF16: Reduce<uint16_t, float>(inputs, out, count, op, HalfToFloat, FloatToHalf); break;
    case ir::DType::kBF16: Reduce<uint16_t, float>(inputs, out, count, op, BF16ToFloat, FloatToBF16); break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("all-reduce of ", ir::DTypeName(dtype), " is not supported"));
  }
  return absl::OkStatus();
}

namespace internal {

absl::Status ReduceOverSession(PeerGroup& session, const void* host_in, void* host_out, int64_t count, ir::DType dtype,
                               ReduceOp op) {
  const size_t bytes = static_cast<size_t>(count) * DTypeBytes(dtype);
  std::vector<std::string> all;
  VDEV_RETURN_IF_ERROR(
      session.AllGather("executor-allreduce", absl::string_view(static_cast<const char*>(host_in), bytes), &all));
  std::vector<const void*> inputs;
  for (const std::string& part : all) {
    if (part.size() != bytes) return absl::InvalidArgumentError("workers all-reduce tensors of different sizes");
    inputs.push_back(part.data());
  }
  return ReduceInRankOrder(inputs, host_out, count, dtype, op);
}

}  // namespace internal
}  // namespace vdev
