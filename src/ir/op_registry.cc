// The op registry and the type rules of the built-in and standard ops.
#include "vdev/op_registry.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/status_macros.h"

namespace vdev::ir {

// ---------------------------------------------------------------------------------------------
// OpCall

const Operand* OpCall::attr(absl::string_view key) const {
  const Attr* a = module_.FindAttr(expr_, key);
  return a == nullptr ? nullptr : &a->value;
}

namespace {

std::optional<int64_t> AsInt(const Module& m, const Operand& o) {
  if (o.kind != OperandKind::kNumber) return std::nullopt;
  absl::string_view s = m.Name(o.symbol);
  int64_t v;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> OpCall::IntAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> v = AsInt(module_, *o);
  if (!v) return Error(absl::StrCat("attribute '", key, "' must be an integer"), o->loc);
  return v;
}

absl::StatusOr<std::optional<std::vector<int64_t>>> OpCall::IntsAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<std::vector<int64_t>>();
  if (o->kind == OperandKind::kIntList) {
    absl::Span<const int64_t> v = module_.Ints(*o);
    return std::optional<std::vector<int64_t>>(std::vector<int64_t>(v.begin(), v.end()));
  }
  std::optional<int64_t> v = AsInt(module_, *o);
  if (!v) return Error(absl::StrCat("attribute '", key, "' must be an integer or a list of integers"), o->loc);
  return std::optional<std::vector<int64_t>>(std::vector<int64_t>{*v});
}

absl::StatusOr<std::optional<std::string>> OpCall::TextAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<std::string>();
  if (o->kind == OperandKind::kIdent) return std::optional<std::string>(std::string(module_.Name(o->symbol)));
  if (o->kind == OperandKind::kString) {
    absl::string_view s = module_.Name(o->symbol);
    return std::optional<std::string>(std::string(s.substr(1, s.size() - 2)));
  }
  return Error(absl::StrCat("attribute '", key, "' must be a name or a string"), o->loc);
}

absl::StatusOr<std::optional<bool>> OpCall::BoolAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<bool>();
  if (o->kind != OperandKind::kBool) return Error(absl::StrCat("attribute '", key, "' must be true or false"), o->loc);
  return std::optional<bool>(o->index != 0);
}

absl::Status OpCall::Error(std::string message, SourceLoc loc) const {
  error_loc_ = loc.valid() ? loc : expr_.loc;
  return absl::InvalidArgumentError(absl::StrCat("'", module_.Name(expr_.op), "': ", message));
}

// ---------------------------------------------------------------------------------------------
// Registry

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    AddBuiltinOps(*r);
    AddStandardOps(*r);
    return r;
  }();
  return *registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  absl::MutexLock lock(&mutex_);
  std::string name = def.name;
  auto [it, inserted] = ops_.try_emplace(name, nullptr);
  if (!inserted) return absl::AlreadyExistsError(absl::StrCat("op '", name, "' is already registered"));
  it->second = std::make_unique<OpDef>(std::move(def));
  return absl::OkStatus();
}

