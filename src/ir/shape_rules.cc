// The ops that reshape and index — reshape, split, concat, layout_transform, transpose, take — and
// their type rules (internal/type_rules.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "internal/type_rules.h"
#include "vdev/support/status_macros.h"

namespace vdev::ir::internal {
namespace {

// reshape(%x, newshape=[…]) or reshape(%x, […]); -1 infers one dimension, 0 copies the input's.
absl::StatusOr<TypeId> Reshape(const OpCall& c) {
  std::vector<int64_t> shape;
  if (c.num_args() == 2 && c.arg(1).kind == OperandKind::kIntList) {
    absl::Span<const int64_t> v = c.module().Ints(c.arg(1));
    shape.assign(v.begin(), v.end());
  } else if (c.num_args() == 2) {
    return kNoType;  // a shape computed at run time
  } else {
    VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> attr, c.IntsAttr("newshape"));
    if (!attr) return c.Error("needs newshape=[…] or a shape operand");
    shape = *attr;
  }
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  absl::Span<const int64_t> in = c.types().dims(*t);
  bool dynamic = false;
  int64_t known = 1;
  for (int64_t d : in) {
    if (d == kDynamicDim) dynamic = true;
    else if (__builtin_mul_overflow(known, d, &known)) return c.Error("the input has more than 2^63-1 elements");
  }
  int infer_at = -1;
  int64_t product = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      if (i >= in.size()) return c.Error("0 in newshape refers past the input's rank");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (infer_at >= 0) return c.Error("newshape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (shape[i] == kDynamicDim || shape[i] < -1) {
      return c.Error("newshape entries must be positive, 0 or -1");
    } else if (__builtin_mul_overflow(product, shape[i], &product)) {
      return c.Error("newshape has more than 2^63-1 elements");
    }
  }
  if (infer_at >= 0) {
    shape[infer_at] = dynamic || product == 0 ? kDynamicDim : known / product;
    if (!dynamic && product != 0 && known % product != 0)
      return c.Error(absl::StrCat("cannot reshape ", c.types().ToString(*t), " to newshape"));
  } else if (!dynamic && product != known) {
    return c.Error(
        absl::StrCat("cannot reshape ", c.types().ToString(*t), " (", known, " elements) to ", product, " elements"));
  }
  return c.types().Tensor(c.types().node(*t).dtype, shape);
}

// split(%x, indices_or_sections=N | [i, j, …], axis=0) -> a tuple of tensors.
absl::StatusOr<TypeId> Split(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, c.IntAttr("axis"));
  const Operand* sections = c.attr("indices_or_sections");
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  TypeTable& types = c.types();
  Dims dims(types.dims(*t).begin(), types.dims(*t).end());
  DType dtype = types.node(*t).dtype;
  VDEV_ASSIGN_OR_RETURN(int64_t axis, Axis(c, axis_attr.value_or(0), dims.size()));
  int64_t extent = dims[axis];
  std::vector<TypeId> fields;
  if (sections->kind == OperandKind::kIntList) {
    int64_t start = 0;
    for (int64_t index : c.module().Ints(*sections)) {
      if (index < start || (extent != kDynamicDim && index > extent))
        return c.Error("split indices must be increasing and within the axis", sections->loc);
      dims[axis] = index - start;
      fields.push_back(types.Tensor(dtype, dims));
      start = index;
    }
    dims[axis] = extent == kDynamicDim ? kDynamicDim : extent - start;
    fields.push_back(types.Tensor(dtype, dims));
  } else {
    VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> n, c.IntAttr("indices_or_sections"));
    if (*n <= 0) return c.Error("the number of sections must be positive", sections->loc);
    if (extent != kDynamicDim && extent % *n != 0)
      return c.Error(absl::StrCat("axis of size ", extent, " does not split into ", *n, " equal sections"));
    dims[axis] = extent == kDynamicDim ? kDynamicDim : extent / *n;
    fields.assign(*n, types.Tensor(dtype, dims));
  }
  return types.Tuple(fields);
}

