// VerifyModule: structure, scoping, built-in arities, and type inference with consistency checks.
// One walk in program order (WalkModule, no recursion); a binding's type is inferred when all of
// its nested blocks are done.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "internal/lexer.h"
#include "internal/scope.h"
#include "internal/type_sizes.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_text.h"
#include "vdev/ir/op_registry.h"

namespace vdev::ir {
namespace {

class Verifier : public Visitor {
 public:
  Verifier(Module& m, const OpRegistry& registry) : m_(m), registry_(registry) {}

  bool Run();
  Diagnostic error;

  void EnterFunction(FuncId f) override;
  void ExitFunction(FuncId f) override;
  void EnterBlock(BlockId b) override;
  void ExitBlock(BlockId b) override;
  void Binding(BindingId b) override;
  void BindingDone(BindingId b) override;
  bool Done() const override { return failed_; }

 private:
  void Fail(SourceLoc loc, std::string message) {
    if (failed_) return;
    failed_ = true;
    error.loc = loc;
    error.message = std::move(message);
  }
  // "%x in @main" for messages that may have no location (built modules).
  std::string Where(BindingId b) const {
    return absl::StrCat("'%", m_.Name(m_.bindings[b].name), "' in ", FuncName(m_.bindings[b].block));
  }
  std::string FuncName(BlockId block) const {
    FuncId f = m_.blocks[block].func;
    while (f != kNoFunc && m_.functions[f].kind == FuncKind::kLocal) f = m_.functions[f].parent;
    return f == kNoFunc ? std::string("?") : absl::StrCat("@", m_.Name(m_.functions[f].name));
  }
  std::string TypeText(TypeId t) const { return m_.types.ToString(t); }
  // Fails at `loc` when a value of type `t` would take 2^63 bytes or more. `what()` names the value,
  // called only then: every binding is checked, and building its name each time was 2% of the
  // instructions of `vdev plan`.
  template <typename What>
  void CheckSize(TypeId t, SourceLoc loc, What&& what) {
    if (sizes_.Bytes(m_.types, t) < 0)
      Fail(loc, absl::StrCat(what(), " has type ", TypeText(t), ", which is larger than 2^63-1 bytes"));
  }
  // Whether symbol `s` can be printed where a token of `kind` is expected (modules built in C++
  // may hold any string; the printed text must parse back to the same module). Cached per symbol.
  bool Spelled(Symbol s, internal::Tok kind);
  void CheckSpelling(Symbol s, internal::Tok kind, SourceLoc loc, absl::string_view what);
  void CheckOperand(const Operand& o, bool device_ok);
  void CheckAttrValue(const Operand& o);
  TypeId OperandType(const Operand& o);
  TypeId FunctionType(FuncId f);
  const OpDef* Lookup(Symbol op);
  void CheckOpCall(BindingId b, const Expr& e);
  TypeId InferOpCall(BindingId id, const Expr& e);
  TypeId InferCall(const Expr& e, absl::Span<const TypeId> params, TypeId result, absl::Span<const Operand> args,
                   const std::string& callee);
  // The type of binding `id`'s expression (kNoType where an operand's is not known); Fails on a type error.
  TypeId InferExpr(BindingId id, const Expr& e);
  TypeId InferCallExpr(const Expr& e, absl::Span<const Operand> args);  // @f(...) or %f(...)

