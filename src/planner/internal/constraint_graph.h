// The constraint graph read off an input module and its plan, for ExplainPlacement and
// AnnotationSpreadWarnings (vdev/planner/plan_explain.h).
//
// A node per parameter, binding and function result; an edge per placement constraint between two
// of them (the spec's unification rules), which counts only where the plan put both sides on the
// same device (a copy made for a conflict separates them). Pins are the annotations (on_device,
// device_copy, written `on vd`, the host's operands). Collection hands each edge to an EdgeSink, in
// one fixed order: the explanation stores them all, the warnings unite them as they come and
// gather the few a search needs in another pass, so that a million-binding program's two million
// edges (32 MB) are never stored for a warning. Nothing recurses.
#ifndef VDEV_SRC_PLANNER_INTERNAL_CONSTRAINT_GRAPH_H_
#define VDEV_SRC_PLANNER_INTERNAL_CONSTRAINT_GRAPH_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "vdev/ir/ir.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::explain_internal {

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
absl::string_view RuleText(Rule rule);

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
Planned PlannedOf(const PlanResult& plan);

// The input seen in the planned module itself while this lives (PlanResult::input_edits undone),
// with the plan's devices read before; the destructor puts the plan back.
class InputInPlace {
 public:
  explicit InputInPlace(PlanResult& plan);
  ~InputInPlace();
  InputInPlace(const InputInPlace&) = delete;
  InputInPlace& operator=(const InputInPlace&) = delete;

  const ir::Module& input() const { return plan_.module; }
  const Planned& planned() const { return planned_; }

 private:
  PlanResult& plan_;
  const Planned planned_;
};

// Whether the pinned device is part of what the value ended with (a scope-only pin counts).
bool Decides(const VirtualDevice& pin, const VirtualDevice& device);

class ConstraintGraph;

// Receives the edges as collection makes them. When Add is called, the devices of the nodes
// Settled() says are final; an edge whose other side is a later binding (a function's return, an
// `if`'s arms) comes before that binding's device is known.
class EdgeSink {
 public:
  virtual ~EdgeSink() = default;
  virtual void Add(const ConstraintGraph& graph, const Edge& e) = 0;
};

class ConstraintGraph {
 public:
  // Collects the pins and hands every edge to `sink`.
  ConstraintGraph(const ir::Module& input, const Planned& planned, EdgeSink& sink);

  // How many nodes the graph of `input` has (parameters, bindings, function results).
  static size_t NodeCount(const ir::Module& input, const Planned& planned) {
    return input.params.size() + std::min<size_t>(input.bindings.size(), planned.bindings) + input.functions.size();
  }
  // Hands every edge with a side among `nodes` (by node) to `sink` again, in the same order, and
  // perhaps others: an op call none of whose values is among them is skipped unread.
  void Recollect(EdgeSink& sink, const std::vector<bool>& nodes) { Collect(sink, &nodes); }

