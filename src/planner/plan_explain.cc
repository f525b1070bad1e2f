// ExplainPlacement and AnnotationSpreadWarnings (vdev/plan_explain.h).
//
// Both read one graph off the input module: a node per parameter, binding and function result, an
// edge per placement constraint between two of them (the spec's unification rules), kept only where
// the plan put both sides on the same device (a copy made for a conflict separates them). Pins are
// the annotations (on_device, device_copy, written `on vd`, the host's operands). A breadth-first
// search from a value finds the nearest pin that decides its device; a union-find over the edges
// gives the values each annotation carries with it. Nothing recurses.
#include "vdev/plan_explain.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "vdev/ir_text.h"

namespace vdev {
namespace {

// Why two values share a device; the text follows the binding that makes the constraint.
enum class Rule : uint8_t { kOperand, kArgument, kCallResult, kReturn, kTuple, kProject, kIf, kAlias, kFreeOnDevice };

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
  }
  return "";
}

struct Edge {
  uint32_t a, b;
  ir::BindingId why;  // the binding that makes the constraint (kNoBinding: a function's return)
  ir::FuncId func;    // for kReturn: the function
  Rule rule;
};

struct Pin {
  uint32_t node;
  VirtualDevice device;
  SourceLoc loc;
  std::string what;     // "on_device(%a, cpu:0)", "parameter %x on cuda:0", …
  bool on_device;       // a normal on_device annotation (the warnings consider only these)
};

class ConstraintGraph {
 public:
  ConstraintGraph(const ir::Module& input, const PlanResult& plan) : m_(input), plan_(plan) {
    params_ = static_cast<uint32_t>(m_.params.size());
    bindings_ = static_cast<uint32_t>(m_.bindings.size());
    device_.assign(params_ + bindings_ + m_.functions.size(), std::nullopt);
    for (uint32_t p = 0; p < params_ && p < plan_.module.params.size(); ++p) SetDevice(p, plan_.module.params[p].device);
    for (ir::FuncId f = 0; f < m_.functions.size() && f < plan_.module.functions.size(); ++f)
      SetDevice(ResultNode(f), plan_.module.functions[f].result_device);
    Collect();
    BuildAdjacency();
  }

  uint32_t ParamNode(uint32_t p) const { return p; }
  uint32_t BindingNode(ir::BindingId b) const { return params_ + b; }
  uint32_t ResultNode(ir::FuncId f) const { return params_ + bindings_ + f; }
  size_t size() const { return device_.size(); }
  const std::optional<VirtualDevice>& Device(uint32_t node) const { return device_[node]; }
  const std::vector<Pin>& pins() const { return pins_; }
  const std::vector<Edge>& edges() const { return edges_; }
  // Edges of `node` (indices into edges()).
  absl::Span<const uint32_t> EdgesOf(uint32_t node) const {
    return absl::Span<const uint32_t>(incident_.data() + offset_[node], offset_[node + 1] - offset_[node]);
  }
  // A value the warnings count: a parameter, or a binding that is not an on_device or device_copy.
  bool IsCountedValue(uint32_t node) const {
    if (node < params_) return true;
    if (node >= params_ + bindings_) return false;
    const absl::string_view op = m_.OpName(m_.bindings[node - params_].expr);
    return op != "on_device" && op != "device_copy";
  }

