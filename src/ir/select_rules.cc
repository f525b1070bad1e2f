// Ops that frontends (the ONNX importer) map onto: where, broadcast_to, strided_slice and
// reciprocal, with their type rules (log_softmax shares softmax's, in type_rules.cc).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "internal/type_rules.h"
#include "vdev/support/status_macros.h"

namespace vdev::ir::internal {
namespace {

// where(cond, x, y): cond is bool; x and y share a dtype; the three broadcast (NumPy).
absl::StatusOr<TypeId> Where(const OpCall& c) {
  std::optional<TypeId> t[3];
  for (size_t i = 0; i < 3; ++i) {
    VDEV_ASSIGN_OR_RETURN(t[i], TensorArg(c, i));
    if (!t[i]) return kNoType;
  }
  const TypeTable& types = c.types();
  if (types.node(*t[0]).dtype != DType::kBool)
    return c.Error(absl::StrCat("the condition must be bool, not ", types.ToString(*t[0])), c.arg(0).loc);
  if (types.node(*t[1]).dtype != types.node(*t[2]).dtype)
    return c.Error(
        absl::StrCat("operand types ", types.ToString(*t[1]), " and ", types.ToString(*t[2]), " differ in dtype"));
  VDEV_ASSIGN_OR_RETURN(Dims xy, Broadcast(c, types.dims(*t[1]), types.dims(*t[2])));
  VDEV_ASSIGN_OR_RETURN(Dims out, Broadcast(c, types.dims(*t[0]), xy));
  return c.types().Tensor(types.node(*t[1]).dtype, out);
}

// broadcast_to(x, shape=[…]): x broadcast (NumPy) to exactly `shape`.
absl::StatusOr<TypeId> BroadcastTo(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape, c.IntsAttr("shape"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  for (int64_t d : *shape) {
    if (d < 0) return c.Error("shape entries must not be negative", c.attr("shape")->loc);
  }
  VDEV_ASSIGN_OR_RETURN(Dims out, Broadcast(c, c.types().dims(*t), *shape));
  if (out != *shape)
    return c.Error(absl::StrCat(c.types().ToString(*t), " does not broadcast to [", absl::StrJoin(*shape, ","), "]"));
  return c.types().Tensor(c.types().node(*t).dtype, out);
}

// strided_slice(x, begin=[…], end=[…], strides=[…]), one entry per axis: out[i] = x[begin + i*stride]
// for the ceil((end - begin) / stride) (at least 0) indices before `end`; a negative stride walks
// down (end -1 reaches index 0). Every index read must lie in the axis.
absl::StatusOr<TypeId> StridedSlice(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> begin, c.IntsAttr("begin"));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> end, c.IntsAttr("end"));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> strides, c.IntsAttr("strides"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  absl::Span<const int64_t> in = c.types().dims(*t);
  const std::vector<int64_t> ones(in.size(), 1);
  const std::vector<int64_t>& step = strides ? *strides : ones;
  if (begin->size() != in.size() || end->size() != in.size() || step.size() != in.size())
    return c.Error(absl::StrCat("begin, end and strides need one entry per axis (rank ", in.size(), ")"));
  Dims out;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t b = (*begin)[k], e = (*end)[k], s = step[k], d = in[k];
    if (s == 0) return c.Error("strides must not be 0", c.attr("strides")->loc);
    const int64_t n = s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s) : std::max<int64_t>(0, (b - e - s - 1) / -s);
    const int64_t last = b + (n - 1) * s;
    if (d != kDynamicDim && n > 0 && (b < 0 || b >= d || last < 0 || last >= d))
      return c.Error(absl::StrCat("axis ", k, ": indices ", b, "..", last, " leave [0, ", d, ")"));
    out.push_back(n);
  }
  return c.types().Tensor(c.types().node(*t).dtype, out);
}

}  // namespace

void AddSelectOps(OpRegistry& r) {
  AddOp(r, {"where", 3, 3, {}, {}, Where});
  AddOp(r, {"broadcast_to", 1, 1, {}, {"shape"}, BroadcastTo});
  AddOp(r, {"strided_slice", 1, 1, {}, {"begin", "end"}, StridedSlice});
  AddOp(r, {"reciprocal", 1, 1, {}, {}, Unary});
}

}  // namespace vdev::ir::internal
