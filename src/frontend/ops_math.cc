// ONNX ops that compute: element-wise unary and binary (NumPy broadcasting), comparisons, Where,
// Cast, MatMul, Gemm, Softmax, LogSoftmax, Gelu, LayerNormalization and the reductions. Integer
// shape arithmetic on values known at import is folded.
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "internal/fold.h"
#include "vdev/support/status_macros.h"

namespace vdev::frontend::internal {
namespace {

using ir::Arg;

// A float literal as the IR text spells it.
Arg Number(double v) { return Arg::Number(absl::StrFormat("%.9g", v)); }

absl::Status EmitAndSet(NodeCtx& c, std::string op, std::vector<OpArg> args, std::vector<ir::NamedArg> attrs = {}) {
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit(std::move(op), std::move(args), std::move(attrs)));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

struct BinarySpec {
  const char* vdev_op;
  bool comparison;
  ElementwiseFn fold;
};

const absl::flat_hash_map<std::string, BinarySpec>& BinarySpecs() {
  using S = absl::Span<const double>;
  using I = absl::Span<const int64_t>;
  static const auto* specs = new absl::flat_hash_map<std::string, BinarySpec>{
      {"Add", {"add", false, {[](S v) { return v[0] + v[1]; }, [](I v) { return v[0] + v[1]; }}}},
      {"Sub", {"subtract", false, {[](S v) { return v[0] - v[1]; }, [](I v) { return v[0] - v[1]; }}}},
      {"Mul", {"multiply", false, {[](S v) { return v[0] * v[1]; }, [](I v) { return v[0] * v[1]; }}}},
      {"Div", {"divide", false, {[](S v) { return v[0] / v[1]; }, [](I v) { return v[1] == 0 ? 0 : v[0] / v[1]; }}}},
      {"Pow", {"power", false, {[](S v) { return std::pow(v[0], v[1]); }, {}}}},
      {"Max",
       {"maximum", false, {[](S v) { return std::fmax(v[0], v[1]); }, [](I v) { return std::max(v[0], v[1]); }}}},
      {"Min",
       {"minimum", false, {[](S v) { return std::fmin(v[0], v[1]); }, [](I v) { return std::min(v[0], v[1]); }}}},
      {"Equal", {"equal", true, {[](S v) { return double(v[0] == v[1]); }, [](I v) { return int64_t(v[0] == v[1]); }}}},
      {"Less", {"less", true, {[](S v) { return double(v[0] < v[1]); }, [](I v) { return int64_t(v[0] < v[1]); }}}},
      {"LessOrEqual",
       {"less_equal", true, {[](S v) { return double(v[0] <= v[1]); }, [](I v) { return int64_t(v[0] <= v[1]); }}}},
      {"Greater",
       {"greater", true, {[](S v) { return double(v[0] > v[1]); }, [](I v) { return int64_t(v[0] > v[1]); }}}},
      {"GreaterOrEqual",
       {"greater_equal", true, {[](S v) { return double(v[0] >= v[1]); }, [](I v) { return int64_t(v[0] >= v[1]); }}}},
  };
  return *specs;
}

bool IsFloat(ir::DType d) {
  return d == ir::DType::kF64 || d == ir::DType::kF32 || d == ir::DType::kF16 || d == ir::DType::kBF16;
}

// Pow whose exponent has another type than the base; the result has the base's type. An integer
// base with a float exponent computes in f64 (exact for integers below 2^53) and truncates back, as
// ONNX's reference does; otherwise the exponent is converted to the base's type.
absl::Status MixedPow(NodeCtx& c, int base, int exponent) {
  const ir::DType dtype = c.Info(base).dtype;
  auto cast = [&](int v, ir::DType to) { return c.Emit("cast", {v}, {{"dtype", Arg::Ident(ir::DTypeName(to))}}); };
  if (IsFloat(dtype) || !IsFloat(c.Info(exponent).dtype)) {
    VDEV_ASSIGN_OR_RETURN(exponent, cast(exponent, dtype));
    return EmitAndSet(c, "power", {base, exponent});
  }
  VDEV_ASSIGN_OR_RETURN(int wide_base, cast(base, ir::DType::kF64));
  VDEV_ASSIGN_OR_RETURN(int wide_exponent, cast(exponent, ir::DType::kF64));
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("power", {wide_base, wide_exponent}));
  VDEV_ASSIGN_OR_RETURN(y, cast(y, dtype));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

// Add, Sub, …, Equal, Less, Greater; Max and Min with two operands.
absl::Status Binary(NodeCtx& c) {
  const BinarySpec& spec = BinarySpecs().at(c.node().op_type());
  if (c.num_inputs() != 2) return c.Unsupported(absl::StrCat(c.num_inputs(), " operands"));
  VDEV_ASSIGN_OR_RETURN(int a, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int b, c.Input(1));
  const ir::DType dtype = c.Info(a).dtype;
  if (c.AllInputsConstant()) {
    const HostTensor* in[] = {c.ConstantOf(a), c.ConstantOf(b)};
    std::optional<HostTensor> out = FoldElementwise(in, spec.comparison ? ir::DType::kBool : dtype, spec.fold);
    if (!out) return c.Error("the operands' shapes do not broadcast");
    c.SetOutput(0, c.Constant(*std::move(out)));
    return absl::OkStatus();
  }
  if (c.node().op_type() == "Pow" && c.Info(b).dtype != dtype) return MixedPow(c, a, b);
  return EmitAndSet(c, spec.vdev_op, {a, b});
}

absl::Status Unary(NodeCtx& c) {
  static const auto* ops = new absl::flat_hash_map<std::string, std::string>{
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"}, {"Log", "log"},
      {"Sqrt", "sqrt"}, {"Neg", "negative"},    {"Erf", "erf"},   {"Abs", "abs"}, {"Reciprocal", "reciprocal"}};
  static const auto* folds =
      new absl::flat_hash_map<std::string, double (*)(double)>{{"Neg", [](double v) { return -v; }},
                                                               {"Abs", [](double v) { return std::fabs(v); }},
                                                               {"Sqrt", [](double v) { return std::sqrt(v); }},
                                                               {"Exp", [](double v) { return std::exp(v); }},
                                                               {"Log", [](double v) { return std::log(v); }},
                                                               {"Reciprocal", [](double v) { return 1 / v; }}};
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  auto fold = folds->find(c.node().op_type());
  if (c.IsConstant(x) && fold != folds->end()) {
    const HostTensor* in[] = {c.ConstantOf(x)};
    double (*fn)(double) = fold->second;
    ElementwiseFn f{[fn](absl::Span<const double> v) { return fn(v[0]); }, {}};
    if (c.node().op_type() == "Neg" || c.node().op_type() == "Abs") {
      f.integer = [fn](absl::Span<const int64_t> v) {
        return v[0] < 0 && fn(-1) > 0 ? -v[0] : fn(1) < 0 ? -v[0] : v[0];
      };
    }
    c.SetOutput(0, c.Constant(*FoldElementwise(in, c.Info(x).dtype, f)));
    return absl::OkStatus();
  }
  return EmitAndSet(c, ops->at(c.node().op_type()), {x});
}

absl::Status Where(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int cond, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(1));
  VDEV_ASSIGN_OR_RETURN(int y, c.Input(2));
  if (c.AllInputsConstant()) {
    const HostTensor* in[] = {c.ConstantOf(cond), c.ConstantOf(x), c.ConstantOf(y)};
    std::optional<HostTensor> out =
        FoldElementwise(in, c.Info(x).dtype,
                        {[](absl::Span<const double> v) { return v[0] != 0 ? v[1] : v[2]; },
                         [](absl::Span<const int64_t> v) { return v[0] != 0 ? v[1] : v[2]; }});
    if (!out) return c.Error("the operands' shapes do not broadcast");
    c.SetOutput(0, c.Constant(*std::move(out)));
    return absl::OkStatus();
  }
  return EmitAndSet(c, "where", {cond, x, y});
}

absl::Status Cast(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  std::optional<ir::DType> to = DTypeFromOnnx(static_cast<int32_t>(c.IntAttr("to", 0)));
  if (!to) return c.Unsupported("a target type vdev lacks");
  if (const HostTensor* t = c.ConstantOf(x)) {
    c.SetOutput(0, c.Constant(Convert(*t, *to)));
    return absl::OkStatus();
  }
  if (*to == c.Info(x).dtype) {
    c.SetOutput(0, x);
    return absl::OkStatus();
  }
  return EmitAndSet(c, "cast", {x}, {{"dtype", Arg::Ident(ir::DTypeName(*to))}});
}

absl::Status MatMul(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int a, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int b, c.Input(1));
  const Dims da = c.Info(a).dims, db = c.Info(b).dims;
  if (da.empty() || db.empty()) return c.Error("operands must have rank >= 1");
  // NumPy's vector cases: a [K] is [1,K], b [K] is [K,1], and the added axis is dropped after.
  if (da.size() == 1) {
    VDEV_ASSIGN_OR_RETURN(a, c.Emit("reshape", {a}, {{"newshape", Arg::IntList({1, da[0]})}}));
  }
  if (db.size() == 1) {
    VDEV_ASSIGN_OR_RETURN(b, c.Emit("reshape", {b}, {{"newshape", Arg::IntList({db[0], 1})}}));
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("matmul", {a, b}));
  if (da.size() == 1 || db.size() == 1) {
    Dims out = c.Info(y).dims;
    if (db.size() == 1) out.pop_back();
    if (da.size() == 1) out.erase(out.end() - (db.size() == 1 ? 1 : 2));
    VDEV_ASSIGN_OR_RETURN(y, c.Emit("reshape", {y}, {{"newshape", Arg::IntList(out)}}));
  }
  c.SetOutput(0, y);
  return absl::OkStatus();
}

