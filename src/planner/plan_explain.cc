// ExplainPlacement (vdev/planner/plan_explain.h): a breadth-first search over the constraint graph
// (internal/constraint_graph.h) from a value finds the nearest pin that decides its device.
#include "vdev/planner/plan_explain.h"

#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "src/planner/internal/constraint_graph.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

using explain_internal::ConstraintGraph;
using explain_internal::Edge;
using explain_internal::Pin;
using explain_internal::Planned;

// Every edge, stored. ForEachEdgeOf(node) scans the list for each of a search's first nodes instead
// of building adjacency lists for the whole program (a million-binding program's would be 25 MB to
// fill); past kScansBeforeAdjacency scans the lists are built.
class EdgeList : public explain_internal::EdgeSink {
 public:
  void Add(const ConstraintGraph&, const Edge& e) override { edges_.push_back(e); }
  const Edge& edge(uint32_t i) const { return edges_[i]; }

  // Calls f(i) for each edge i of `node` that held, in edge order (a loop on the node twice).
  template <typename F>
  void ForEachEdgeOf(const ConstraintGraph& graph, uint32_t node, F&& f) {
    if (offset_.empty() && scans_ < kScansBeforeAdjacency) {
      ++scans_;
      for (uint32_t i = 0; i < edges_.size(); ++i) {
        const Edge& e = edges_[i];
        if ((e.a != node && e.b != node) || !graph.Holds(e)) continue;
        if (e.a == node) f(i);
        if (e.b == node) f(i);
      }
      return;
    }
    if (offset_.empty()) BuildAdjacency(graph);
    for (uint32_t k = offset_[node]; k < offset_[node + 1]; ++k) f(incident_[k]);
  }

 private:
  void BuildAdjacency(const ConstraintGraph& graph) {
    offset_.assign(graph.size() + 1, 0);
    for (const Edge& e : edges_)
      if (graph.Holds(e)) ++offset_[e.a + 1], ++offset_[e.b + 1];
    std::partial_sum(offset_.begin(), offset_.end(), offset_.begin());
    incident_.resize(offset_.back());
    std::vector<uint32_t> fill(offset_.begin(), offset_.end() - 1);
    for (uint32_t i = 0; i < edges_.size(); ++i)
      if (graph.Holds(edges_[i])) incident_[fill[edges_[i].a]++] = i, incident_[fill[edges_[i].b]++] = i;
  }

  std::vector<Edge> edges_;
  static constexpr int kScansBeforeAdjacency = 4;
  int scans_ = 0;
  std::vector<uint32_t> offset_, incident_;  // built on demand: edges of a node, by node
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
  EdgeList edges;
  const ConstraintGraph graph(input, planned, edges);
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
        const Edge& e = edges.edge(via[n]);
        const uint32_t next = e.a == n ? e.b : e.a;
        absl::StrAppend(&out, "  ", graph.Why(e), ": ", RuleText(e.rule), ", so ", graph.Name(next), " is there too\n");
        n = next;
      }
      return out;
    }
    edges.ForEachEdgeOf(graph, node, [&](uint32_t i) {
      const Edge& e = edges.edge(i);
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

}  // namespace

absl::StatusOr<std::string> ExplainPlacement(const ir::Module& input, const PlanResult& plan, absl::string_view value) {
  return Explain(input, explain_internal::PlannedOf(plan), value);
}

absl::StatusOr<std::string> ExplainPlacement(PlanResult& plan, absl::string_view value) {
  const explain_internal::InputInPlace in_place(plan);
  return Explain(in_place.input(), in_place.planned(), value);
}

}  // namespace vdev
