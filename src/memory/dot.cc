// DOT writer for placed programs; see vdev/memory/dot.h.
#include "vdev/memory/dot.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace vdev {
namespace {

// Light fills that keep black labels readable; red is kept for copies.
constexpr absl::string_view kPalette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#ffff99",
                                          "#8dd3c7", "#bebada", "#80b1d3", "#fccde5", "#d9d9d9"};

std::string Quote(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

std::string WriteDot(const DotGraph& graph) {
  absl::flat_hash_map<std::string, std::string> colour_of;
  std::vector<std::string> devices;
  for (const DotNode& node : graph.nodes) {
    if (node.device.empty() || colour_of.contains(node.device)) continue;
    constexpr size_t kColours = sizeof(kPalette) / sizeof(kPalette[0]);
    colour_of[node.device] = std::string(kPalette[devices.size() % kColours]);
    devices.push_back(node.device);
  }
  std::string out = absl::StrCat("digraph ", Quote(graph.name), " {\n",
                                 "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
                                 "fontname=\"monospace\"];\n");
  for (const DotNode& node : graph.nodes) {
    absl::StrAppend(&out, "  ", Quote(node.id), " [label=", Quote(node.label));
    if (!node.device.empty()) {
      absl::StrAppend(&out, ", fillcolor=", Quote(colour_of[node.device]), ", tooltip=", Quote(node.device));
    }
    absl::StrAppend(&out, "];\n");
  }
  for (const DotEdge& edge : graph.edges) {
    absl::StrAppend(&out, "  ", Quote(edge.from), " -> ", Quote(edge.to));
    std::vector<std::string> attrs;
    if (!edge.label.empty()) attrs.push_back(absl::StrCat("label=", Quote(edge.label)));
    if (edge.is_copy) attrs.push_back("color=red, fontcolor=red, penwidth=2");
    if (!attrs.empty()) {
      absl::StrAppend(&out, " [");
      for (size_t i = 0; i < attrs.size(); ++i) absl::StrAppend(&out, i ? ", " : "", attrs[i]);
      absl::StrAppend(&out, "]");
    }
    absl::StrAppend(&out, ";\n");
  }
  if (!devices.empty()) {
    absl::StrAppend(&out, "  subgraph cluster_legend {\n    label=\"devices\";\n");
    for (size_t i = 0; i < devices.size(); ++i) {
      absl::StrAppend(&out, "    ", Quote(absl::StrCat("legend:", i)), " [label=", Quote(devices[i]),
                      ", fillcolor=", Quote(colour_of[devices[i]]), "];\n");
    }
    absl::StrAppend(&out, "  }\n");
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

}  // namespace vdev