const OpDef* OpRegistry::Find(absl::string_view name) const {
  absl::MutexLock lock(&mutex_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// Type rules

namespace {

using Dims = std::vector<int64_t>;

bool IsTensor(const TypeTable& t, TypeId id) { return id != kNoType && t.kind(id) == TypeKind::kTensor; }

// The tensor operand `i`, or an error when its type is known and not a tensor. nullopt: unknown.
absl::StatusOr<std::optional<TypeId>> TensorArg(const OpCall& c, size_t i) {
  TypeId t = c.arg_type(i);
  if (t == kNoType) return std::optional<TypeId>();
  if (!IsTensor(c.types(), t))
    return c.Error(absl::StrCat("operand ", i + 1, " must be a tensor, not ", c.types().ToString(t)), c.arg(i).loc);
  return std::optional<TypeId>(t);
}

// Normalises a possibly negative axis against `rank`.
absl::StatusOr<int64_t> Axis(const OpCall& c, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return c.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + r : axis;
}

absl::StatusOr<TypeId> Unary(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  return t ? *t : kNoType;
}

// Numpy broadcasting; a dynamic dim broadcasts against 1 and is assumed equal to a static one.
absl::StatusOr<Dims> Broadcast(const OpCall& c, absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == y || y == 1) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else if (x == kDynamicDim) {
      out[i] = y;
    } else if (y == kDynamicDim) {
      out[i] = x;
    } else {
      return c.Error(absl::StrCat("shapes [", absl::StrJoin(a, ","), "] and [", absl::StrJoin(b, ","),
                                  "] do not broadcast"));
    }
  }
  return out;
}

absl::StatusOr<TypeId> Binary(const OpCall& c, std::optional<DType> result_dtype) {
  // A number literal takes the other operand's type.
  if (c.arg_is_number(0) && c.arg_is_number(1)) return kNoType;
  if (c.arg_is_number(0) || c.arg_is_number(1)) {
    size_t other = c.arg_is_number(0) ? 1 : 0;
    VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, other));
    if (!t) return kNoType;
    if (!result_dtype) return *t;
    return c.types().Tensor(*result_dtype, c.types().dims(*t));
  }
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> a, TensorArg(c, 0));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> b, TensorArg(c, 1));
  if (!a || !b) return kNoType;
  const TypeTable& t = c.types();
  if (*a == *b && !result_dtype) return *a;  // hash-consed: same type, nothing to broadcast
  if (t.node(*a).dtype != t.node(*b).dtype)
    return c.Error(absl::StrCat("operand types ", t.ToString(*a), " and ", t.ToString(*b), " differ in dtype"));
  VDEV_ASSIGN_OR_RETURN(Dims dims, Broadcast(c, t.dims(*a), t.dims(*b)));
  return c.types().Tensor(result_dtype ? *result_dtype : t.node(*a).dtype, dims);
}

absl::StatusOr<TypeId> Cast(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> name, c.TextAttr("dtype"));
  std::optional<DType> dtype = DTypeFromName(*name);
  if (!dtype) return c.Error(absl::StrCat("unknown dtype '", *name, "'"), c.attr("dtype")->loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  return c.types().Tensor(*dtype, c.types().dims(*t));
}

absl::StatusOr<TypeId> Matmul(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> a, TensorArg(c, 0));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> b, TensorArg(c, 1));
  if (!a || !b) return kNoType;
  const TypeTable& t = c.types();
  absl::Span<const int64_t> x = t.dims(*a), y = t.dims(*b);
  if (t.node(*a).dtype != t.node(*b).dtype)
    return c.Error(absl::StrCat("operand types ", t.ToString(*a), " and ", t.ToString(*b), " differ in dtype"));
  if (x.size() < 2 || y.size() < 2) return c.Error("operands must have rank >= 2");
  int64_t k1 = x[x.size() - 1], k2 = y[y.size() - 2];
  if (k1 != k2 && k1 != kDynamicDim && k2 != kDynamicDim)
    return c.Error(absl::StrCat("inner dimensions ", k1, " and ", k2, " differ"));
  VDEV_ASSIGN_OR_RETURN(Dims batch, Broadcast(c, x.subspan(0, x.size() - 2), y.subspan(0, y.size() - 2)));
  batch.push_back(x[x.size() - 2]);
  batch.push_back(y[y.size() - 1]);
  return c.types().Tensor(t.node(*a).dtype, batch);
}

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
    return c.Error(absl::StrCat("cannot reshape ", c.types().ToString(*t), " (", known, " elements) to ",
                                product, " elements"));
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
        return c.Error(absl::StrCat("cannot concatenate ", types.ToString(parts[0]), " and ",
                                    types.ToString(parts[i]), " along axis ", axis));
      }
    }
  }
  return types.Tensor(dtype, dims);
}

// sum/mean/max/min/prod(%x, axis=a | [a, …], keepdims=false); no axis reduces all.
absl::StatusOr<TypeId> Reduce(const OpCall& c, std::optional<DType> result_dtype) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, c.IntsAttr("axis"));
  VDEV_ASSIGN_OR_RETURN(std::optional<bool> keepdims, c.BoolAttr("keepdims"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  absl::Span<const int64_t> in = c.types().dims(*t);
  std::vector<bool> reduced(in.size(), !axes.has_value());
  if (axes) {
    for (int64_t a : *axes) {
      VDEV_ASSIGN_OR_RETURN(int64_t axis, Axis(c, a, in.size()));
      reduced[axis] = true;
    }
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) out.push_back(in[i]);
    else if (keepdims.value_or(false)) out.push_back(1);
  }
  return c.types().Tensor(result_dtype ? *result_dtype : c.types().node(*t).dtype, out);
}