// Gemm: alpha * op(A) op(B) + beta * C.
absl::Status Gemm(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int a, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int b, c.Input(1));
  if (c.IntAttr("transA", 0) != 0) {
    VDEV_ASSIGN_OR_RETURN(a, c.Emit("transpose", {a}, {{"axes", Arg::IntList({1, 0})}}));
  }
  if (c.IntAttr("transB", 0) != 0) {
    VDEV_ASSIGN_OR_RETURN(b, c.Emit("transpose", {b}, {{"axes", Arg::IntList({1, 0})}}));
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("matmul", {a, b}));
  const float alpha = c.FloatAttr("alpha", 1.0f), beta = c.FloatAttr("beta", 1.0f);
  if (alpha != 1.0f) {
    VDEV_ASSIGN_OR_RETURN(y, c.Emit("multiply", {y, Number(alpha)}));
  }
  if (c.has_input(2) && beta != 0.0f) {
    VDEV_ASSIGN_OR_RETURN(int bias, c.Input(2));
    if (beta != 1.0f) {
      VDEV_ASSIGN_OR_RETURN(bias, c.Emit("multiply", {bias, Number(beta)}));
    }
    VDEV_ASSIGN_OR_RETURN(y, c.Emit("add", {y, bias}));
  }
  c.SetOutput(0, y);
  return absl::OkStatus();
}