// concat(%a, %b, …, axis=0) or concat(%tuple, axis=0); `concatenate` is the same op.
absl::StatusOr<TypeId> Concat(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, c.IntAttr("axis"));
  TypeTable& types = c.types();
  std::vector<TypeId> parts;
  if (c.num_args() == 1 && c.arg_type(0) != kNoType && types.kind(c.arg_type(0)) == TypeKind::kTuple) {
    absl::Span<const TypeId> f = types.fields(c.arg_type(0));
    parts.assign(f.begin(), f.end());
  } else {
    for (size_t i = 0; i < c.num_args(); ++i) {
      VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, i));
      if (!t) return kNoType;
      parts.push_back(*t);
    }
  }
  if (parts.empty()) return c.Error("needs at least one tensor");
  for (TypeId p : parts) {
    if (!IsTensor(types, p)) return c.Error(absl::StrCat("cannot concatenate ", types.ToString(p)));
  }
  Dims dims(types.dims(parts[0]).begin(), types.dims(parts[0]).end());
  DType dtype = types.node(parts[0]).dtype;
  VDEV_ASSIGN_OR_RETURN(int64_t axis, Axis(c, axis_attr.value_or(0), dims.size()));
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::Span<const int64_t> d = types.dims(parts[i]);
    if (d.size() != dims.size() || types.node(parts[i]).dtype != dtype)
      return c.Error(absl::StrCat("cannot concatenate ", types.ToString(parts[0]), " and ", types.ToString(parts[i])));
    for (size_t k = 0; k < d.size(); ++k) {
      if (static_cast<int64_t>(k) == axis) {
        if (dims[k] == kDynamicDim || d[k] == kDynamicDim) {
          dims[k] = kDynamicDim;
        } else if (__builtin_add_overflow(dims[k], d[k], &dims[k])) {
          return c.Error(absl::StrCat("the concatenated axis ", axis, " is longer than 2^63-1"));
        }
      } else if (dims[k] != d[k] && dims[k] != kDynamicDim && d[k] != kDynamicDim) {
        return c.Error(absl::StrCat("cannot concatenate ", types.ToString(parts[0]), " and ", types.ToString(parts[i]),
                                    " along axis ", axis));
      }
    }
  }
  return types.Tensor(dtype, dims);
}

// layout_transform(%x, src_layout="NCHW", dst_layout="NHWC"): a permutation of the same letters.
// Split layouts (NCHW4c) give an unknown type.
absl::StatusOr<TypeId> LayoutTransform(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> src, c.TextAttr("src_layout"));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> dst, c.TextAttr("dst_layout"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  auto letters_only = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 'A' && ch <= 'Z'; });
  };
  if (!letters_only(*src) || !letters_only(*dst)) return kNoType;
  absl::Span<const int64_t> in = c.types().dims(*t);
  if (src->size() != in.size()) return c.Error(absl::StrCat("layout ", *src, " does not match rank ", in.size()));
  std::string a = *src, b = *dst;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b || std::adjacent_find(a.begin(), a.end()) != a.end())
    return c.Error(absl::StrCat("layouts ", *src, " and ", *dst, " are not permutations of each other"));
  Dims out;
  for (char ch : *dst) out.push_back(in[src->find(ch)]);
  return c.types().Tensor(c.types().node(*t).dtype, out);
}

// transpose(x, axes=[...]): out.shape[i] = x.shape[axes[i]]; default: reversed axes.
absl::StatusOr<TypeId> Transpose(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, c.IntsAttr("axes"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  absl::Span<const int64_t> in = c.types().dims(*t);
  if (axes && axes->size() != in.size())
    return c.Error(absl::StrCat("axes has ", axes->size(), " entries for rank ", in.size()), c.attr("axes")->loc);
  std::vector<bool> seen(in.size(), false);
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    VDEV_ASSIGN_OR_RETURN(int64_t a, Axis(c, axes ? (*axes)[i] : static_cast<int64_t>(in.size() - 1 - i), in.size()));
    if (seen[a]) return c.Error("axes is not a permutation", c.attr("axes")->loc);
    seen[a] = true;
    out.push_back(in[a]);
  }
  return c.types().Tensor(c.types().node(*t).dtype, out);
}

// take(table, indices, axis=0): table.shape[:axis] + indices.shape + table.shape[axis+1:].
absl::StatusOr<TypeId> Take(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> axis_attr, c.IntAttr("axis"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> table, TensorArg(c, 0));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> indices, TensorArg(c, 1));
  if (!table || !indices) return kNoType;
  const TypeTable& t = c.types();
  if (t.node(*indices).dtype != DType::kI32 && t.node(*indices).dtype != DType::kI64)
    return c.Error(absl::StrCat("indices must be i32 or i64, not ", t.ToString(*indices)), c.arg(1).loc);
  absl::Span<const int64_t> in = t.dims(*table), at = t.dims(*indices);
  if (in.empty()) return c.Error("cannot take from a 0-d table");
  VDEV_ASSIGN_OR_RETURN(int64_t axis, Axis(c, axis_attr.value_or(0), in.size()));
  Dims out(in.begin(), in.begin() + axis);
  out.insert(out.end(), at.begin(), at.end());
  out.insert(out.end(), in.begin() + axis + 1, in.end());
  return c.types().Tensor(t.node(*table).dtype, out);
}

}  // namespace

void AddShapeOps(OpRegistry& r) {
  AddOp(r, {"transpose", 1, 1, {}, {}, Transpose});
  AddOp(r, {"take", 2, 2, {}, {}, Take});
  AddOp(r, {"reshape", 1, 2, {}, {}, Reshape});
  AddOp(r, {"split", 1, 1, {}, {"indices_or_sections"}, Split});
  AddOp(r, {"concat", 1, -1, {}, {}, Concat});
  AddOp(r, {"concatenate", 1, -1, {}, {}, Concat});
  AddOp(r, {"layout_transform", 1, 1, {}, {"src_layout", "dst_layout"}, LayoutTransform});
}

}  // namespace vdev::ir::internal