// nn.conv2d(%data NCHW, %weight OIHW, strides, padding [p] | [h, w] | [t, l, b, r], dilation, groups).
absl::StatusOr<TypeId> Conv2d(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> strides, c.IntsAttr("strides"));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> padding, c.IntsAttr("padding"));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dilation, c.IntsAttr("dilation"));
  VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> groups, c.IntAttr("groups"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> data, TensorArg(c, 0));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> weight, TensorArg(c, 1));
  if (!data || !weight) return kNoType;
  const TypeTable& t = c.types();
  absl::Span<const int64_t> x = t.dims(*data), w = t.dims(*weight);
  if (x.size() != 4 || w.size() != 4) return c.Error("data (NCHW) and weight (OIHW) must have rank 4");
  auto pair = [&](const std::optional<std::vector<int64_t>>& v, int64_t dflt, const char* what) -> absl::StatusOr<Dims> {
    if (!v) return Dims{dflt, dflt};
    if (v->size() == 1) return Dims{(*v)[0], (*v)[0]};
    if (v->size() == 2) return *v;
    return c.Error(absl::StrCat(what, " must have 1 or 2 entries"));
  };
  VDEV_ASSIGN_OR_RETURN(Dims s, pair(strides, 1, "strides"));
  VDEV_ASSIGN_OR_RETURN(Dims d, pair(dilation, 1, "dilation"));
  // Padding, dilation and kernel sizes are user numbers: every sum and product is checked.
  int64_t pad_h = 0, pad_w = 0;  // total padding per spatial axis
  if (padding) {
    const std::vector<int64_t>& p = *padding;
    bool wrapped = false;
    if (std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; })) return c.Error("padding must not be negative");
    if (p.size() == 1) wrapped = __builtin_add_overflow(p[0], p[0], &pad_h), pad_w = pad_h;
    else if (p.size() == 2) wrapped = __builtin_add_overflow(p[0], p[0], &pad_h) || __builtin_add_overflow(p[1], p[1], &pad_w);
    else if (p.size() == 4) wrapped = __builtin_add_overflow(p[0], p[2], &pad_h) || __builtin_add_overflow(p[1], p[3], &pad_w);
    else return c.Error("padding must have 1, 2 or 4 entries");
    if (wrapped) return c.Error("padding is larger than 2^63-1");
  }
  int64_t g = groups.value_or(1);
  if (g <= 0 || s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0)
    return c.Error("groups, strides and dilation must be positive");
  int64_t channels = 0;
  if (w[1] != kDynamicDim && __builtin_mul_overflow(w[1], g, &channels)) return c.Error("weight channels times groups overflow");
  if (x[1] != kDynamicDim && w[1] != kDynamicDim && x[1] != channels)
    return c.Error(absl::StrCat("data has ", x[1], " channels but weight expects ", channels));
  // nullopt when a step overflows int64_t.
  auto spatial = [](int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil) -> std::optional<int64_t> {
    if (in == kDynamicDim || k == kDynamicDim) return kDynamicDim;
    int64_t span = 0, padded = 0;
    if (__builtin_mul_overflow(dil, k - 1, &span) || __builtin_add_overflow(span, 1, &span) ||
        __builtin_add_overflow(in, pad, &padded)) {
      return std::nullopt;
    }
    return padded < span ? 0 : (padded - span) / stride + 1;
  };
  std::optional<int64_t> h = spatial(x[2], w[2], pad_h, s[0], d[0]);
  std::optional<int64_t> wd = spatial(x[3], w[3], pad_w, s[1], d[1]);
  if (!h || !wd) return c.Error("the output size overflows int64 (padding, dilation or kernel too large)");
  Dims out{x[0], w[0], *h, *wd};
  return c.types().Tensor(t.node(*data).dtype, out);
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

// softmax / nn.softmax(x, axis=-1): x's type; the axis must exist.
absl::StatusOr<TypeId> Softmax(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> axis, c.IntAttr("axis"));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  const size_t rank = c.types().dims(*t).size();
  if (rank == 0) return c.Error("needs a tensor of rank >= 1");
  VDEV_RETURN_IF_ERROR(Axis(c, axis.value_or(-1), rank).status());
  return *t;
}

// gelu(x, approximate="none"|"tanh"): x's type.
absl::StatusOr<TypeId> Gelu(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> approximate, c.TextAttr("approximate"));
  if (approximate && *approximate != "none" && *approximate != "tanh")
    return c.Error(absl::StrCat("approximate must be \"none\" or \"tanh\", not \"", *approximate, "\""),
                   c.attr("approximate")->loc);
  return Unary(c);
}