// Softmax and LogSoftmax: one axis since opset 13; before, the input is seen as 2-d around `axis`.
absl::Status Softmax(NodeCtx& c) {
  const std::string op = c.node().op_type() == "Softmax" ? "softmax" : "log_softmax";
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims in = c.Info(x).dims;
  int64_t axis = c.IntAttr("axis", c.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis >= static_cast<int64_t>(std::max<size_t>(in.size(), 1))) return c.Error("axis is out of range");
  if (c.opset() >= 13 || axis == static_cast<int64_t>(in.size()) - 1)
    return EmitAndSet(c, op, {x}, {{"axis", Arg::Int(axis)}});
  const int64_t outer = NumElements(Dims(in.begin(), in.begin() + axis));
  VDEV_ASSIGN_OR_RETURN(int flat,
                        c.Emit("reshape", {x}, {{"newshape", Arg::IntList({outer, NumElements(in) / outer})}}));
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit(op, {flat}, {{"axis", Arg::Int(1)}}));
  return EmitAndSet(c, "reshape", {y}, {{"newshape", Arg::IntList(in)}});
}

absl::Status Gelu(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  return EmitAndSet(c, "gelu", {x}, {{"approximate", Arg::String(c.StringAttr("approximate", "none"))}});
}

// LayerNormalization: layer_norm when it normalises the last axis alone with [F] scale and bias;
// otherwise mean/variance with reductions over axes [axis, rank), which also gives the optional
// Mean and InvStdDev outputs.
absl::Status LayerNormalization(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int scale, c.Input(1));
  const Dims in = c.Info(x).dims;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = c.IntAttr("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return c.Error("axis is out of range");
  const float eps = c.FloatAttr("epsilon", 1e-5f);
  const bool simple = axis == rank - 1 && c.has_input(2) && !c.has_output(1) && !c.has_output(2) &&
                      c.Info(scale).dims == Dims{in.back()} && c.Info(c.Input(2).value()).dims == Dims{in.back()};
  if (simple) return EmitAndSet(c, "layer_norm", {x, scale, c.Input(2).value()}, {{"epsilon", Number(eps)}});
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  std::vector<ir::NamedArg> reduce = {{"axis", Arg::IntList(axes)}, {"keepdims", Arg::Bool(true)}};
  VDEV_ASSIGN_OR_RETURN(int mean, c.Emit("mean", {x}, reduce));
  VDEV_ASSIGN_OR_RETURN(int d, c.Emit("subtract", {x, mean}));
  VDEV_ASSIGN_OR_RETURN(int d2, c.Emit("multiply", {d, d}));
  VDEV_ASSIGN_OR_RETURN(int var, c.Emit("mean", {d2}, reduce));
  VDEV_ASSIGN_OR_RETURN(int var_eps, c.Emit("add", {var, Number(eps)}));
  VDEV_ASSIGN_OR_RETURN(int inv, c.Emit("rsqrt", {var_eps}));
  VDEV_ASSIGN_OR_RETURN(int normed, c.Emit("multiply", {d, inv}));
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("multiply", {normed, scale}));
  if (c.has_input(2)) {
    VDEV_ASSIGN_OR_RETURN(y, c.Emit("add", {y, c.Input(2).value()}));
  }
  c.SetOutput(0, y);
  c.SetOutput(1, mean);
  c.SetOutput(2, inv);
  return absl::OkStatus();
}

