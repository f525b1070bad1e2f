// AnnotationSpreadWarnings (vdev/planner/plan_explain.h): a union-find over the constraints that
// held (internal/constraint_graph.h) gives the values each annotation carries with it; a
// breadth-first search from the annotation names the first constraints it spread through.
//
// No edge list is stored: the union is made as collection hands out the edges (a node's device is
// final once collection has reached it; the few edges to a later binding wait), and the search
// gathers the edges it needs in another collection pass, restricted to the nodes it is about to
// visit. A million-binding program's two million edges (32 MB of fresh memory) are never held.
#include <deque>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/planner/internal/constraint_graph.h"
#include "vdev/planner/plan_explain.h"

namespace vdev {
namespace {

using explain_internal::ConstraintGraph;
using explain_internal::Decides;
using explain_internal::Edge;
using explain_internal::Pin;
using explain_internal::Planned;
using explain_internal::Rule;

// Union-find over the constraints that held: each class is a set of values on one device.
class Unions : public explain_internal::EdgeSink {
 public:
  explicit Unions(size_t nodes) : parent_(nodes) { std::iota(parent_.begin(), parent_.end(), 0u); }

  void Add(const ConstraintGraph& graph, const Edge& e) override {
    if (!graph.Settled(e.a) || !graph.Settled(e.b)) return waiting_.push_back(e);
    if (graph.Holds(e)) parent_[Find(e.a)] = Find(e.b);
  }
  // Unites the edges that waited for a later binding's device.
  void Finish(const ConstraintGraph& graph) {
    for (const Edge& e : waiting_)
      if (graph.Holds(e)) parent_[Find(e.a)] = Find(e.b);
    waiting_ = std::vector<Edge>();
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }

 private:
  std::vector<uint32_t> parent_;
  std::vector<Edge> waiting_;
};

// The held edges with a side among the marked nodes, in collection order.
class Incident : public explain_internal::EdgeSink {
 public:
  explicit Incident(const std::vector<bool>& marked) : marked_(marked) {}
  void Add(const ConstraintGraph& graph, const Edge& e) override {
    if ((marked_[e.a] || marked_[e.b]) && graph.Holds(e)) edges.push_back(e);
  }
  std::vector<Edge> edges;