// layer_norm(x, gamma, beta, epsilon=1e-5) and rms_norm(x, gamma, epsilon=1e-6) over the last axis:
// x's type; gamma and beta are [F] of x's dtype, F the last axis.
absl::StatusOr<TypeId> Norm(const OpCall& c) {
  const Operand* epsilon = c.attr("epsilon");
  if (epsilon != nullptr && epsilon->kind != OperandKind::kNumber)
    return c.Error("attribute 'epsilon' must be a number", epsilon->loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> x, TensorArg(c, 0));
  if (!x) return kNoType;
  const TypeTable& t = c.types();
  absl::Span<const int64_t> dims = t.dims(*x);
  if (dims.empty()) return c.Error("needs a tensor of rank >= 1");
  for (size_t i = 1; i < c.num_args(); ++i) {
    VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> p, TensorArg(c, i));
    if (!p) continue;
    absl::Span<const int64_t> pd = t.dims(*p);
    const bool fits = pd.size() == 1 && (pd[0] == dims.back() || pd[0] == kDynamicDim || dims.back() == kDynamicDim);
    if (!fits || t.node(*p).dtype != t.node(*x).dtype)
      return c.Error(absl::StrCat("operand ", i + 1, " must be ", DTypeName(t.node(*x).dtype), "[", dims.back(),
                                  "] (the last axis of ", t.ToString(*x), "), not ", t.ToString(*p)),
                     c.arg(i).loc);
  }
  return *x;
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

// attention(qkv[T,3,H,D], causal=false) -> [T,H,D].
absl::StatusOr<TypeId> Attention(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<bool> causal, c.BoolAttr("causal"));
  (void)causal;
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  absl::Span<const int64_t> d = c.types().dims(*t);
  if (d.size() != 4 || (d[1] != 3 && d[1] != kDynamicDim))
    return c.Error(absl::StrCat("qkv must have shape [T,3,H,D], not ", c.types().ToString(*t)), c.arg(0).loc);
  return c.types().Tensor(c.types().node(*t).dtype, {d[0], d[2], d[3]});
}

// silu_mul(x[..., 2F]) -> [..., F].
absl::StatusOr<TypeId> SiluMul(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  Dims d(c.types().dims(*t).begin(), c.types().dims(*t).end());
  if (d.empty() || (d.back() != kDynamicDim && d.back() % 2 != 0))
    return c.Error(absl::StrCat("the last axis must have an even size, not ", c.types().ToString(*t)), c.arg(0).loc);
  if (d.back() != kDynamicDim) d.back() /= 2;
  return c.types().Tensor(c.types().node(*t).dtype, d);
}

absl::StatusOr<TypeId> ShapeOf(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  return c.types().Tensor(DType::kI64, {static_cast<int64_t>(c.types().dims(*t).size())});
}

absl::StatusOr<TypeId> AllocTensor(const OpCall& c) {
  TypeId storage = c.arg_type(0);
  if (storage != kNoType && c.types().kind(storage) != TypeKind::kStorage)
    return c.Error(absl::StrCat("operand 1 must be storage, not ", c.types().ToString(storage)), c.arg(0).loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> dtype_name, c.TextAttr("dtype"));
  if (!dtype_name || c.arg(2).kind != OperandKind::kIntList) return kNoType;
  std::optional<DType> dtype = DTypeFromName(*dtype_name);
  if (!dtype) return c.Error(absl::StrCat("unknown dtype '", *dtype_name, "'"), c.attr("dtype")->loc);
  return c.types().Tensor(*dtype, c.module().Ints(c.arg(2)));
}

absl::StatusOr<TypeId> ReshapeTensor(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t || c.arg(1).kind != OperandKind::kIntList) return kNoType;
  return c.types().Tensor(c.types().node(*t).dtype, c.module().Ints(c.arg(1)));
}

absl::StatusOr<TypeId> Storage(const OpCall& c) { return c.types().Storage(); }

absl::StatusOr<TypeId> CheckDeviceAttrs(const OpCall& c, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const Operand* o = c.attr(key);
    if (o != nullptr && o->kind != OperandKind::kDevice)
      return c.Error(absl::StrCat("attribute '", key, "' must be a device literal"), o->loc);
  }
  return kNoType;
}

void Add(OpRegistry& r, OpDef def) {
  // Registering the standard set twice is a programming error of the caller; keep the first.
  (void)r.Register(std::move(def));
}

}  // namespace

