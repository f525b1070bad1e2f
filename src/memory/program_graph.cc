// The DOT graph of a device-planned module; see vdev/memory/dot.h.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir_walk.h"
#include "vdev/memory/dot.h"

namespace vdev {
namespace {

class GraphBuilder {
 public:
  GraphBuilder(const ir::Module& m, absl::Span<const ir::DeviceId> devices) : m_(m), devices_(devices) {}

  DotGraph Build() {
    for (ir::FuncId f : m_.items) {
      const ir::Function& fn = m_.functions[f];
      if (fn.kind != ir::FuncKind::kGlobal || fn.body == ir::kNoBlock) continue;
      AddFunction(f);
    }
    return std::move(graph_);
  }

 private:
  std::string DeviceText(ir::DeviceId d) const { return d == ir::kNoDevice ? "" : m_.Device(d).ToString(); }
  ir::DeviceId BindingDevice(ir::BindingId b) const { return b < devices_.size() ? devices_[b] : ir::kNoDevice; }

  std::string NodeId(absl::string_view fn, ir::ValueRef v) const {
    return absl::StrCat(fn, "/%", m_.Name(m_.ValueName(v)));
  }

  // A short label: the op or callee, or the kind of expression.
  std::string ExprLabel(const ir::Expr& e) const {
    switch (e.kind) {
      case ir::ExprKind::kOpCall: return std::string(m_.OpName(e));
      case ir::ExprKind::kCallGlobal: return absl::StrCat("@", m_.Name(e.op), "(…)");
      case ir::ExprKind::kCallValue: return "call";
      case ir::ExprKind::kTuple: return "tuple";
      case ir::ExprKind::kProject: return absl::StrCat("project .", e.index);
      case ir::ExprKind::kIf: return "if";
      case ir::ExprKind::kFn: return "fn";
      case ir::ExprKind::kConst: return "const";
      case ir::ExprKind::kAlias: return "alias";
    }
    return "";
  }

  bool IsCopy(ir::ValueRef v) const {
    return v.is_binding() && m_.bindings[v.index].expr.kind == ir::ExprKind::kOpCall &&
           m_.OpName(m_.bindings[v.index].expr) == "device_copy" && m_.bindings[v.index].expr.args.count > 0;
  }

  // An edge from `v` into node `to`; a use of a copy becomes a red edge from what it copies (through
  // chains of copies) labelled with the outermost source and the copy's destination.
  void AddUse(absl::string_view fn, ir::ValueRef v, const std::string& to) {
    if (!IsCopy(v)) {
      if (nodes_.contains(v)) graph_.edges.push_back({NodeId(fn, v), to, "", false});
      return;
    }
    const std::string dst = DeviceText(BindingDevice(v.index));
    ir::ValueRef source = v;
    while (IsCopy(source)) {
      const ir::Operand& o = m_.Args(m_.bindings[source.index].expr)[0];
      if (!o.is_local()) break;
      source = o.value;
    }
    if (!nodes_.contains(source)) return;
    graph_.edges.push_back({NodeId(fn, source), to, absl::StrCat(nodes_[source], " -> ", dst), true});
  }

  void AddUses(absl::string_view fn, const ir::Expr& e, const std::string& to) {
    ir::ForEachLocalRead(m_, e, [&](const ir::Operand& o) { AddUse(fn, o.value, to); });
    // Values read inside nested blocks are drawn as uses by the binding that holds the block.
    for (const ir::Operand& o : NestedLocalOperands(m_, e)) {
      if (nodes_.contains(o.value)) AddUse(fn, o.value, to);
    }
  }

  void AddFunction(ir::FuncId f) {
    const ir::Function& fn = m_.functions[f];
    const std::string name(m_.Name(fn.name));
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      ir::ValueRef v = ir::ValueRef::Param(p);
      const std::string device = DeviceText(m_.params[p].device);
      nodes_[v] = device;
      graph_.nodes.push_back({NodeId(name, v), absl::StrCat("@", name, " %", m_.Name(m_.params[p].name)), device});
    }
    for (ir::BindingId b : m_.blocks[fn.body].bindings) {
      ir::ValueRef v = ir::ValueRef::Binding(b);
      const ir::Expr& e = m_.bindings[b].expr;
      if (IsCopy(v)) {
        nodes_[v] = DeviceText(BindingDevice(b));
        continue;
      }
      const std::string id = NodeId(name, v);
      const std::string device = DeviceText(BindingDevice(b));
      const std::string label = absl::StrCat("%", m_.Name(m_.bindings[b].name), " = ", ExprLabel(e));
      graph_.nodes.push_back({id, label, device});
      AddUses(name, e, id);
      nodes_[v] = device;
    }
    const std::string ret = absl::StrCat(name, "/return");
    graph_.nodes.push_back({ret, absl::StrCat("@", name, " return"), DeviceText(fn.result_device)});
    const ir::Operand& result = m_.blocks[fn.body].result;
    if (result.is_local()) AddUse(name, result.value, ret);
  }

  const ir::Module& m_;
  absl::Span<const ir::DeviceId> devices_;
  // Values drawn so far (or copies resolved to a source) and their device text.
  absl::flat_hash_map<ir::ValueRef, std::string> nodes_;
  DotGraph graph_;
};

}  // namespace

DotGraph PlannedProgramGraph(const ir::Module& module, absl::Span<const ir::DeviceId> binding_devices) {
  return GraphBuilder(module, binding_devices).Build();
}

}  // namespace vdev