  Module& m_;
  const OpRegistry& registry_;
  bool failed_ = false;
  internal::Scopes scopes_;
  std::vector<size_t> block_marks_;
  std::vector<TypeId> block_types_;     // a block's returned type
  std::vector<uint8_t> func_state_;     // 0 not seen, 1 open, 2 done
  std::vector<const OpDef*> op_cache_;  // by symbol
  std::vector<uint8_t> op_cached_;
  std::vector<TypeId> scratch_types_;
  std::vector<TypeId> op_arg_types_;  // InferOpCall's, reused (type rules do not re-enter)
  std::vector<uint8_t> spelled_;      // by symbol: bit 2k = checked for kind k, bit 2k+1 = ok
  internal::TypeSizes sizes_;
};

// Bits of Verifier::spelled_ per token kind.
int SpellingBit(internal::Tok kind) {
  switch (kind) {
    case internal::Tok::kIdent: return 0;
    case internal::Tok::kNumber: return 2;
    case internal::Tok::kString: return 4;
    default: return 6;  // kLocal: a %name or @name without its sigil
  }
}

bool Verifier::Spelled(Symbol s, internal::Tok kind) {
  if (s >= m_.symbols.size()) return false;
  if (s >= spelled_.size()) spelled_.resize(m_.symbols.size(), 0);
  int bit = SpellingBit(kind);
  if (spelled_[s] & (1 << bit)) return spelled_[s] & (2 << bit);
  absl::string_view text = m_.Name(s);
  bool ok;
  if (kind == internal::Tok::kLocal) {
    ok = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
  } else {
    internal::Lexer lexer(text);
    internal::Token t = lexer.Next();
    ok = t.kind == kind && t.offset == 0 && t.end == text.size();
  }
  spelled_[s] |= (1 << bit) | (ok ? 2 << bit : 0);
  return ok;
}

void Verifier::CheckSpelling(Symbol s, internal::Tok kind, SourceLoc loc, absl::string_view what) {
  if (!Spelled(s, kind)) {
    std::string text = s < m_.symbols.size() ? std::string(m_.Name(s)) : "?";
    Fail(loc, absl::StrCat("'", text, "' is not a valid ", what));
  }
}

constexpr const OpDef* kUnknownOp = nullptr;

const OpDef* Verifier::Lookup(Symbol op) {
  if (op >= op_cached_.size()) {
    // Op names are few and usually interned early: sized by the op, not by all symbols (a million
    // binding names would make this an 8 MB table of nulls).
    size_t size = std::min<size_t>(m_.symbols.size(), std::max<size_t>(op + 1, 2 * op_cached_.size()));
    op_cached_.resize(size, 0);
    op_cache_.resize(size, kUnknownOp);
  }
  if (!op_cached_[op]) {
    op_cache_[op] = registry_.Find(m_.Name(op));
    op_cached_[op] = 1;
  }
  return op_cache_[op];
}

bool Verifier::Run() {
  scopes_.Reserve(m_.symbols.size());
  block_types_.assign(m_.blocks.size(), kNoType);
  func_state_.assign(m_.functions.size(), 0);
  for (BindingId b = 0; b < m_.bindings.size(); ++b) m_.bindings[b].type = m_.bindings[b].declared_type;
  for (Function& f : m_.functions) f.type = kNoType;
  for (size_t i = 0; i < m_.items.size() && !failed_; ++i) {
    FuncId f = m_.items[i];
    if (f >= m_.functions.size() || m_.functions[f].kind == FuncKind::kLocal) {
      Fail({}, absl::StrCat("module item ", i, " is not a global function or kernel"));
      break;
    }
    auto it = m_.globals.find(m_.functions[f].name);
    if (it == m_.globals.end() || it->second != f) {
      Fail(m_.functions[f].loc,
           absl::StrCat("global '@", m_.Name(m_.functions[f].name), "' is not registered or is defined twice"));
      break;
    }
    WalkFunction(m_, f, *this);
  }
  return !failed_;
}

void Verifier::EnterFunction(FuncId f) {
  if (failed_) return;
  Function& fn = m_.functions[f];
  func_state_[f] = 1;
  scopes_.OpenFunction(f);
  if (fn.kind != FuncKind::kKernel && fn.body == kNoBlock) {
    Fail(fn.loc, absl::StrCat("function '", m_.Name(fn.name), "' has no body"));
    return;
  }
  if (fn.body != kNoBlock &&
      (fn.body >= m_.blocks.size() || m_.blocks[fn.body].func != f || m_.blocks[fn.body].owner != kNoBinding)) {
    Fail(fn.loc, absl::StrCat("function '", m_.Name(fn.name), "' has a malformed body"));
    return;
  }
  if (fn.kind == FuncKind::kKernel && fn.body != kNoBlock) {
    Fail(fn.loc, absl::StrCat("kernel '@", m_.Name(fn.name), "' must not have a body"));
    return;
  }
  if (fn.params.begin + fn.params.count > m_.params.size()) {
    Fail(fn.loc, "parameter range out of bounds");
    return;
  }
  CheckSpelling(fn.name, internal::Tok::kLocal, fn.loc, "function name");
  if (failed_) return;
  for (ParamId p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
    const Param& param = m_.params[p];
    CheckSpelling(param.name, internal::Tok::kLocal, param.loc, "parameter name");
    if (failed_) return;
    if (param.type == kNoType) {
      Fail(param.loc, absl::StrCat("parameter '%", m_.Name(param.name), "' has no type"));
      return;
    }
    CheckSize(param.type, param.loc, [&] { return absl::StrCat("parameter '%", m_.Name(param.name), "'"); });
    if (failed_) return;
    ValueRef prev = scopes_.Define(param.name, ValueRef::Param(p));
    if (prev.valid()) {
      Fail(param.loc, absl::StrCat("duplicate name '%", m_.Name(param.name), "'"));
      return;
    }
  }
}

void Verifier::ExitFunction(FuncId f) {
  if (failed_) return;
  scopes_.CloseFunction();
  func_state_[f] = 2;
  Function& fn = m_.functions[f];
  TypeId result = fn.result_type;
  if (fn.body != kNoBlock) {
    TypeId returned = block_types_[fn.body];
    const Block& body = m_.blocks[fn.body];
    if (result != kNoType && returned != kNoType && result != returned && !fn.primitive) {
      Fail(body.return_loc, absl::StrCat("returns ", TypeText(returned), " but the result type is ", TypeText(result)));
      return;
    }
    if (result == kNoType) result = returned;
  }
  if (result == kNoType) return;
  CheckSize(result, fn.loc, [&] {
    return absl::StrCat("the result of '", fn.kind == FuncKind::kLocal ? "%" : "@", m_.Name(fn.name), "'");
  });
  if (failed_) return;
  scratch_types_.clear();
  for (const Param& p : m_.Params(fn)) scratch_types_.push_back(p.type);
  fn.type = m_.types.Func(scratch_types_, result);
}

void Verifier::EnterBlock(BlockId id) {
  if (failed_) return;
  if (id >= m_.blocks.size()) return Fail({}, "block id out of range");
  // The walker reads these bindings next: check they exist and belong here.
  for (BindingId b : m_.blocks[id].bindings) {
    if (b >= m_.bindings.size() || m_.bindings[b].block != id)
      return Fail(m_.blocks[id].loc, absl::StrCat("a block of ", FuncName(id), " lists a binding it does not own"));
  }
  block_marks_.push_back(scopes_.Mark());
}

void Verifier::ExitBlock(BlockId id) {
  if (failed_) return;
  const Block& b = m_.blocks[id];
  if (!b.has_return) {
    Fail(b.loc, absl::StrCat("missing 'return': a block of ", FuncName(id), " must end in 'return ATOM'"));
    return;
  }
  CheckOperand(b.result, false);
  if (failed_) return;
  block_types_[id] = OperandType(b.result);
  scopes_.CloseBlock(block_marks_.back());
  block_marks_.pop_back();
}

void Verifier::CheckOperand(const Operand& o, bool device_ok) {
  switch (o.kind) {
    case OperandKind::kLocal: {
      bool in_range = (o.value.is_param() && o.value.index < m_.params.size()) ||
                      (o.value.is_binding() && o.value.index < m_.bindings.size());
      if (!in_range || scopes_.Lookup(m_.ValueName(o.value)) != o.value || o.symbol != m_.ValueName(o.value)) {
        std::string name = o.symbol < m_.symbols.size() ? std::string(m_.Name(o.symbol)) : "?";
        Fail(o.loc, absl::StrCat("undefined name '%", name, "' (not defined before this use in a visible scope)"));
      }
      return;
    }
    case OperandKind::kGlobal:
      if (o.symbol >= m_.symbols.size() || o.index >= m_.functions.size() ||
          m_.functions[o.index].kind == FuncKind::kLocal || m_.functions[o.index].name != o.symbol)
        Fail(o.loc, absl::StrCat("undefined global '@", m_.Name(o.symbol), "'"));
      return;
    case OperandKind::kNumber: return CheckSpelling(o.symbol, internal::Tok::kNumber, o.loc, "number");
    case OperandKind::kIntList:
      if (o.index + static_cast<size_t>(o.count) > m_.ints.size()) Fail(o.loc, "integer list out of range");
      return;
    case OperandKind::kDevice:
      if (!device_ok) Fail(o.loc, "a device literal is not a value here");
      else if (o.index >= m_.devices.size()) Fail(o.loc, "device id out of range");
      return;
    case OperandKind::kIdent:
    case OperandKind::kBool:
    case OperandKind::kString: Fail(o.loc, "a name, boolean or string is only allowed as an attribute value"); return;
  }
}

void Verifier::CheckAttrValue(const Operand& o) {
  switch (o.kind) {
    case OperandKind::kIdent: {
      CheckSpelling(o.symbol, internal::Tok::kIdent, o.loc, "attribute name value");
      absl::string_view text = failed_ ? "" : m_.Name(o.symbol);
      if (text == "true" || text == "false" || DeviceTypeFromName(text))
        Fail(o.loc, absl::StrCat("the identifier '", text, "' would read back as a boolean or a device"));
      return;
    }
    case OperandKind::kString: return CheckSpelling(o.symbol, internal::Tok::kString, o.loc, "string literal");
    case OperandKind::kBool: return;
    default: return CheckOperand(o, true);
  }
}

TypeId Verifier::FunctionType(FuncId f) {
  const Function& fn = m_.functions[f];
  if (fn.type != kNoType) return fn.type;
  if (fn.result_type == kNoType) return kNoType;
  scratch_types_.clear();
  for (const Param& p : m_.Params(fn)) scratch_types_.push_back(p.type);
  return m_.types.Func(scratch_types_, fn.result_type);
}

TypeId Verifier::OperandType(const Operand& o) {
  switch (o.kind) {
    case OperandKind::kLocal:
      return o.value.is_param() ? m_.params[o.value.index].type : m_.bindings[o.value.index].type;
    case OperandKind::kGlobal: return FunctionType(o.index);
    case OperandKind::kIntList: return m_.types.Tensor(DType::kI64, {static_cast<int64_t>(o.count)});
    default: return kNoType;
  }
}

void Verifier::Binding(BindingId id) {
  if (failed_) return;
  const ir::Binding& b = m_.bindings[id];
  const Expr& e = b.expr;
  CheckSpelling(b.name, internal::Tok::kLocal, b.loc, "binding name");
  if (failed_) return;
  if (e.args.begin + e.args.count > m_.operands.size() || e.attrs.begin + e.attrs.count > m_.attrs.size()) {
    Fail(b.loc, absl::StrCat(Where(id), ": operand range out of bounds"));
    return;
  }
  absl::Span<const Operand> args = m_.Args(e);
  auto need_args = [&](size_t n) {
    if (args.size() != n) Fail(b.loc, absl::StrCat(Where(id), ": malformed expression"));
    return !failed_;
  };
  switch (e.kind) {
    case ExprKind::kOpCall: CheckOpCall(id, e); break;
    case ExprKind::kCallGlobal:
      if (e.func >= m_.functions.size() || m_.functions[e.func].kind == FuncKind::kLocal ||
          m_.functions[e.func].name != e.op) {
        Fail(e.loc, absl::StrCat("undefined global '@", m_.Name(e.op), "'"));
        return;
      }
      break;
    case ExprKind::kCallValue:
      if (args.empty()) return Fail(b.loc, absl::StrCat(Where(id), ": call without callee"));
      if (!args[0].is_local()) return Fail(args[0].loc, "the callee of a value call must be a local '%name'");
      break;
    case ExprKind::kTuple: break;
    case ExprKind::kProject:
    case ExprKind::kAlias:
      if (!need_args(1)) return;
      if (e.kind == ExprKind::kProject && !args[0].is_local())
        return Fail(args[0].loc, "only a local value can be projected");
      break;
    case ExprKind::kIf:
      if (!need_args(1)) return;
      if (e.then_block >= m_.blocks.size() || e.else_block >= m_.blocks.size() || m_.blocks[e.then_block].owner != id ||
          m_.blocks[e.else_block].owner != id)
        return Fail(e.loc, absl::StrCat(Where(id), ": 'if' needs a then and an else block"));
      break;
    case ExprKind::kFn:
      if (e.func >= m_.functions.size() || m_.functions[e.func].kind != FuncKind::kLocal ||
          m_.functions[e.func].binding != id || func_state_[e.func] != 0)
        return Fail(e.loc, absl::StrCat(Where(id), ": 'fn' must refer to its own local function"));
      break;
    case ExprKind::kConst:
      if (e.const_type == kNoType) return Fail(e.loc, absl::StrCat(Where(id), ": const needs a type"));
      break;
  }
  for (const Operand& o : args) {
    CheckOperand(o, e.kind == ExprKind::kOpCall);
    if (failed_) return;
  }
}

void Verifier::CheckOpCall(BindingId id, const Expr& e) {
  CheckSpelling(e.op, internal::Tok::kIdent, e.loc, "op name");
  absl::string_view op = failed_ ? "" : m_.Name(e.op);
  if (op == "if" || op == "fn" || op == "const") Fail(e.loc, absl::StrCat("'", op, "' is a keyword, not an op name"));
  for (const Attr& a : m_.Attrs(e)) {
    if (failed_) return;
    CheckSpelling(a.key, internal::Tok::kIdent, a.loc, "attribute name");
    if (!failed_) CheckAttrValue(a.value);
  }
  if (failed_) return;
  const OpDef* def = Lookup(e.op);
  if (def == nullptr) return;
  absl::Span<const Operand> args = m_.Args(e);
  int n = static_cast<int>(args.size());
  if (n < def->min_args || (def->max_args >= 0 && n > def->max_args)) {
    std::string expected = def->min_args == def->max_args ? absl::StrCat(def->min_args)
                           : def->max_args < 0            ? absl::StrCat("at least ", def->min_args)
                                                          : absl::StrCat(def->min_args, " to ", def->max_args);
    Fail(e.loc,
         absl::StrCat("'", def->name, "' takes ", expected, " argument", expected == "1" ? "" : "s", ", got ", n));
    return;
  }
  for (int i = 0; i < n; ++i) {
    bool must_be_device = std::find(def->device_args.begin(), def->device_args.end(), i) != def->device_args.end();
    if (must_be_device != args[i].is_device()) {
      Fail(args[i].loc, absl::StrCat("argument ", i + 1, " of '", def->name, "' must be ",
                                     must_be_device ? "a device literal" : "a value, not a device literal"));
      return;
    }
  }
  for (const std::string& key : def->required_attrs) {
    if (m_.FindAttr(e, key) == nullptr) {
      Fail(e.loc, absl::StrCat("'", def->name, "' needs the attribute '", key, "'"));
      return;
    }
  }
  (void)id;
}

TypeId Verifier::InferOpCall(BindingId id, const Expr& e) {
  const OpDef* def = Lookup(e.op);
  if (def == nullptr || !def->infer) return kNoType;
  std::vector<TypeId>& arg_types = op_arg_types_;
  arg_types.clear();
  for (const Operand& o : m_.Args(e)) arg_types.push_back(OperandType(o));
  OpCall call(m_, e, arg_types);
  absl::StatusOr<TypeId> t = def->infer(call);
  if (!t.ok()) {
    // The rule's message names the op (`'matmul': …`); the binding is named instead, so a built
    // module's error (no location) says which call is wrong.
    absl::string_view message = t.status().message();
    absl::ConsumePrefix(&message, absl::StrCat("'", def->name, "': "));
    Fail(call.error_loc().valid() ? call.error_loc() : e.loc,
         absl::StrCat("%", m_.Name(m_.bindings[id].name), " = ", PrintExprHead(m_, e), ": ", message));
    return kNoType;
  }
  return *t;
}

TypeId Verifier::InferCall(const Expr& e, absl::Span<const TypeId> params, TypeId result,
                           absl::Span<const Operand> args, const std::string& callee) {
  if (params.size() != args.size()) {
    Fail(e.loc, absl::StrCat(callee, " takes ", params.size(), " argument", params.size() == 1 ? "" : "s", ", got ",
                             args.size()));
    return kNoType;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    TypeId t = OperandType(args[i]);
    if (t != kNoType && params[i] != kNoType && t != params[i]) {
      Fail(args[i].loc, absl::StrCat("argument ", i + 1, " of ", callee, " has type ", TypeText(t), ", expected ",
                                     TypeText(params[i])));
      return kNoType;
    }
  }
  return result;
}

TypeId Verifier::InferCallExpr(const Expr& e, absl::Span<const Operand> args) {
  if (e.kind == ExprKind::kCallGlobal) {
    const Function& callee = m_.functions[e.func];
    scratch_types_.clear();
    for (const Param& p : m_.Params(callee)) scratch_types_.push_back(p.type);
    std::vector<TypeId> params = scratch_types_;
    TypeId result = callee.result_type;
    if (result == kNoType && callee.type != kNoType) result = m_.types.func_result(callee.type);
    return InferCall(e, params, result, args, absl::StrCat("'@", m_.Name(e.op), "'"));
  }
  TypeId ft = OperandType(args[0]);
  if (ft == kNoType) return kNoType;
  if (m_.types.kind(ft) != TypeKind::kFunc) {
    Fail(args[0].loc,
         absl::StrCat("'%", m_.Name(args[0].symbol), "' has type ", TypeText(ft), ", not a function type"));
    return kNoType;
  }
  absl::Span<const TypeId> p = m_.types.func_params(ft);
  std::vector<TypeId> params(p.begin(), p.end());
  return InferCall(e, params, m_.types.func_result(ft), args.subspan(1),
                   absl::StrCat("'%", m_.Name(args[0].symbol), "'"));
}

TypeId Verifier::InferExpr(BindingId id, const Expr& e) {
  absl::Span<const Operand> args = m_.Args(e);
  switch (e.kind) {
    case ExprKind::kOpCall: return InferOpCall(id, e);
    case ExprKind::kCallGlobal:
    case ExprKind::kCallValue: return InferCallExpr(e, args);
    case ExprKind::kTuple: {
      std::vector<TypeId> fields;
      for (const Operand& o : args) {
        TypeId f = OperandType(o);
        if (f == kNoType) break;
        fields.push_back(f);
      }
      return fields.size() == args.size() ? m_.types.Tuple(fields) : kNoType;
    }
    case ExprKind::kProject: {
      TypeId tt = OperandType(args[0]);
      if (tt == kNoType) return kNoType;
      if (m_.types.kind(tt) != TypeKind::kTuple) {
        Fail(args[0].loc, absl::StrCat("'%", m_.Name(args[0].symbol), "' has type ", TypeText(tt), ", not a tuple"));
        return kNoType;
      }
      absl::Span<const TypeId> fields = m_.types.fields(tt);
      if (e.index >= fields.size()) {
        Fail(args[0].loc, absl::StrCat("field ", e.index, " of a ", fields.size(), "-tuple"));
        return kNoType;
      }
      return fields[e.index];
    }
    case ExprKind::kIf: {
      TypeId cond = OperandType(args[0]);
      if (cond != kNoType && (m_.types.kind(cond) != TypeKind::kTensor || m_.types.node(cond).dtype != DType::kBool)) {
        Fail(args[0].loc, absl::StrCat("the condition has type ", TypeText(cond), ", expected a bool tensor"));
        return kNoType;
      }
      TypeId a = block_types_[e.then_block], c = block_types_[e.else_block];
      if (a != kNoType && c != kNoType && a != c) {
        Fail(m_.blocks[e.else_block].return_loc,
             absl::StrCat("the arms of 'if' return ", TypeText(a), " and ", TypeText(c)));
        return kNoType;
      }
      return a != kNoType ? a : c;
    }
    case ExprKind::kFn: return m_.functions[e.func].type;
    case ExprKind::kConst: return e.const_type;
    case ExprKind::kAlias: return OperandType(args[0]);
  }
  return kNoType;
}

void Verifier::BindingDone(BindingId id) {
  if (failed_) return;
  ir::Binding& b = m_.bindings[id];
  TypeId t = InferExpr(id, b.expr);
  if (failed_) return;
  if (b.declared_type != kNoType) {
    if (t != kNoType && t != b.declared_type) {
      Fail(b.loc, absl::StrCat("'%", m_.Name(b.name), "' is declared ", TypeText(b.declared_type),
                               " but its value has type ", TypeText(t)));
      return;
    }
    t = b.declared_type;
  }
  CheckSize(t, b.loc, [&] { return absl::StrCat("'%", m_.Name(b.name), "'"); });
  if (failed_) return;
  b.type = t;
  ValueRef prev = scopes_.Define(b.name, ValueRef::Binding(id));
  if (prev.valid()) {
    SourceLoc at = m_.ValueLoc(prev);
    Fail(b.loc, absl::StrCat("duplicate name '%", m_.Name(b.name), "'",
                             at.valid() ? absl::StrCat(" (already defined at ", at.line, ":", at.col, ")") : "",
                             b.loc.valid() ? "" : absl::StrCat(" in ", FuncName(b.block))));
  }
}

}  // namespace

absl::Status VerifyModule(Module& module, const OpRegistry& registry, Diagnostic* error) {
  Verifier v(module, registry);
  if (v.Run()) return absl::OkStatus();
  if (error != nullptr) *error = v.error;
  return absl::InvalidArgumentError(v.error.loc.valid()
                                        ? absl::StrCat(v.error.loc.line, ":", v.error.loc.col, ": ", v.error.message)
                                        : v.error.message);
}

absl::Status VerifyModule(Module& module, Diagnostic* error) {
  return VerifyModule(module, OpRegistry::Global(), error);
}

}  // namespace vdev::ir