absl::StatusOr<TypeId> SameAsFirstArg(const OpCall& call) {
  return call.num_args() == 0 ? kNoType : call.arg_type(0);
}

void OpRegistry::AddBuiltinOps(OpRegistry& r) {
  Add(r, {"on_device", 2, 2, {1}, {}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
            VDEV_ASSIGN_OR_RETURN(std::optional<bool> body, c.BoolAttr("constrain_body"));
            VDEV_ASSIGN_OR_RETURN(std::optional<bool> result, c.BoolAttr("constrain_result"));
            (void)body;
            (void)result;
            return c.arg_type(0);
          }});
  Add(r, {"device_copy", 1, 1, {}, {"src", "dst"}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
            VDEV_ASSIGN_OR_RETURN(TypeId ignored, CheckDeviceAttrs(c, {"src", "dst"}));
            (void)ignored;
            return c.arg_type(0);
          }});
  Add(r, {"vm.shape_of", 1, 1, {}, {}, ShapeOf});
  Add(r, {"memory.alloc_storage", 2, 2, {}, {"device"}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
            VDEV_ASSIGN_OR_RETURN(TypeId ignored, CheckDeviceAttrs(c, {"device"}));
            (void)ignored;
            return Storage(c);
          }});
  Add(r, {"memory.alloc_tensor", 3, 3, {}, {}, AllocTensor});
  Add(r, {"vm.reshape_tensor", 2, 2, {}, {}, ReshapeTensor});
  Add(r, {"allreduce", 1, 1, {}, {}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
            VDEV_ASSIGN_OR_RETURN(std::optional<std::string> op, c.TextAttr("op"));
            if (op && *op != "sum" && *op != "max" && *op != "min" && *op != "prod" && *op != "avg")
              return c.Error(absl::StrCat("unknown reduction '", *op, "' (sum, max, min, prod, avg)"),
                             c.attr("op")->loc);
            return Unary(c);
          }});
}

void OpRegistry::AddStandardOps(OpRegistry& r) {
  for (const char* name : {"negative", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf",
                           "floor", "ceil", "round", "sign", "relu", "nn.relu", "copy", "silu",
                           "logical_not", "zeros_like", "ones_like"}) {
    Add(r, {name, 1, 1, {}, {}, Unary});
  }
  for (const char* name : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod",
                           "logical_and", "logical_or"}) {
    Add(r, {name, 2, 2, {}, {}, [](const OpCall& c) { return Binary(c, std::nullopt); }});
  }
  for (const char* name : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    Add(r, {name, 2, 2, {}, {}, [](const OpCall& c) { return Binary(c, DType::kBool); }});
  }
  Add(r, {"cast", 1, 1, {}, {"dtype"}, Cast});
  Add(r, {"softmax", 1, 1, {}, {}, Softmax});
  Add(r, {"nn.softmax", 1, 1, {}, {}, Softmax});
  Add(r, {"gelu", 1, 1, {}, {}, Gelu});
  Add(r, {"layer_norm", 3, 3, {}, {}, Norm});
  Add(r, {"rms_norm", 2, 2, {}, {}, Norm});
  Add(r, {"transpose", 1, 1, {}, {}, Transpose});
  Add(r, {"take", 2, 2, {}, {}, Take});
  Add(r, {"attention", 1, 1, {}, {}, Attention});
  Add(r, {"silu_mul", 1, 1, {}, {}, SiluMul});
  Add(r, {"matmul", 2, 2, {}, {}, Matmul});
  Add(r, {"reshape", 1, 2, {}, {}, Reshape});
  Add(r, {"split", 1, 1, {}, {"indices_or_sections"}, Split});
  Add(r, {"concat", 1, -1, {}, {}, Concat});
  Add(r, {"concatenate", 1, -1, {}, {}, Concat});
  for (const char* name : {"sum", "mean", "max", "min", "prod"}) {
    Add(r, {name, 1, 1, {}, {}, [](const OpCall& c) { return Reduce(c, std::nullopt); }});
  }
  for (const char* name : {"argmax", "argmin"}) {
    Add(r, {name, 1, 1, {}, {}, [](const OpCall& c) { return Reduce(c, DType::kI64); }});
  }
  Add(r, {"nn.conv2d", 2, 2, {}, {}, Conv2d});
  Add(r, {"layout_transform", 1, 1, {}, {"src_layout", "dst_layout"}, LayoutTransform});
}

}  // namespace vdev::ir
