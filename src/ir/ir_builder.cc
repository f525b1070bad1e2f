// ModuleBuilder: the C++ way to build what the text builds.
#include "vdev/ir/ir_builder.h"

#include "absl/strings/str_cat.h"
#include "vdev/ir/ir_text.h"

namespace vdev::ir {

Arg Arg::Global(absl::string_view name) {
  Arg a;
  a.kind_ = OperandKind::kGlobal;
  a.text_ = std::string(name);
  return a;
}
Arg Arg::Int(int64_t value) { return Number(absl::StrCat(value)); }
Arg Arg::Number(absl::string_view spelling) {
  Arg a;
  a.kind_ = OperandKind::kNumber;
  a.text_ = std::string(spelling);
  return a;
}
Arg Arg::IntList(std::vector<int64_t> values) {
  Arg a;
  a.kind_ = OperandKind::kIntList;
  a.ints_ = std::move(values);
  return a;
}
Arg Arg::Ident(absl::string_view ident) {
  Arg a;
  a.kind_ = OperandKind::kIdent;
  a.text_ = std::string(ident);
  return a;
}
Arg Arg::Bool(bool value) {
  Arg a;
  a.kind_ = OperandKind::kBool;
  a.flag_ = value;
  return a;
}
Arg Arg::String(absl::string_view contents) {
  Arg a;
  a.kind_ = OperandKind::kString;
  a.text_ = "\"";
  for (char c : contents) {
    if (c == '"' || c == '\\') a.text_.push_back('\\');
    a.text_.push_back(c == '\n' ? ' ' : c);
  }
  a.text_.push_back('"');
  return a;
}

// ---------------------------------------------------------------------------------------------

TypeId ModuleBuilder::TensorType(DType dtype, std::initializer_list<int64_t> dims) {
  return module_.types.Tensor(dtype, absl::Span<const int64_t>(dims.begin(), dims.size()));
}
TypeId ModuleBuilder::TensorType(DType dtype, absl::Span<const int64_t> dims) {
  return module_.types.Tensor(dtype, dims);
}
TypeId ModuleBuilder::TupleType(absl::Span<const TypeId> fields) { return module_.types.Tuple(fields); }
TypeId ModuleBuilder::FuncType(absl::Span<const TypeId> params, TypeId result) {
  return module_.types.Func(params, result);
}
TypeId ModuleBuilder::StorageType() { return module_.types.Storage(); }

void ModuleBuilder::SetTargets(std::vector<TargetKind> targets) {
  module_.config.present = true;
  module_.config.targets = std::move(targets);
}
void ModuleBuilder::SetDefaultDevice(const VirtualDevice& device) {
  module_.config.present = true;
  module_.config.default_device = device;
}
void ModuleBuilder::SetHostDevice(const VirtualDevice& device) {
  module_.config.present = true;
  module_.config.host_device = device;
}

void ModuleBuilder::Fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

namespace {

FuncId NewFunction(Module& m, FuncKind kind, Symbol name) {
  Function f;
  f.kind = kind;
  f.name = name;
  f.params = {static_cast<uint32_t>(m.params.size()), 0};
  m.functions.push_back(f);
  return static_cast<FuncId>(m.functions.size() - 1);
}

BlockId NewBlock(Module& m, FuncId f, BindingId owner) {
  Block b;
  b.func = f;
  b.owner = owner;
  m.blocks.push_back(std::move(b));
  return static_cast<BlockId>(m.blocks.size() - 1);
}

}  // namespace

FuncId ModuleBuilder::BeginGlobal(FuncKind kind, absl::string_view name) {
  Symbol s = module_.symbols.Intern(name);
  if (!module_.globals.emplace(s, static_cast<FuncId>(module_.functions.size())).second)
    Fail(absl::StrCat("duplicate global '@", name, "'"));
  FuncId f = NewFunction(module_, kind, s);
  module_.items.push_back(f);
  open_funcs_.push_back(f);
  next_auto_name_.push_back(0);
  return f;
}

FuncId ModuleBuilder::BeginFunction(absl::string_view name) {
  FuncId f = BeginGlobal(FuncKind::kGlobal, name);
  module_.functions[f].body = NewBlock(module_, f, kNoBinding);
  open_blocks_.push_back(module_.functions[f].body);
  return f;
}

FuncId ModuleBuilder::BeginKernel(absl::string_view name) { return BeginGlobal(FuncKind::kKernel, name); }

void ModuleBuilder::EndKernel() {
  if (open_funcs_.empty() || module_.functions[open_funcs_.back()].kind != FuncKind::kKernel)
    return Fail("EndKernel() without an open kernel");
  open_funcs_.pop_back();
  next_auto_name_.pop_back();
}

ValueRef ModuleBuilder::Param(absl::string_view name, TypeId type, std::optional<VirtualDevice> device) {
  if (open_funcs_.empty()) {
    Fail("Param() outside a function");
    return {};
  }
  Function& f = module_.functions[open_funcs_.back()];
  // A function's parameters are one contiguous range: all of them come before its body.
  if (f.params.begin + f.params.count != module_.params.size() ||
      (f.body != kNoBlock && !module_.blocks[f.body].bindings.empty())) {
    Fail(absl::StrCat("Param('", name, "') after the function's body was started"));
    return {};
  }
  ir::Param p;
  p.name = module_.symbols.Intern(name);
  p.type = type;
  p.func = open_funcs_.back();
  if (device) p.device = module_.devices.Intern(*device);
  module_.params.push_back(p);
  ++f.params.count;
  return ValueRef::Param(static_cast<ParamId>(module_.params.size() - 1));
}

void ModuleBuilder::SetResult(TypeId type, std::optional<VirtualDevice> device) {
  if (open_funcs_.empty()) return Fail("SetResult() outside a function");
  Function& f = module_.functions[open_funcs_.back()];
  f.result_type = type;
  f.result_device = device ? module_.devices.Intern(*device) : kNoDevice;
}

void ModuleBuilder::EndFunction() {
  if (open_funcs_.empty() || module_.functions[open_funcs_.back()].kind != FuncKind::kGlobal || open_blocks_.empty() ||
      open_blocks_.back() != module_.functions[open_funcs_.back()].body)
    return Fail("EndFunction() without an open def (or with an open if/fn inside)");
  open_funcs_.pop_back();
  open_blocks_.pop_back();
  next_auto_name_.pop_back();
}

Symbol ModuleBuilder::BindingName(absl::string_view name) {
  if (!name.empty()) return module_.symbols.Intern(name);
  return module_.symbols.Intern(absl::StrCat(next_auto_name_.back()++));
}

BindingId ModuleBuilder::NewBinding(absl::string_view name, Expr expr) {
  if (open_blocks_.empty() || open_funcs_.empty()) {
    Fail("a binding outside a function body");
    return kNoBinding;
  }
  BlockId block = open_blocks_.back();
  if (module_.blocks[block].has_return) {
    Fail(absl::StrCat("binding '%", name, "' after the block's return"));
    return kNoBinding;
  }
  BindingId b = module_.AddBinding(block, BindingName(name), expr);
  module_.blocks[block].bindings.push_back(b);
  last_binding_ = b;
  return b;
}

Operand ModuleBuilder::Lower(const Arg& arg) {
  Operand o;
  o.kind = arg.kind_;
  switch (arg.kind_) {
    case OperandKind::kLocal:
      if (!arg.value_.valid()) {
        Fail("an invalid ValueRef used as an operand");
        return o;
      }
      return module_.LocalOperand(arg.value_);
    case OperandKind::kGlobal:
    case OperandKind::kNumber:
    case OperandKind::kIdent:
    case OperandKind::kString:
      o.symbol = module_.symbols.Intern(arg.text_);
      o.index = kNoFunc;
      return o;
    case OperandKind::kIntList: return module_.IntListOperand(arg.ints_);
    case OperandKind::kDevice: return module_.DeviceOperand(arg.device_);
    case OperandKind::kBool: return module_.BoolOperand(arg.flag_);
  }
  return o;
}

Range ModuleBuilder::LowerAll(absl::Span<const Arg> args) {
  std::vector<Operand> ops;
  ops.reserve(args.size());
  for (const Arg& a : args) ops.push_back(Lower(a));
  return module_.AddOperands(ops);
}

ValueRef ModuleBuilder::Op(absl::string_view op, std::vector<Arg> args, std::vector<NamedArg> attrs,
                           absl::string_view name, TypeId declared_type) {
  std::vector<Operand> ops;
  for (const Arg& a : args) ops.push_back(Lower(a));
  std::vector<Attr> as;
  for (const NamedArg& a : attrs) as.push_back(module_.MakeAttr(a.key, Lower(a.value)));
  BindingId b = NewBinding(name, module_.MakeOpCall(op, ops, as));
  if (b == kNoBinding) return {};
  module_.bindings[b].declared_type = declared_type;
  return ValueRef::Binding(b);
}

ValueRef ModuleBuilder::Call(absl::string_view global, std::vector<Arg> args, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kCallGlobal;
  e.op = module_.symbols.Intern(global);
  e.args = LowerAll(args);
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

ValueRef ModuleBuilder::CallValue(ValueRef callee, std::vector<Arg> args, absl::string_view name) {
  args.insert(args.begin(), Arg(callee));
  Expr e;
  e.kind = ExprKind::kCallValue;
  e.args = LowerAll(args);
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

ValueRef ModuleBuilder::Tuple(std::vector<Arg> fields, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kTuple;
  e.args = LowerAll(fields);
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

ValueRef ModuleBuilder::Project(ValueRef tuple, uint32_t index, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kProject;
  e.index = index;
  e.args = LowerAll({Arg(tuple)});
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

ValueRef ModuleBuilder::Const(TypeId type, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kConst;
  e.const_type = type;
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

ValueRef ModuleBuilder::Alias(Arg value, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kAlias;
  e.args = LowerAll({value});
  BindingId b = NewBinding(name, e);
  return b == kNoBinding ? ValueRef() : ValueRef::Binding(b);
}

void ModuleBuilder::DeclareType(TypeId type) {
  if (last_binding_ == kNoBinding) return Fail("DeclareType() before any binding");
  module_.bindings[last_binding_].declared_type = type;
}

void ModuleBuilder::BeginIf(Arg cond, absl::string_view name) {
  Expr e;
  e.kind = ExprKind::kIf;
  e.args = LowerAll({cond});
  BindingId b = NewBinding(name, e);
  if (b == kNoBinding) return;
  BlockId then_block = NewBlock(module_, module_.blocks[module_.bindings[b].block].func, b);
  module_.bindings[b].expr.then_block = then_block;
  open_ifs_.push_back(b);
  open_blocks_.push_back(then_block);
}

void ModuleBuilder::Else() {
  if (open_ifs_.empty() || open_blocks_.back() != module_.bindings[open_ifs_.back()].expr.then_block)
    return Fail("Else() without an open then-block");
  BindingId b = open_ifs_.back();
  open_blocks_.pop_back();
  BlockId else_block = NewBlock(module_, module_.blocks[module_.bindings[b].block].func, b);
  module_.bindings[b].expr.else_block = else_block;
  open_blocks_.push_back(else_block);
}

ValueRef ModuleBuilder::EndIf() {
  if (open_ifs_.empty() || open_blocks_.back() != module_.bindings[open_ifs_.back()].expr.else_block) {
    Fail("EndIf() without an open else-block");
    return {};
  }
  BindingId b = open_ifs_.back();
  open_ifs_.pop_back();
  open_blocks_.pop_back();
  last_binding_ = b;
  return ValueRef::Binding(b);
}

FuncId ModuleBuilder::BeginFn(absl::string_view name, bool primitive) {
  Expr e;
  e.kind = ExprKind::kFn;
  BindingId b = NewBinding(name, e);
  if (b == kNoBinding) return kNoFunc;
  FuncId parent = open_funcs_.back();
  FuncId f = NewFunction(module_, FuncKind::kLocal, module_.bindings[b].name);
  Function& fn = module_.functions[f];
  fn.primitive = primitive;
  fn.parent = parent;
  fn.binding = b;
  fn.body = NewBlock(module_, f, kNoBinding);
  module_.bindings[b].expr.func = f;
  open_funcs_.push_back(f);
  open_blocks_.push_back(fn.body);
  next_auto_name_.push_back(0);
  return f;
}

ValueRef ModuleBuilder::EndFn() {
  if (open_funcs_.empty() || module_.functions[open_funcs_.back()].kind != FuncKind::kLocal ||
      open_blocks_.back() != module_.functions[open_funcs_.back()].body) {
    Fail("EndFn() without an open fn (or with an open if inside)");
    return {};
  }
  FuncId f = open_funcs_.back();
  open_funcs_.pop_back();
  open_blocks_.pop_back();
  next_auto_name_.pop_back();
  last_binding_ = module_.functions[f].binding;
  return ValueRef::Binding(last_binding_);
}

void ModuleBuilder::Return(Arg value) {
  if (open_blocks_.empty()) return Fail("Return() outside a block");
  Block& block = module_.blocks[open_blocks_.back()];
  if (block.has_return) return Fail("a second Return() in one block");
  Operand o = Lower(value);
  block.result = o;
  block.has_return = true;
}

absl::StatusOr<Module> ModuleBuilder::Finish() && {
  if (error_.empty() && (!open_funcs_.empty() || !open_blocks_.empty()))
    Fail("Finish() with an open function or block");
  if (!error_.empty()) return absl::FailedPreconditionError(error_);
  auto resolve = [&](Symbol s, uint32_t* func) {
    auto it = module_.globals.find(s);
    if (it == module_.globals.end()) {
      Fail(absl::StrCat("undefined global '@", module_.Name(s), "'"));
      return;
    }
    *func = it->second;
  };
  for (Operand& o : module_.operands) {
    if (o.kind == OperandKind::kGlobal) resolve(o.symbol, &o.index);
  }
  for (Attr& a : module_.attrs) {
    if (a.value.kind == OperandKind::kGlobal) resolve(a.value.symbol, &a.value.index);
  }
  for (Block& b : module_.blocks) {
    if (b.result.kind == OperandKind::kGlobal) resolve(b.result.symbol, &b.result.index);
  }
  for (Binding& b : module_.bindings) {
    if (b.expr.kind == ExprKind::kCallGlobal) resolve(b.expr.op, &b.expr.func);
  }
  if (!error_.empty()) return absl::InvalidArgumentError(error_);
  absl::Status verified = VerifyModule(module_);
  if (!verified.ok()) return verified;
  return std::move(module_);
}

}  // namespace vdev::ir