  uint32_t ParamNode(uint32_t p) const { return p; }
  uint32_t BindingNode(ir::BindingId b) const { return params_ + b; }
  uint32_t ResultNode(ir::FuncId f) const { return params_ + bindings_ + f; }
  uint32_t bindings() const { return bindings_; }
  size_t size() const { return device_.size(); }
  // The values a binding's expression reads (its local operands), by node; none for other nodes.
  std::vector<uint32_t> Reads(uint32_t node) const {
    std::vector<uint32_t> reads;
    if (node >= params_ && node < params_ + bindings_)
      for (const ir::Operand& o : m_.Args(m_.bindings[node - params_].expr))
        if (o.is_local()) reads.push_back(Local(o));
    return reads;
  }
  // Whether the node's device is final: parameters and results from the start, a binding once
  // collection has reached it.
  bool Settled(uint32_t node) const {
    return node < params_ || node >= params_ + bindings_ || node - params_ < settled_;
  }
  // The node's device in the plan, or nullptr when it has none.
  const VirtualDevice* Device(uint32_t node) const {
    return device_[node] == ir::kNoDevice ? nullptr : &plan_.table.Device(device_[node]);
  }
  ir::DeviceId DeviceId(uint32_t node) const { return device_[node]; }
  const std::vector<Pin>& pins() const { return pins_; }
  // "on_device(%a, cpu:0)", "parameter %x on cuda:0", "the result of @f on cpu:0".
  std::string What(const Pin& pin) const;
  const VirtualDevice& PinDevice(const Pin& pin) const { return m_.Device(pin.device); }
  // How many counted values an on_device pin asks for by itself: the annotated value, and the
  // operands of the op call that makes it (which share its device by the op's own rule).
  uint32_t Implied(const Pin& pin) const;
  // Whether `pin` gave `node` (part of) the device the plan has it on. Memoised per pair of devices:
  // an annotated program has a pin per annotation, but few devices.
  bool PinDecides(const Pin& pin, uint32_t node) const;
  // A value the warnings count: a parameter, or a binding that is not an on_device or device_copy.
  bool IsCountedValue(uint32_t node) const {
    if (node < params_) return true;
    if (node >= params_ + bindings_) return false;
    return !IsMove(node - params_);
  }
  // "%x", "%x in @f", "the result of @f".
  std::string Name(uint32_t node) const;
  // `%a = relu(%hb) at 8:8`, `@f returns %x`: the constraint an edge stands for.
  std::string Why(const Edge& e) const;
  // Whether the plan put both sides of an edge on one device (so the constraint held there).
  bool Holds(const Edge& e) const { return device_[e.a] != ir::kNoDevice && device_[e.a] == device_[e.b]; }

 private:
  uint32_t Local(const ir::Operand& o) const {
    return o.value.is_param() ? ParamNode(o.value.index) : BindingNode(o.value.index);
  }
  void AddEdge(uint32_t a, uint32_t b, ir::BindingId why, Rule rule) { sink_->Add(*this, {a, b, why, rule}); }
  void AddPin(uint32_t node, ir::DeviceId device, SourceLoc loc, PinSource source, uint32_t id, bool on_device = false);
  // on_device or device_copy (compared by symbol: asked several times per binding).
  bool IsMove(ir::BindingId b) const {
    const ir::Expr& e = m_.bindings[b].expr;
    return e.kind == ir::ExprKind::kOpCall && e.op != ir::kNoSymbol && (e.op == on_device_ || e.op == device_copy_);
  }
  // An op whose operands are the host's (pinned elsewhere, no constraint here). Remembers the last
  // op asked about: programs repeat an op in long runs.
  bool IsHostOp(ir::Symbol op) const;
  // A move that nothing reads (directly or through other such moves) constrains nothing: the
  // planner drops it before collecting (docs/planner.md, "Unused moves").
  void MarkReadMoves();
  // The return edges, then each binding's in id order. The first pass (no `only`) also settles the
  // devices and records the pins.
  void Collect(EdgeSink& sink, const std::vector<bool>* only);
  // Whether binding b's edges may have a side among `nodes`: an op call's join it to its operands.
  bool MayTouch(ir::BindingId b, const std::vector<bool>& nodes) const;
  // Makes binding b's device final (the first pass, in id order).
  void Settle(ir::BindingId b);
  void CollectBinding(ir::BindingId b);
  void CollectOpCall(ir::BindingId b, const ir::Expr& e, absl::Span<const ir::Operand> args);

  const ir::Module& m_;
  const Planned& plan_;
  uint32_t params_ = 0, bindings_ = 0;
  uint32_t settled_ = 0;  // bindings whose device is final
  ir::Symbol on_device_ = ir::kNoSymbol, device_copy_ = ir::kNoSymbol;
  mutable ir::Symbol last_op_ = ir::kNoSymbol;
  mutable bool last_op_host_ = false;
  bool first_pass_ = true;
  EdgeSink* sink_ = nullptr;
  std::vector<ir::DeviceId> device_;  // in plan_.table; kNoDevice: none
  std::vector<bool> read_;            // by binding: something kept reads it
  mutable absl::flat_hash_map<std::pair<ir::DeviceId, ir::DeviceId>, bool> decides_;
  std::vector<Pin> pins_;
};

}  // namespace vdev::explain_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_CONSTRAINT_GRAPH_H_