 private:
  const std::vector<bool>& marked_;
};

// The first three constraints (by text) that `start`'s device spread through, nearest first. Each
// node's edges come from a collection pass over the whole program; one pass gathers them for every
// node waiting in the queue (the first, for the start and what it reads), and past kPassesBeforeAll
// passes for all nodes at once, so a search costs a few passes however far it goes.
std::vector<std::string> SpreadThrough(ConstraintGraph& graph, uint32_t start) {
  constexpr int kPassesBeforeAll = 4;
  std::vector<std::string> through;
  std::vector<bool> seen(graph.size(), false), gathered(graph.size(), false);
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> edges_of;  // gathered node → its edges, in order
  std::vector<Edge> edges;
  int passes = 0;
  std::deque<uint32_t> queue = {start};
  seen[start] = true;
  while (!queue.empty() && through.size() < 3) {
    const uint32_t node = queue.front();
    if (!gathered[node]) {
      if (++passes > kPassesBeforeAll) {
        gathered.assign(graph.size(), true);
      } else {
        for (uint32_t n : queue) gathered[n] = true;
        // The values the start reads are usually its first neighbours: one pass then serves both.
        if (passes == 1)
          for (uint32_t n : graph.Reads(start)) gathered[n] = true;
      }
      Incident incident(gathered);
      graph.Recollect(incident, gathered);
      edges = std::move(incident.edges);
      edges_of.clear();
      for (uint32_t i = 0; i < edges.size(); ++i) {
        if (gathered[edges[i].a]) edges_of[edges[i].a].push_back(i);
        if (edges[i].b != edges[i].a && gathered[edges[i].b]) edges_of[edges[i].b].push_back(i);
      }
    }
    queue.pop_front();
    auto it = edges_of.find(node);
    if (it == edges_of.end()) continue;
    for (uint32_t i : it->second) {
      const Edge& e = edges[i];
      const uint32_t other = e.a == node ? e.b : e.a;
      if (seen[other]) continue;
      seen[other] = true;
      queue.push_back(other);
      if (e.rule == Rule::kUncopied || through.size() == 3) continue;  // the annotation itself is no news
      if (std::string why = graph.Why(e); absl::c_find(through, why) == through.end())
        through.push_back(std::move(why));
    }
  }
  return through;
}

// Whether some on_device annotation names a device the default does not refine: only such an
// annotation can move values off it, and without one no graph is built (a large program pays one
// pass over its bindings).
bool AnnotatesOffDefault(const ir::Module& input, const VirtualDevice& default_device) {
  absl::flat_hash_map<ir::DeviceId, bool> off;  // by annotated device: not where the default puts it
  return absl::c_any_of(input.bindings, [&](const ir::Binding& b) {
    if (b.expr.kind != ir::ExprKind::kOpCall || input.OpName(b.expr) != "on_device") return false;
    absl::Span<const ir::Operand> args = input.Args(b.expr);
    if (args.size() < 2 || !args[1].is_device()) return false;
    auto [it, inserted] = off.try_emplace(args[1].index, false);
    if (inserted) it->second = !Decides(default_device, input.Device(args[1].index));
    return it->second;
  });
}

std::vector<Diagnostic> SpreadWarnings(const ir::Module& input, const Planned& planned,
                                       const VirtualDevice& default_device) {
  std::vector<Diagnostic> warnings;
  if (!AnnotatesOffDefault(input, default_device)) return warnings;
  Unions unions(ConstraintGraph::NodeCount(input, planned));
  ConstraintGraph graph(input, planned, unions);
  unions.Finish(graph);
  std::vector<uint32_t> count(graph.size(), 0);
  uint32_t total = 0;
  for (uint32_t n = 0; n < graph.size(); ++n)
    if (graph.IsCountedValue(n)) ++count[unions.Find(n)], ++total;
  absl::flat_hash_map<ir::DeviceId, bool> default_has;  // by planned device: the default's refinement
  auto DefaultHas = [&](ir::DeviceId d) {
    auto [it, inserted] = default_has.try_emplace(d, false);
    if (inserted) it->second = Decides(default_device, planned.table.Device(d));
    return it->second;
  };
  std::vector<bool> reported(graph.size(), false);
  for (const Pin& pin : graph.pins()) {
    const VirtualDevice* device = graph.Device(pin.node);
    const uint32_t root = unions.Find(pin.node);
    if (!pin.on_device || device == nullptr || reported[root] || !graph.PinDecides(pin, pin.node) ||
        DefaultHas(graph.DeviceId(pin.node)))
      continue;
    // What annotating a computation asks for: it and its operands. The warning is about the rest.
    if (2 * (count[root] - graph.Implied(pin)) <= total) continue;
    reported[root] = true;
    warnings.push_back(
        {Severity::kWarning, pin.loc,
         absl::StrCat(graph.What(pin), " puts ", count[root], " of the program's ", total, " values on ",
                      device->ToString(), " instead of the default ", default_device.ToString(),
                      ": they share a device with ", graph.Name(pin.node), " through ",
                      absl::StrJoin(SpreadThrough(graph, pin.node), ", "),
                      ", … (`vdev plan --explain VALUE` shows the chain for a value; docs/planner.md shows how to "
                      "pin one op)")});
  }
  return warnings;
}

}  // namespace

std::vector<Diagnostic> AnnotationSpreadWarnings(const ir::Module& input, const PlanResult& plan,
                                                 const VirtualDevice& default_device) {
  return SpreadWarnings(input, explain_internal::PlannedOf(plan), default_device);
}

std::vector<Diagnostic> AnnotationSpreadWarnings(PlanResult& plan, const VirtualDevice& default_device) {
  const explain_internal::InputInPlace in_place(plan);
  return SpreadWarnings(in_place.input(), in_place.planned(), default_device);
}

}  // namespace vdev