// ReduceSum/Mean/Max/Min/Prod: axes an attribute, or (ReduceSum since opset 13) an input.
absl::Status Reduce(NodeCtx& c) {
  static const auto* ops = new absl::flat_hash_map<std::string, std::string>{
      {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}, {"ReduceMin", "min"}, {"ReduceProd", "prod"}};
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  std::vector<int64_t> axes = c.IntsAttr("axes").value_or(std::vector<int64_t>{});
  if (c.has_input(1)) {
    VDEV_ASSIGN_OR_RETURN(axes, c.IntsInput(1));
  }
  if (axes.empty() && c.IntAttr("noop_with_empty_axes", 0) != 0) {
    c.SetOutput(0, x);
    return absl::OkStatus();
  }
  std::vector<ir::NamedArg> attrs = {{"keepdims", Arg::Bool(c.IntAttr("keepdims", 1) != 0)}};
  if (!axes.empty()) attrs.push_back({"axis", Arg::IntList(axes)});
  return EmitAndSet(c, ops->at(c.node().op_type()), {x}, std::move(attrs));
}

}  // namespace

void AddMathHandlers(absl::flat_hash_map<std::string, Handler>& t) {
  for (const auto& [name, spec] : BinarySpecs()) t[name] = Binary;
  for (const char* name : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Erf", "Abs", "Reciprocal"})
    t[name] = Unary;
  for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"}) t[name] = Reduce;
  t["Where"] = Where;
  t["Cast"] = Cast;
  t["MatMul"] = MatMul;
  t["Gemm"] = Gemm;
  t["Softmax"] = Softmax;
  t["LogSoftmax"] = Softmax;
  t["Gelu"] = Gelu;
  t["LayerNormalization"] = LayerNormalization;
}

Handler FindHandler(absl::string_view op_type) {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<std::string, Handler>();
    AddMathHandlers(*t);
    AddShapeHandlers(*t);
    return t;
  }();
  auto it = table->find(op_type);
  return it == table->end() ? nullptr : it->second;
}

}  // namespace vdev::frontend::internal
