// The operand helpers every type rule uses, and the element-wise, reduction, matmul and nn ops
// with their type rules (internal/type_rules.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "internal/type_rules.h"
#include "vdev/support/status_macros.h"

namespace vdev::ir::internal {

bool IsTensor(const TypeTable& t, TypeId id) { return id != kNoType && t.kind(id) == TypeKind::kTensor; }

absl::StatusOr<std::optional<TypeId>> TensorArg(const OpCall& c, size_t i) {
  TypeId t = c.arg_type(i);
  if (t == kNoType) return std::optional<TypeId>();
  if (!IsTensor(c.types(), t))
    return c.Error(absl::StrCat("operand ", i + 1, " must be a tensor, not ", c.types().ToString(t)), c.arg(i).loc);
  return std::optional<TypeId>(t);
}

absl::StatusOr<int64_t> Axis(const OpCall& c, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return c.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + r : axis;
}

void AddOp(OpRegistry& r, OpDef def) {
  // Registering the standard set twice is a programming error of the caller; keep the first.
  (void)r.Register(std::move(def));
}

absl::StatusOr<TypeId> Unary(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  return t ? *t : kNoType;
}

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
      return c.Error(
          absl::StrCat("shapes [", absl::StrJoin(a, ","), "] and [", absl::StrJoin(b, ","), "] do not broadcast"));
    }
  }
  return out;
}

namespace {

// `result_dtype`: the result's dtype when it is not the operands' (comparisons).
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

// sum/mean/max/min/prod(%x, axis=a | [a, …], keepdims=false); no axis reduces all. `result_dtype`:
// argmax/argmin give i64.
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
  auto pair = [&](const std::optional<std::vector<int64_t>>& v, int64_t dflt,
                  const char* what) -> absl::StatusOr<Dims> {
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
    if (std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; }))
      return c.Error("padding must not be negative");
    if (p.size() == 1) wrapped = __builtin_add_overflow(p[0], p[0], &pad_h), pad_w = pad_h;
    else if (p.size() == 2)
      wrapped = __builtin_add_overflow(p[0], p[0], &pad_h) || __builtin_add_overflow(p[1], p[1], &pad_w);
    else if (p.size() == 4)
      wrapped = __builtin_add_overflow(p[0], p[2], &pad_h) || __builtin_add_overflow(p[1], p[3], &pad_w);
    else return c.Error("padding must have 1, 2 or 4 entries");
    if (wrapped) return c.Error("padding is larger than 2^63-1");
  }
  int64_t g = groups.value_or(1);
  if (g <= 0 || s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0)
    return c.Error("groups, strides and dilation must be positive");
  int64_t channels = 0;
  if (w[1] != kDynamicDim && __builtin_mul_overflow(w[1], g, &channels))
    return c.Error("weight channels times groups overflow");
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

// vdev.allreduce_add_rms_norm(x, residual, gamma, op=sum, epsilon=1e-6) -> (h, n), written by the
// all-reduce fusion (vdev/memory/fuse_allreduce.h): h = residual + allreduce(x), n = rms_norm(h, gamma).
// x has residual's dtype and element count (it may be a flat view of it); both results have
// residual's type.
absl::StatusOr<TypeId> AllReduceAddRmsNorm(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> op, c.TextAttr("op"));
  if (op && *op != "sum") return c.Error("the fused all-reduce only sums", c.attr("op")->loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> x, TensorArg(c, 0));
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> residual, TensorArg(c, 1));
  if (!x || !residual) return kNoType;
  const TypeTable& t = c.types();
  auto elements = [&](TypeId id) -> std::optional<int64_t> {
    int64_t n = 1;
    for (int64_t d : t.dims(id)) {
      if (d == kDynamicDim) return std::nullopt;
      n *= d;
    }
    return n;
  };
  if (t.node(*x).dtype != t.node(*residual).dtype || elements(*x) != elements(*residual))
    return c.Error(absl::StrCat("operand 1 (", t.ToString(*x),
                                ") must have the dtype and element count of the residual ", t.ToString(*residual)),
                   c.arg(0).loc);
  const Operand* epsilon = c.attr("epsilon");
  if (epsilon != nullptr && epsilon->kind != OperandKind::kNumber)
    return c.Error("attribute 'epsilon' must be a number", epsilon->loc);
  absl::Span<const int64_t> dims = t.dims(*residual);
  if (dims.empty()) return c.Error("the residual needs rank >= 1", c.arg(1).loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> gamma, TensorArg(c, 2));
  if (gamma) {
    absl::Span<const int64_t> gd = t.dims(*gamma);
    if (gd.size() != 1 || gd[0] != dims.back() || t.node(*gamma).dtype != t.node(*residual).dtype)
      return c.Error(absl::StrCat("operand 3 must be ", DTypeName(t.node(*residual).dtype), "[", dims.back(), "], not ",
                                  t.ToString(*gamma)),
                     c.arg(2).loc);
  }
  const TypeId fields[] = {*residual, *residual};
  return c.types().Tuple(fields);
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

}  // namespace

void AddElementwiseAndNnOps(OpRegistry& r) {
  for (const char* name :
       {"negative", "abs",   "exp",  "log",  "sqrt",    "rsqrt", "sigmoid", "tanh",        "erf",        "floor",
        "ceil",     "round", "sign", "relu", "nn.relu", "copy",  "silu",    "logical_not", "zeros_like", "ones_like"}) {
    AddOp(r, {name, 1, 1, {}, {}, Unary});
  }
  for (const char* name :
       {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod", "logical_and", "logical_or"}) {
    AddOp(r, {name, 2, 2, {}, {}, [](const OpCall& c) { return Binary(c, std::nullopt); }});
  }
  for (const char* name : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    AddOp(r, {name, 2, 2, {}, {}, [](const OpCall& c) { return Binary(c, DType::kBool); }});
  }
  AddOp(r, {"cast", 1, 1, {}, {"dtype"}, Cast});
  AddOp(r, {"softmax", 1, 1, {}, {}, Softmax});
  AddOp(r, {"nn.softmax", 1, 1, {}, {}, Softmax});
  AddOp(r, {"log_softmax", 1, 1, {}, {}, Softmax});
  AddOp(r, {"gelu", 1, 1, {}, {}, Gelu});
  AddOp(r, {"layer_norm", 3, 3, {}, {}, Norm});
  AddOp(r, {"rms_norm", 2, 2, {}, {}, Norm});
  AddOp(r, {"vdev.allreduce_add_rms_norm", 3, 3, {}, {}, AllReduceAddRmsNorm});
  AddOp(r, {"attention", 1, 1, {}, {}, Attention});
  AddOp(r, {"silu_mul", 1, 1, {}, {}, SiluMul});
  AddOp(r, {"matmul", 2, 2, {}, {}, Matmul});
  for (const char* name : {"sum", "mean", "max", "min", "prod"}) {
    AddOp(r, {name, 1, 1, {}, {}, [](const OpCall& c) { return Reduce(c, std::nullopt); }});
  }
  for (const char* name : {"argmax", "argmin"}) {
    AddOp(r, {name, 1, 1, {}, {}, [](const OpCall& c) { return Reduce(c, DType::kI64); }});
  }
  AddOp(r, {"nn.conv2d", 2, 2, {}, {}, Conv2d});
}

}  // namespace vdev::ir::internal