  std::string Name(uint32_t node) const {
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

  // `%a = relu(%hb) at 8:8`, `@f returns %x`: the constraint an edge stands for.
  std::string Why(const Edge& e) const {
    if (e.rule == Rule::kReturn) return absl::StrCat("@", ir::FunctionPath(m_, e.func), " returns its value");
    const ir::Binding& b = m_.bindings[e.why];
    std::string text = absl::StrCat("%", m_.Name(b.name), " = ", ir::PrintExprHead(m_, b.expr));
    if (b.loc.valid()) absl::StrAppend(&text, " at ", b.loc.line, ":", b.loc.col);
    return text;
  }

  // Whether the plan put both sides of an edge on one device (so the constraint held there).
  bool Holds(const Edge& e) const { return device_[e.a] && device_[e.b] && *device_[e.a] == *device_[e.b]; }

 private:
  void SetDevice(uint32_t node, ir::DeviceId d) {
    if (d != ir::kNoDevice) device_[node] = plan_.module.Device(d);
  }
  uint32_t Local(const ir::Operand& o) const {
    return o.value.is_param() ? ParamNode(o.value.index) : BindingNode(o.value.index);
  }
  void AddEdge(uint32_t a, uint32_t b, ir::BindingId why, Rule rule, ir::FuncId func = ir::kNoFunc) {
    edges_.push_back({a, b, why, func, rule});
  }
  void AddPin(uint32_t node, const VirtualDevice& device, SourceLoc loc, std::string what, bool on_device = false) {
    pins_.push_back({node, device, loc, std::move(what), on_device});
  }

  void Collect() {
    for (uint32_t p = 0; p < params_; ++p) {
      const ir::Param& param = m_.params[p];
      if (param.device != ir::kNoDevice)
        AddPin(p, m_.Device(param.device), param.device_loc,
               absl::StrCat("parameter %", m_.Name(param.name), " on ", m_.Device(param.device).ToString()));
    }
    for (ir::FuncId f = 0; f < m_.functions.size(); ++f) {
      const ir::Function& fn = m_.functions[f];
      if (fn.result_device != ir::kNoDevice)
        AddPin(ResultNode(f), m_.Device(fn.result_device), fn.result_device_loc,
               absl::StrCat("the result of @", ir::FunctionPath(m_, f), " on ", m_.Device(fn.result_device).ToString()));
      if (fn.body != ir::kNoBlock && m_.blocks[fn.body].result.is_local())
        AddEdge(ResultNode(f), Local(m_.blocks[fn.body].result), ir::kNoBinding, Rule::kReturn, f);
    }
    // Bindings in id order: a binding's device falls back on its operand's (a removed on_device),
    // and operands are defined before their users.
    for (ir::BindingId b = 0; b < bindings_; ++b) {
      if (b < plan_.binding_devices.size()) SetDevice(BindingNode(b), plan_.binding_devices[b]);
      CollectBinding(b);
    }
  }

  void CollectBinding(ir::BindingId b) {
    const ir::Expr& e = m_.bindings[b].expr;
    absl::Span<const ir::Operand> args = m_.Args(e);
    const uint32_t self = BindingNode(b);
    switch (e.kind) {
      case ir::ExprKind::kOpCall: return CollectOpCall(b, e, args);
      case ir::ExprKind::kCallGlobal: {
        if (e.func == ir::kNoFunc) return;
        const ir::Function& callee = m_.functions[e.func];
        absl::Span<const ir::Param> params = m_.Params(callee);
        for (size_t i = 0; i < args.size() && i < params.size(); ++i)
          if (args[i].is_local()) {
            AddEdge(self, Local(args[i]), b, callee.kind == ir::FuncKind::kKernel ? Rule::kOperand : Rule::kArgument);
            if (callee.kind != ir::FuncKind::kKernel)
              AddEdge(Local(args[i]), ParamNode(callee.params.begin + static_cast<uint32_t>(i)), b, Rule::kArgument);
          }
        if (callee.kind != ir::FuncKind::kKernel) AddEdge(self, ResultNode(e.func), b, Rule::kCallResult);
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
        if (!device_[self] && !args.empty() && args[0].is_local()) device_[self] = device_[Local(args[0])];
        return;
      case ir::ExprKind::kIf:
        if (!args.empty() && args[0].is_local()) AddEdge(self, Local(args[0]), b, Rule::kIf);
        for (ir::BlockId arm : {e.then_block, e.else_block})
          if (arm != ir::kNoBlock && m_.blocks[arm].result.is_local()) AddEdge(self, Local(m_.blocks[arm].result), b, Rule::kIf);
        return;
      default:
        return;  // calls of function values, fn, const: no first-order constraint read here
    }
  }

  void CollectOpCall(ir::BindingId b, const ir::Expr& e, absl::Span<const ir::Operand> args) {
    const absl::string_view op = m_.OpName(e);
    const uint32_t self = BindingNode(b);
    const SourceLoc loc = e.loc.valid() ? e.loc : m_.bindings[b].loc;
    if (op == "on_device" || op == "device_copy") {
      if (args.empty() || !args[0].is_local()) return;
      const uint32_t value = Local(args[0]);
      if (!device_[self]) device_[self] = device_[value];  // removed: its consumers read the value
      const std::string head = ir::PrintExprHead(m_, e);
      if (op == "device_copy") {
        for (auto [key, node] : {std::pair{"src", value}, std::pair{"dst", self}})
          if (const ir::Attr* a = m_.FindAttr(e, key); a != nullptr && a->value.is_device())
            AddPin(node, m_.Device(a->value.index), loc, head);
        return;
      }
      auto flag = [&](absl::string_view key, bool fallback) {
        const ir::Attr* a = m_.FindAttr(e, key);
        return a == nullptr || a->value.kind != ir::OperandKind::kBool ? fallback : a->value.index != 0;
      };
      const bool body = flag("constrain_body", true), result = flag("constrain_result", false);
      if (!body && !result) return AddEdge(self, value, b, Rule::kFreeOnDevice);
      if (args.size() < 2 || !args[1].is_device()) return;
      const VirtualDevice& device = m_.Device(args[1].index);
      if (body) AddPin(value, device, loc, head, /*on_device=*/true);
      if (result) AddPin(self, device, loc, head);
      return;
    }
    if (op == "vm.shape_of" || absl::StartsWith(op, "memory.")) return;  // host operands: pinned elsewhere
    for (const ir::Operand& o : args)
      if (o.is_local()) AddEdge(self, Local(o), b, Rule::kOperand);
  }

  void BuildAdjacency() {
    offset_.assign(size() + 1, 0);
    for (const Edge& e : edges_)
      if (Holds(e)) ++offset_[e.a + 1], ++offset_[e.b + 1];
    std::partial_sum(offset_.begin(), offset_.end(), offset_.begin());
    incident_.resize(offset_.back());
    std::vector<uint32_t> fill(offset_.begin(), offset_.end() - 1);
    for (uint32_t i = 0; i < edges_.size(); ++i)
      if (Holds(edges_[i])) incident_[fill[edges_[i].a]++] = i, incident_[fill[edges_[i].b]++] = i;
  }

  const ir::Module& m_;
  const PlanResult& plan_;
  uint32_t params_ = 0, bindings_ = 0;
  std::vector<std::optional<VirtualDevice>> device_;
  std::vector<Edge> edges_;
  std::vector<Pin> pins_;
  std::vector<uint32_t> offset_, incident_;
};

// Whether the pinned device is part of what the value ended with (a scope-only pin counts).
bool Decides(const VirtualDevice& pin, const VirtualDevice& device) {
  std::optional<VirtualDevice> joined = Join(pin, device);
  return joined && *joined == device;
}

// The node `value` names (see ExplainPlacement), or NotFound.
absl::StatusOr<uint32_t> FindValue(const ir::Module& m, const ConstraintGraph& graph, absl::string_view value) {
  std::string path = "main";
  if (size_t colon = value.rfind(':'); colon != absl::string_view::npos) {
    path = std::string(absl::StripPrefix(value.substr(0, colon), "@"));
    value = value.substr(colon + 1);
  }
  value = absl::StripPrefix(value, "%");
  for (uint32_t p = 0; p < m.params.size(); ++p)
    if (m.Name(m.params[p].name) == value && ir::FunctionPath(m, m.params[p].func) == path) return graph.ParamNode(p);
  for (ir::BindingId b = 0; b < m.bindings.size(); ++b)
    if (m.Name(m.bindings[b].name) == value && ir::FunctionPath(m, m.blocks[m.bindings[b].block].func) == path)
      return graph.BindingNode(b);
  return absl::NotFoundError(absl::StrCat("no value %", value, " in @", path,
                                          " (name one as the JSON report does: x, %x, or PATH:x such as f:x)"));
}

}  // namespace

absl::StatusOr<std::string> ExplainPlacement(const ir::Module& input, const PlanResult& plan, absl::string_view value) {
  const ConstraintGraph graph(input, plan);
  absl::StatusOr<uint32_t> start = FindValue(input, graph, value);
  if (!start.ok()) return start.status();
  const std::optional<VirtualDevice>& device = graph.Device(*start);
  if (!device) return absl::NotFoundError(absl::StrCat(graph.Name(*start), " has no device in the plan"));
  std::vector<std::vector<const Pin*>> pins_of(graph.size());
  for (const Pin& pin : graph.pins())
    if (Decides(pin.device, *device)) pins_of[pin.node].push_back(&pin);
  // Breadth first from the value: the first pinned node ends the shortest chain.
  std::vector<uint32_t> via(graph.size(), UINT32_MAX);  // the edge a node was reached by
  std::vector<bool> seen(graph.size(), false);
  std::deque<uint32_t> queue = {*start};
  seen[*start] = true;
  size_t reached = 0;
  while (!queue.empty()) {
    const uint32_t node = queue.front();
    queue.pop_front();
    ++reached;
    if (!pins_of[node].empty()) {
      const Pin& pin = *pins_of[node].front();
      std::string out = absl::StrCat(graph.Name(*start), " is on ", device->ToString(), ":\n  ", pin.what);
      if (pin.loc.valid()) absl::StrAppend(&out, " at ", pin.loc.line, ":", pin.loc.col);
      absl::StrAppend(&out, " puts ", graph.Name(node), " on ", pin.device.ToString(), "\n");
      for (uint32_t n = node; n != *start;) {
        const Edge& e = graph.edges()[via[n]];
        const uint32_t next = e.a == n ? e.b : e.a;
        absl::StrAppend(&out, "  ", graph.Why(e), ": ", RuleText(e.rule), ", so ", graph.Name(next), " is there too\n");
        n = next;
      }
      return out;
    }
    for (uint32_t i : graph.EdgesOf(node)) {
      const Edge& e = graph.edges()[i];
      const uint32_t other = e.a == node ? e.b : e.a;
      if (seen[other]) continue;
      seen[other] = true;
      via[other] = i;
      queue.push_back(other);
    }
  }
  return absl::StrCat(graph.Name(*start), " is on ", device->ToString(),
                      " by default: no annotation reaches it through the ", reached,
                      " value(s) that share its device by constraints. Defaults: a function's result takes the "
                      "config's default device, a parameter its function's result device, any other value the "
                      "device of its first consumer (docs/planner.md).\n");
}

std::vector<Diagnostic> AnnotationSpreadWarnings(const ir::Module& input, const PlanResult& plan,
                                                 const VirtualDevice& default_device) {
  std::vector<Diagnostic> warnings;
  const ConstraintGraph graph(input, plan);
  if (std::none_of(graph.pins().begin(), graph.pins().end(), [](const Pin& p) { return p.on_device; })) return warnings;
  // Union-find over the constraints that held: each class is a set of values on one device.
  std::vector<uint32_t> parent(graph.size());
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const Edge& e : graph.edges())
    if (graph.Holds(e)) parent[find(e.a)] = find(e.b);
  std::vector<uint32_t> count(graph.size(), 0);
  uint32_t total = 0;
  for (uint32_t n = 0; n < graph.size(); ++n)
    if (graph.IsCountedValue(n)) ++count[find(n)], ++total;
  std::vector<bool> reported(graph.size(), false);
  for (const Pin& pin : graph.pins()) {
    const std::optional<VirtualDevice>& device = graph.Device(pin.node);
    const uint32_t root = find(pin.node);
    if (!pin.on_device || !device || reported[root] || Decides(default_device, *device) || 2 * count[root] <= total)
      continue;
    reported[root] = true;
    // The first few constraints it spread through, nearest first.
    std::vector<std::string> through;
    std::vector<bool> seen(graph.size(), false);
    std::deque<uint32_t> queue = {pin.node};
    seen[pin.node] = true;
    while (!queue.empty() && through.size() < 3) {
      const uint32_t node = queue.front();
      queue.pop_front();
      for (uint32_t i : graph.EdgesOf(node)) {
        const Edge& e = graph.edges()[i];
        const uint32_t other = e.a == node ? e.b : e.a;
        if (seen[other]) continue;
        seen[other] = true;
        queue.push_back(other);
        if (std::string why = graph.Why(e); through.size() < 3 && absl::c_find(through, why) == through.end())
          through.push_back(std::move(why));
      }
    }
    warnings.push_back(
        {Severity::kWarning, pin.loc,
         absl::StrCat(pin.what, " puts ", count[root], " of the program's ", total, " values on ", device->ToString(),
                      " instead of the default ", default_device.ToString(), ": they share a device with ",
                      graph.Name(pin.node), " through ", absl::StrJoin(through, ", "),
                      ", … (`vdev plan --explain VALUE` shows the chain for a value; docs/planner.md shows how to "
                      "pin one op)")});
  }
  return warnings;
}

}  // namespace vdev
