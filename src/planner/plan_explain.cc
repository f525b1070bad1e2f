// ExplainPlacement and AnnotationSpreadWarnings (vdev/planner/plan_explain.h).
//
// Both read one graph off the input module: a node per parameter, binding and function result, an
// edge per placement constraint between two of them (the spec's unification rules), kept only where
// the plan put both sides on the same device (a copy made for a conflict separates them). Pins are
// the annotations (on_device, device_copy, written `on vd`, the host's operands). A breadth-first
// search from a value finds the nearest pin that decides its device; a union-find over the edges
// gives the values each annotation carries with it. Nothing recurses.
#include "vdev/planner/plan_explain.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

// Why two values share a device; the text follows the binding that makes the constraint.
enum class Rule : uint8_t {
  kOperand,
  kArgument,
  kCallResult,
  kReturn,
  kTuple,
  kProject,
  kIf,
  kAlias,
  kFreeOnDevice,
  kUncopied
};

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

// 16 bytes: a million-binding program has two million edges.
struct Edge {
  uint32_t a, b;
  uint32_t why;  // the binding that makes the constraint; for kReturn, the function that returns
  Rule rule;
};
static_assert(sizeof(Edge) == 16);

// What an annotation is written on: the binding of an on_device or device_copy, a parameter, or a
// function (its written result device).
enum class PinSource : uint8_t { kBinding, kParam, kResult };

struct Pin {
  uint32_t node;
  ir::DeviceId device;  // in the input's table
  SourceLoc loc;
  PinSource source;
  uint32_t id;     // BindingId, ParamId or FuncId by `source`
  bool on_device;  // a normal on_device annotation (the warnings consider only these)
};

// The plan's side of the graph: the device each value ended on, in `table`'s devices (the planned
// module's; its table only grows, so the input's device ids mean the same there).
struct Planned {
  const ir::Module& table;
  uint32_t bindings;  // the input's: bindings past them are the copies planning added
  absl::Span<const ir::DeviceId> binding_devices;
  std::vector<ir::DeviceId> params, results;  // by ParamId, by FuncId
};

Planned PlannedOf(const PlanResult& plan) {
  Planned planned{plan.module, static_cast<uint32_t>(plan.input_bindings), plan.binding_devices, {}, {}};
  for (const ir::Param& p : plan.module.params) planned.params.push_back(p.device);
  for (const ir::Function& f : plan.module.functions) planned.results.push_back(f.result_device);
  return planned;
}

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

// The input seen in the planned module itself while this lives (PlanResult::input_edits undone),
// with the plan's devices read before; the destructor puts the plan back.
class InputInPlace {
 public:
  explicit InputInPlace(PlanResult& plan) : plan_(plan), planned_(PlannedOf(plan)) {
    SwapEdits(plan_.module, plan_.input_edits, /*to_input=*/true);
  }
  ~InputInPlace() { SwapEdits(plan_.module, plan_.input_edits, /*to_input=*/false); }
  InputInPlace(const InputInPlace&) = delete;
  InputInPlace& operator=(const InputInPlace&) = delete;

  const ir::Module& input() const { return plan_.module; }
  const Planned& planned() const { return planned_; }

 private:
  PlanResult& plan_;
  const Planned planned_;
};

// Whether the pinned device is part of what the value ended with (a scope-only pin counts).
bool Decides(const VirtualDevice& pin, const VirtualDevice& device) {
  std::optional<VirtualDevice> joined = Join(pin, device);
  return joined && *joined == device;
}

class ConstraintGraph {
 public:
  ConstraintGraph(const ir::Module& input, const Planned& planned) : m_(input), plan_(planned) {
    params_ = static_cast<uint32_t>(m_.params.size());
    bindings_ = std::min(static_cast<uint32_t>(m_.bindings.size()), plan_.bindings);
    device_.assign(params_ + bindings_ + m_.functions.size(), ir::kNoDevice);
    for (uint32_t p = 0; p < params_ && p < plan_.params.size(); ++p) SetDevice(p, plan_.params[p]);
    for (ir::FuncId f = 0; f < m_.functions.size() && f < plan_.results.size(); ++f)
      SetDevice(ResultNode(f), plan_.results[f]);
    Collect();
  }

