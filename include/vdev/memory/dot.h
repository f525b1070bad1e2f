// Graphviz (DOT) rendering of a placed program: nodes coloured by device, copies as red edges.
//
// The graph is abstract so any pass can draw what it placed; `vdev lower --dot` builds it from the
// planned program (one node per parameter and binding, one edge per use; a `device_copy` is drawn
// as a red edge from the copied value to each consumer, labelled with the two devices).
// Example:
//   DotGraph g;
//   g.nodes = {{"x", "%x", "cuda:0"}, {"0", "%0 = add", "cpu:0"}};
//   g.edges = {{"x", "0", "cuda:0 -> cpu:0", true}};
//   std::string text = WriteDot(g);   // `digraph vdev { ... }`, render with `dot -Tsvg`
#ifndef VDEV_DOT_H_
#define VDEV_DOT_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "vdev/ir/ir.h"

namespace vdev {

struct DotNode {
  std::string id;      // unique within the graph
  std::string label;   // shown text
  std::string device;  // nodes with the same device string share a fill colour; "" = white
};

struct DotEdge {
  std::string from;
  std::string to;
  std::string label;     // may be empty
  bool is_copy = false;  // drawn red and bold
};

struct DotGraph {
  std::string name = "vdev";
  std::vector<DotNode> nodes;
  std::vector<DotEdge> edges;
};

// Renders `graph` as a DOT digraph with a legend of device colours. Colours are assigned by order of
// first appearance of each device, so the output is deterministic. Strings are escaped.
std::string WriteDot(const DotGraph& graph);

// The graph of a device-planned module (PlanResult::module and ::binding_devices): a node per
// parameter, top-level binding and return of each global function, coloured by device; an edge per
// use. A `device_copy` is not a node: each use of it is a red edge from the copied value, labelled
// `src -> dst`. Nested blocks (if arms, local functions) are drawn as their binding's node.
DotGraph PlannedProgramGraph(const ir::Module& module, absl::Span<const ir::DeviceId> binding_devices);

}  // namespace vdev

#endif  // VDEV_DOT_H_
