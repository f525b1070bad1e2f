// The constraint graph of ExplainPlacement and AnnotationSpreadWarnings (internal/constraint_graph.h).
#include "src/planner/internal/constraint_graph.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "vdev/ir/ir_text.h"

namespace vdev::explain_internal {
namespace {

// Swaps each recorded edit's value with the module's: in reverse order this restores the input, in
// the order written it redoes the plan (a later edit may overwrite an earlier one's slot).
void SwapEdits(ir::Module& m, InputEdits& edits, bool to_input) {
  auto swap_all = [to_input](auto& entries, auto&& slot) {
    if (to_input) {
      for (auto it = entries.rbegin(); it != entries.rend(); ++it) std::swap(slot(it->first), it->second);
    } else {
      for (auto& entry : entries) std::swap(slot(entry.first), entry.second);
    }
  };
  swap_all(edits.operands, [&](uint32_t i) -> ir::Operand& { return m.operands[i]; });
  swap_all(edits.exprs, [&](ir::BindingId b) -> ir::Expr& { return m.bindings[b].expr; });
  swap_all(edits.param_devices, [&](ir::ParamId p) -> ir::DeviceId& { return m.params[p].device; });
  swap_all(edits.result_devices, [&](ir::FuncId f) -> ir::DeviceId& { return m.functions[f].result_device; });
  swap_all(edits.block_results, [&](ir::BlockId b) -> ir::Operand& { return m.blocks[b].result; });
}

}  // namespace

absl::string_view RuleText(Rule rule) {
  switch (rule) {
    case Rule::kOperand: return "an op's operands and result share one device";
    case Rule::kArgument: return "an argument shares its parameter's device";
    case Rule::kCallResult: return "a call's value shares its callee's result device";
    case Rule::kReturn: return "a function's result is where its returned value is";
    case Rule::kTuple: return "a tuple's fields share its device";
    case Rule::kProject: return "a projection shares its tuple's device";
    case Rule::kIf: return "an if, its condition and both arms share one device";
    case Rule::kAlias: return "an alias is its value";
    case Rule::kFreeOnDevice: return "a free on_device joins its two sides";
    case Rule::kUncopied: return "an annotation that needs no copy is its value";
  }
  return "";
}

Planned PlannedOf(const PlanResult& plan) {
  Planned planned{plan.module, static_cast<uint32_t>(plan.input_bindings), plan.binding_devices, {}, {}};
  for (const ir::Param& p : plan.module.params) planned.params.push_back(p.device);
  for (const ir::Function& f : plan.module.functions) planned.results.push_back(f.result_device);
  return planned;
}

InputInPlace::InputInPlace(PlanResult& plan) : plan_(plan), planned_(PlannedOf(plan)) {
  SwapEdits(plan_.module, plan_.input_edits, /*to_input=*/true);
}

InputInPlace::~InputInPlace() { SwapEdits(plan_.module, plan_.input_edits, /*to_input=*/false); }

bool Decides(const VirtualDevice& pin, const VirtualDevice& device) {
  std::optional<VirtualDevice> joined = Join(pin, device);
  return joined && *joined == device;
}

ConstraintGraph::ConstraintGraph(const ir::Module& input, const Planned& planned, EdgeSink& sink)
    : m_(input), plan_(planned) {
  params_ = static_cast<uint32_t>(m_.params.size());
  bindings_ = std::min(static_cast<uint32_t>(m_.bindings.size()), plan_.bindings);
  on_device_ = m_.symbols.Find("on_device");
  device_copy_ = m_.symbols.Find("device_copy");
  device_.assign(params_ + bindings_ + m_.functions.size(), ir::kNoDevice);
  for (uint32_t p = 0; p < params_ && p < plan_.params.size(); ++p) device_[p] = plan_.params[p];
  for (ir::FuncId f = 0; f < m_.functions.size() && f < plan_.results.size(); ++f)
    device_[ResultNode(f)] = plan_.results[f];
  MarkReadMoves();
  Collect(sink, /*only=*/nullptr);
}

std::string ConstraintGraph::What(const Pin& pin) const {
  switch (pin.source) {
    case PinSource::kBinding: return ir::PrintExprHead(m_, m_.bindings[pin.id].expr);
    case PinSource::kParam:
      return absl::StrCat("parameter %", m_.Name(m_.params[pin.id].name), " on ", PinDevice(pin).ToString());
    case PinSource::kResult:
      return absl::StrCat("the result of @", ir::FunctionPath(m_, pin.id), " on ", PinDevice(pin).ToString());
  }
  return "";
}

uint32_t ConstraintGraph::Implied(const Pin& pin) const {
  std::vector<uint32_t> implied = {pin.node};
  if (pin.node >= params_ && pin.node < params_ + bindings_ &&
      m_.bindings[pin.node - params_].expr.kind == ir::ExprKind::kOpCall) {
    for (const ir::Operand& o : m_.Args(m_.bindings[pin.node - params_].expr))
      if (o.is_local() && device_[Local(o)] == device_[pin.node]) implied.push_back(Local(o));
  }
  std::sort(implied.begin(), implied.end());
  implied.erase(std::unique(implied.begin(), implied.end()), implied.end());
  return static_cast<uint32_t>(absl::c_count_if(implied, [&](uint32_t n) { return IsCountedValue(n); }));
}

bool ConstraintGraph::PinDecides(const Pin& pin, uint32_t node) const {
  if (device_[node] == ir::kNoDevice) return false;
  auto [it, inserted] = decides_.try_emplace(std::pair{pin.device, device_[node]}, false);
  if (inserted) it->second = Decides(PinDevice(pin), plan_.table.Device(device_[node]));
  return it->second;
}

std::string ConstraintGraph::Name(uint32_t node) const {
  ir::FuncId f;
  std::string name;
  if (node < params_) {
    f = m_.params[node].func;
    name = absl::StrCat("%", m_.Name(m_.params[node].name));
  } else if (node < params_ + bindings_) {
    f = m_.blocks[m_.bindings[node - params_].block].func;
    name = absl::StrCat("%", m_.Name(m_.bindings[node - params_].name));
  } else {
    return absl::StrCat("the result of @", ir::FunctionPath(m_, node - params_ - bindings_));
  }
  const std::string path = ir::FunctionPath(m_, f);
  return path == "main" ? name : absl::StrCat(name, " in @", path);
}

std::string ConstraintGraph::Why(const Edge& e) const {
  if (e.rule == Rule::kReturn) return absl::StrCat("@", ir::FunctionPath(m_, e.why), " returns its value");
  const ir::Binding& b = m_.bindings[e.why];
  std::string text = absl::StrCat("%", m_.Name(b.name), " = ", ir::PrintExprHead(m_, b.expr));
  if (b.loc.valid()) absl::StrAppend(&text, " at ", b.loc.line, ":", b.loc.col);
  return text;
}

void ConstraintGraph::AddPin(uint32_t node, ir::DeviceId device, SourceLoc loc, PinSource source, uint32_t id,
                             bool on_device) {
  if (first_pass_) pins_.push_back({node, device, loc, source, id, on_device});
}

bool ConstraintGraph::IsHostOp(ir::Symbol op) const {
  if (op != last_op_) {
    const absl::string_view name = m_.Name(op);
    last_op_ = op;
    last_op_host_ = name == "vm.shape_of" || absl::StartsWith(name, "memory.");
  }
  return last_op_host_;
}

// Readers come after what they read, so one pass in reverse id order marks every move that
// something kept reads.
void ConstraintGraph::MarkReadMoves() {
  read_.assign(bindings_, false);
  for (const ir::Block& block : m_.blocks)
    if (block.result.is_local() && block.result.value.is_binding() && block.result.value.index < bindings_)
      read_[block.result.value.index] = true;
  for (ir::BindingId b = bindings_; b-- > 0;) {
    if (IsMove(b) && !read_[b]) continue;
    ir::ForEachLocalRead(m_, m_.bindings[b].expr, [&](const ir::Operand& o) {
      if (o.value.is_binding()) read_[o.value.index] = true;
    });
  }
}

void ConstraintGraph::Collect(EdgeSink& sink, const std::vector<bool>* only) {
  const bool first = only == nullptr;
  sink_ = &sink;
  first_pass_ = first;
  if (first) {
    for (uint32_t p = 0; p < params_; ++p) {
      const ir::Param& param = m_.params[p];
      if (param.device != ir::kNoDevice) AddPin(p, param.device, param.device_loc, PinSource::kParam, p);
    }
  }
  for (ir::FuncId f = 0; f < m_.functions.size(); ++f) {
    const ir::Function& fn = m_.functions[f];
    if (fn.result_device != ir::kNoDevice)
      AddPin(ResultNode(f), fn.result_device, fn.result_device_loc, PinSource::kResult, f);
    if (fn.body != ir::kNoBlock && m_.blocks[fn.body].result.is_local())
      sink.Add(*this, {ResultNode(f), Local(m_.blocks[fn.body].result), f, Rule::kReturn});
  }
  // Bindings in id order: a binding's device falls back on its operand's (a removed on_device),
  // and operands are defined before their users.
  for (ir::BindingId b = 0; b < bindings_; ++b) {
    if (first) Settle(b);
    if (first || MayTouch(b, *only)) CollectBinding(b);
  }
  first_pass_ = false;
}

bool ConstraintGraph::MayTouch(ir::BindingId b, const std::vector<bool>& nodes) const {
  const ir::Expr& e = m_.bindings[b].expr;
  if (e.kind != ir::ExprKind::kOpCall || nodes[BindingNode(b)]) return true;
  return absl::c_any_of(m_.Args(e), [&](const ir::Operand& o) { return o.is_local() && nodes[Local(o)]; });
}

void ConstraintGraph::Settle(ir::BindingId b) {
  uint32_t node = BindingNode(b);
  if (b < plan_.binding_devices.size()) device_[node] = plan_.binding_devices[b];
  const ir::Expr& e = m_.bindings[b].expr;
  // A removed move's, projection's or alias's consumers read its value: it is where that is.
  if (device_[node] == ir::kNoDevice && (e.kind == ir::ExprKind::kProject || e.kind == ir::ExprKind::kAlias ||
                                         (e.kind == ir::ExprKind::kOpCall && IsMove(b)))) {
    absl::Span<const ir::Operand> args = m_.Args(e);
    if (!args.empty() && args[0].is_local()) device_[node] = device_[Local(args[0])];
  }
  settled_ = b + 1;
}

void ConstraintGraph::CollectBinding(ir::BindingId b) {
  const ir::Expr& e = m_.bindings[b].expr;
  absl::Span<const ir::Operand> args = m_.Args(e);
  const uint32_t self = BindingNode(b);
  switch (e.kind) {
    case ir::ExprKind::kOpCall: return CollectOpCall(b, e, args);
    case ir::ExprKind::kCallGlobal: {
      if (e.func == ir::kNoFunc) return;
      const ir::Function& callee = m_.functions[e.func];
      absl::Span<const ir::Param> params = m_.Params(callee);
      // A kernel call runs on one device like an op; a function call unifies each argument with
      // its parameter and the call with the callee's result.
      const bool kernel = callee.kind == ir::FuncKind::kKernel;
      for (size_t i = 0; i < args.size() && i < params.size(); ++i) {
        if (!args[i].is_local()) continue;
        if (kernel) AddEdge(self, Local(args[i]), b, Rule::kOperand);
        else AddEdge(Local(args[i]), ParamNode(callee.params.begin + static_cast<uint32_t>(i)), b, Rule::kArgument);
      }
      if (!kernel) AddEdge(self, ResultNode(e.func), b, Rule::kCallResult);
      return;
    }
    case ir::ExprKind::kTuple:
      for (const ir::Operand& o : args)
        if (o.is_local()) AddEdge(self, Local(o), b, Rule::kTuple);
      return;
    case ir::ExprKind::kProject:
    case ir::ExprKind::kAlias:
      if (!args.empty() && args[0].is_local())
        AddEdge(self, Local(args[0]), b, e.kind == ir::ExprKind::kProject ? Rule::kProject : Rule::kAlias);
      return;
    case ir::ExprKind::kIf:
      if (!args.empty() && args[0].is_local()) AddEdge(self, Local(args[0]), b, Rule::kIf);
      for (ir::BlockId arm : {e.then_block, e.else_block})
        if (arm != ir::kNoBlock && m_.blocks[arm].result.is_local())
          AddEdge(self, Local(m_.blocks[arm].result), b, Rule::kIf);
      return;
    default: return;  // calls of function values, fn, const: no first-order constraint read here
  }
}

void ConstraintGraph::CollectOpCall(ir::BindingId b, const ir::Expr& e, absl::Span<const ir::Operand> args) {
  const uint32_t self = BindingNode(b);
  if (IsMove(b)) {
    if (args.empty() || !args[0].is_local() || !read_[b]) return;
    const uint32_t value = Local(args[0]);
    const SourceLoc loc = e.loc.valid() ? e.loc : m_.bindings[b].loc;
    if (e.op == device_copy_) {
      for (auto [key, node] : {std::pair{"src", value}, std::pair{"dst", self}})
        if (const ir::Attr* a = m_.FindAttr(e, key); a != nullptr && a->value.is_device())
          AddPin(node, a->value.index, loc, PinSource::kBinding, b);
      return;
    }
    auto flag = [&](absl::string_view key, bool fallback) {
      const ir::Attr* a = m_.FindAttr(e, key);
      return a == nullptr || a->value.kind != ir::OperandKind::kBool ? fallback : a->value.index != 0;
    };
    const bool body = flag("constrain_body", true), result = flag("constrain_result", false);
    if (!body && !result) return AddEdge(self, value, b, Rule::kFreeOnDevice);
    if (args.size() < 2 || !args[1].is_device()) return;
    if (body) AddPin(value, args[1].index, loc, PinSource::kBinding, b, /*on_device=*/true);
    if (result) AddPin(self, args[1].index, loc, PinSource::kBinding, b);
    // A function's returned annotation pins its result too; where the plan made no copy (both
    // sides on one device), the annotation's consumers read the value itself.
    const ir::Block& block = m_.blocks[m_.bindings[b].block];
    if (body && block.owner == ir::kNoBinding && block.result.is_local() &&
        block.result.value == ir::ValueRef::Binding(b))
      AddPin(ResultNode(block.func), args[1].index, loc, PinSource::kBinding, b);
    AddEdge(self, value, b, Rule::kUncopied);
    return;
  }
  if (IsHostOp(e.op)) return;
  for (const ir::Operand& o : args)
    if (o.is_local()) AddEdge(self, Local(o), b, Rule::kOperand);
}

}  // namespace vdev::explain_internal