  uint32_t ParamNode(uint32_t p) const { return p; }
  uint32_t BindingNode(ir::BindingId b) const { return params_ + b; }
  uint32_t ResultNode(ir::FuncId f) const { return params_ + bindings_ + f; }
  uint32_t bindings() const { return bindings_; }
  size_t size() const { return device_.size(); }
  // The node's device in the plan, or nullptr when it has none.
  const VirtualDevice* Device(uint32_t node) const {
    return device_[node] == ir::kNoDevice ? nullptr : &plan_.table.Device(device_[node]);
  }
  // "on_device(%a, cpu:0)", "parameter %x on cuda:0", "the result of @f on cpu:0".
  std::string What(const Pin& pin) const {
    switch (pin.source) {
      case PinSource::kBinding: return ir::PrintExprHead(m_, m_.bindings[pin.id].expr);
      case PinSource::kParam:
        return absl::StrCat("parameter %", m_.Name(m_.params[pin.id].name), " on ", PinDevice(pin).ToString());
      case PinSource::kResult:
        return absl::StrCat("the result of @", ir::FunctionPath(m_, pin.id), " on ", PinDevice(pin).ToString());
    }
    return "";
  }
  const std::vector<Pin>& pins() const { return pins_; }
  const std::vector<Edge>& edges() const { return edges_; }
  // Calls f(i) for each edge i of `node` that held, in edge order (a loop on the node twice). A search
  // that stops after a few nodes, like the warnings', scans the edge list for each of its first nodes
  // instead of building adjacency lists for the whole program (a million-binding program's would be
  // 25 MB to fill); past kScansBeforeAdjacency scans the lists are built.
  template <typename F>
  void ForEachEdgeOf(uint32_t node, F&& f) const {
    if (offset_.empty() && scans_ < kScansBeforeAdjacency) {
      ++scans_;
      for (uint32_t i = 0; i < edges_.size(); ++i) {
        const Edge& e = edges_[i];
        if ((e.a != node && e.b != node) || !Holds(e)) continue;
        if (e.a == node) f(i);
        if (e.b == node) f(i);
      }
      return;
    }
    if (offset_.empty()) BuildAdjacency();
    for (uint32_t k = offset_[node]; k < offset_[node + 1]; ++k) f(incident_[k]);
  }
  // How many counted values an on_device pin asks for by itself: the annotated value, and the
  // operands of the op call that makes it (which share its device by the op's own rule).
  uint32_t Implied(const Pin& pin) const {
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

  const VirtualDevice& PinDevice(const Pin& pin) const { return m_.Device(pin.device); }
  ir::DeviceId DeviceId(uint32_t node) const { return device_[node]; }
  // Whether `pin` gave `node` (part of) the device the plan has it on. Memoised per pair of devices:
  // an annotated program has a pin per annotation, but few devices.
  bool PinDecides(const Pin& pin, uint32_t node) const {
    if (device_[node] == ir::kNoDevice) return false;
    auto [it, inserted] = decides_.try_emplace(std::pair{pin.device, device_[node]}, false);
    if (inserted) it->second = Decides(PinDevice(pin), plan_.table.Device(device_[node]));
    return it->second;
  }

  // A value the warnings count: a parameter, or a binding that is not an on_device or device_copy.
  bool IsCountedValue(uint32_t node) const {
    if (node < params_) return true;
    if (node >= params_ + bindings_) return false;
    return !IsMove(node - params_);
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
    if (e.rule == Rule::kReturn) return absl::StrCat("@", ir::FunctionPath(m_, e.why), " returns its value");
    const ir::Binding& b = m_.bindings[e.why];
    std::string text = absl::StrCat("%", m_.Name(b.name), " = ", ir::PrintExprHead(m_, b.expr));
    if (b.loc.valid()) absl::StrAppend(&text, " at ", b.loc.line, ":", b.loc.col);
    return text;
  }

  // Whether the plan put both sides of an edge on one device (so the constraint held there).
  bool Holds(const Edge& e) const { return device_[e.a] != ir::kNoDevice && device_[e.a] == device_[e.b]; }

 private:
  void SetDevice(uint32_t node, ir::DeviceId d) { device_[node] = d; }
  uint32_t Local(const ir::Operand& o) const {
    return o.value.is_param() ? ParamNode(o.value.index) : BindingNode(o.value.index);
  }
  void AddEdge(uint32_t a, uint32_t b, ir::BindingId why, Rule rule) { edges_.push_back({a, b, why, rule}); }
  void AddReturnEdge(uint32_t a, uint32_t b, ir::FuncId func) { edges_.push_back({a, b, func, Rule::kReturn}); }
  void AddPin(uint32_t node, ir::DeviceId device, SourceLoc loc, PinSource source, uint32_t id,
              bool on_device = false) {
    pins_.push_back({node, device, loc, source, id, on_device});
  }

  void Collect() {
    edges_.reserve(2 * static_cast<size_t>(bindings_));
    for (uint32_t p = 0; p < params_; ++p) {
      const ir::Param& param = m_.params[p];
      if (param.device != ir::kNoDevice) AddPin(p, param.device, param.device_loc, PinSource::kParam, p);
    }
    for (ir::FuncId f = 0; f < m_.functions.size(); ++f) {
      const ir::Function& fn = m_.functions[f];
      if (fn.result_device != ir::kNoDevice)
        AddPin(ResultNode(f), fn.result_device, fn.result_device_loc, PinSource::kResult, f);
      if (fn.body != ir::kNoBlock && m_.blocks[fn.body].result.is_local())
        AddReturnEdge(ResultNode(f), Local(m_.blocks[fn.body].result), f);
    }
    MarkReadMoves();
    // Bindings in id order: a binding's device falls back on its operand's (a removed on_device),
    // and operands are defined before their users.
    for (ir::BindingId b = 0; b < bindings_; ++b) {
      if (b < plan_.binding_devices.size()) SetDevice(BindingNode(b), plan_.binding_devices[b]);
      CollectBinding(b);
    }
  }

  bool IsMove(ir::BindingId b) const {
    const absl::string_view op = m_.OpName(m_.bindings[b].expr);
    return op == "on_device" || op == "device_copy";
  }

  // A move that nothing reads (directly or through other such moves) constrains nothing: the planner
  // drops it before collecting (docs/planner.md, "Unused moves"). Readers come after what they read,
  // so one pass in reverse id order marks every move that something kept reads.
  void MarkReadMoves() {
    read_.assign(bindings_, false);
    for (const ir::Block& block : m_.blocks)
      if (block.result.is_local() && block.result.value.is_binding()) read_[block.result.value.index] = true;
    for (ir::BindingId b = bindings_; b-- > 0;) {
      if (IsMove(b) && !read_[b]) continue;
      ir::ForEachLocalRead(m_, m_.bindings[b].expr, [&](const ir::Operand& o) {
        if (o.value.is_binding()) read_[o.value.index] = true;
      });
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
        if (device_[self] == ir::kNoDevice && !args.empty() && args[0].is_local())
          device_[self] = device_[Local(args[0])];
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

  void CollectOpCall(ir::BindingId b, const ir::Expr& e, absl::Span<const ir::Operand> args) {
    const absl::string_view op = m_.OpName(e);
    const uint32_t self = BindingNode(b);
    const SourceLoc loc = e.loc.valid() ? e.loc : m_.bindings[b].loc;
    if (op == "on_device" || op == "device_copy") {
      if (args.empty() || !args[0].is_local()) return;
      const uint32_t value = Local(args[0]);
      if (device_[self] == ir::kNoDevice) device_[self] = device_[value];  // removed: its consumers read the value
      if (!read_[b]) return;
      if (op == "device_copy") {
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
    if (op == "vm.shape_of" || absl::StartsWith(op, "memory.")) return;  // host operands: pinned elsewhere
    for (const ir::Operand& o : args)
      if (o.is_local()) AddEdge(self, Local(o), b, Rule::kOperand);
  }

  void BuildAdjacency() const {
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
  const Planned& plan_;
  uint32_t params_ = 0, bindings_ = 0;
  std::vector<ir::DeviceId> device_;  // in plan_.table; kNoDevice: none
  std::vector<bool> read_;            // by binding: something kept reads it
  mutable absl::flat_hash_map<std::pair<ir::DeviceId, ir::DeviceId>, bool> decides_;
  std::vector<Edge> edges_;
  std::vector<Pin> pins_;
  static constexpr int kScansBeforeAdjacency = 4;
  mutable int scans_ = 0;
  mutable std::vector<uint32_t> offset_, incident_;  // built on demand: edges of a node, by node
};

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
  for (ir::BindingId b = 0; b < graph.bindings(); ++b)
    if (m.Name(m.bindings[b].name) == value && ir::FunctionPath(m, m.blocks[m.bindings[b].block].func) == path)
      return graph.BindingNode(b);
  return absl::NotFoundError(absl::StrCat("no value %", value, " in @", path,
                                          " (name one as the JSON report does: x, %x, or PATH:x such as f:x)"));
}

absl::StatusOr<std::string> Explain(const ir::Module& input, const Planned& planned, absl::string_view value) {
  const ConstraintGraph graph(input, planned);
  absl::StatusOr<uint32_t> start = FindValue(input, graph, value);
  if (!start.ok()) return start.status();
  const VirtualDevice* device = graph.Device(*start);
  if (device == nullptr) return absl::NotFoundError(absl::StrCat(graph.Name(*start), " has no device in the plan"));
  std::vector<const Pin*> pin_of(graph.size(), nullptr);  // the first pin that decides each node
  for (const Pin& pin : graph.pins())
    if (pin_of[pin.node] == nullptr && graph.PinDecides(pin, pin.node) && graph.Device(pin.node) != nullptr &&
        *graph.Device(pin.node) == *device)
      pin_of[pin.node] = &pin;
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
    if (pin_of[node] != nullptr) {
      const Pin& pin = *pin_of[node];
      std::string out = absl::StrCat(graph.Name(*start), " is on ", device->ToString(), ":\n  ", graph.What(pin));
      if (pin.loc.valid()) absl::StrAppend(&out, " at ", pin.loc.line, ":", pin.loc.col);
      absl::StrAppend(&out, " puts ", graph.Name(node), " on ", graph.PinDevice(pin).ToString(), "\n");
      for (uint32_t n = node; n != *start;) {
        const Edge& e = graph.edges()[via[n]];
        const uint32_t next = e.a == n ? e.b : e.a;
        absl::StrAppend(&out, "  ", graph.Why(e), ": ", RuleText(e.rule), ", so ", graph.Name(next), " is there too\n");
        n = next;
      }
      return out;
    }
    graph.ForEachEdgeOf(node, [&](uint32_t i) {
      const Edge& e = graph.edges()[i];
      const uint32_t other = e.a == node ? e.b : e.a;
      if (seen[other]) return;
      seen[other] = true;
      via[other] = i;
      queue.push_back(other);
    });
  }
  return absl::StrCat(graph.Name(*start), " is on ", device->ToString(),
                      " by default: no annotation reaches it through the ", reached,
                      " value(s) that share its device by constraints. Defaults: a function's result takes the "
                      "config's default device, a parameter its function's result device, any other value the "
                      "device of its first consumer (docs/planner.md).\n");
}

std::vector<Diagnostic> SpreadWarnings(const ir::Module& input, const Planned& planned,
                                       const VirtualDevice& default_device) {
  std::vector<Diagnostic> warnings;
  // Only an on_device to another device than the default can move values off it: without one, no
  // graph is built (a large program pays one pass over its bindings).
  absl::flat_hash_map<ir::DeviceId, bool> off;  // by annotated device: not where the default puts it
  const bool off_default = absl::c_any_of(input.bindings, [&](const ir::Binding& b) {
    if (b.expr.kind != ir::ExprKind::kOpCall || input.OpName(b.expr) != "on_device") return false;
    absl::Span<const ir::Operand> args = input.Args(b.expr);
    if (args.size() < 2 || !args[1].is_device()) return false;
    auto [it, inserted] = off.try_emplace(args[1].index, false);
    if (inserted) it->second = !Decides(default_device, input.Device(args[1].index));
    return it->second;
  });
  if (!off_default) return warnings;
  const ConstraintGraph graph(input, planned);
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
  absl::flat_hash_map<ir::DeviceId, bool> default_has;  // by planned device: the default's refinement
  auto DefaultHas = [&](ir::DeviceId d) {
    auto [it, inserted] = default_has.try_emplace(d, false);
    if (inserted) it->second = Decides(default_device, planned.table.Device(d));
    return it->second;
  };
  std::vector<bool> reported(graph.size(), false);
  for (const Pin& pin : graph.pins()) {
    const VirtualDevice* device = graph.Device(pin.node);
    const uint32_t root = find(pin.node);
    if (!pin.on_device || device == nullptr || reported[root] || !graph.PinDecides(pin, pin.node) ||
        DefaultHas(graph.DeviceId(pin.node)))
      continue;
    // What annotating a computation asks for: it and its operands. The warning is about the rest.
    if (2 * (count[root] - graph.Implied(pin)) <= total) continue;
    reported[root] = true;
    // The first few constraints it spread through, nearest first.
    std::vector<std::string> through;
    std::vector<bool> seen(graph.size(), false);
    std::deque<uint32_t> queue = {pin.node};
    seen[pin.node] = true;
    while (!queue.empty() && through.size() < 3) {
      const uint32_t node = queue.front();
      queue.pop_front();
      graph.ForEachEdgeOf(node, [&](uint32_t i) {
        const Edge& e = graph.edges()[i];
        const uint32_t other = e.a == node ? e.b : e.a;
        if (seen[other]) return;
        seen[other] = true;
        queue.push_back(other);
        if (e.rule == Rule::kUncopied || through.size() == 3) return;  // the annotation itself is no news
        if (std::string why = graph.Why(e); absl::c_find(through, why) == through.end())
          through.push_back(std::move(why));
      });
    }
    warnings.push_back(
        {Severity::kWarning, pin.loc,
         absl::StrCat(graph.What(pin), " puts ", count[root], " of the program's ", total, " values on ",
                      device->ToString(), " instead of the default ", default_device.ToString(),
                      ": they share a device with ", graph.Name(pin.node), " through ", absl::StrJoin(through, ", "),
                      ", … (`vdev plan --explain VALUE` shows the chain for a value; docs/planner.md shows how to "
                      "pin one op)")});
  }
  return warnings;
}

}  // namespace

absl::StatusOr<std::string> ExplainPlacement(const ir::Module& input, const PlanResult& plan, absl::string_view value) {
  return Explain(input, PlannedOf(plan), value);
}

absl::StatusOr<std::string> ExplainPlacement(PlanResult& plan, absl::string_view value) {
  const InputInPlace in_place(plan);
  return Explain(in_place.input(), in_place.planned(), value);
}

std::vector<Diagnostic> AnnotationSpreadWarnings(const ir::Module& input, const PlanResult& plan,
                                                 const VirtualDevice& default_device) {
  return SpreadWarnings(input, PlannedOf(plan), default_device);
}

std::vector<Diagnostic> AnnotationSpreadWarnings(PlanResult& plan, const VirtualDevice& default_device) {
  const InputInPlace in_place(plan);
  return SpreadWarnings(in_place.input(), in_place.planned(), default_device);
}

}  // namespace vdev
