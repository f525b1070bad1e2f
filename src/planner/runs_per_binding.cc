// RunsPerBinding (internal/runs_per_binding.h): calls through the call graph, then the larger arm
// of every `if`, blocks taken innermost first.
#include "src/planner/internal/runs_per_binding.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace vdev::planner_internal {
namespace {

// How many times one run of @main calls each function: callers first through the call graph.
std::vector<double> CallsPerFunction(const ir::Module& m, const std::vector<ir::FuncId>& func_of) {
  const size_t nf = m.functions.size();
  std::vector<std::vector<ir::FuncId>> callees(nf);  // one entry per call site
  std::vector<int64_t> callers(nf, 0);
  for (ir::BindingId b = 0; b < m.bindings.size(); ++b) {
    const ir::Expr& e = m.bindings[b].expr;
    if (e.kind != ir::ExprKind::kCallGlobal || func_of[b] == ir::kNoFunc) continue;
    if (m.functions[e.func].kind != ir::FuncKind::kGlobal) continue;
    callees[func_of[b]].push_back(e.func);
    ++callers[e.func];
  }
  std::vector<double> calls(nf, 0);
  if (const ir::FuncId main = m.FindGlobal("main"); main != ir::kNoFunc) calls[main] = 1;
  std::vector<ir::FuncId> ready;  // every caller counted
  for (size_t f = 0; f < nf; ++f) {
    if (callers[f] == 0) ready.push_back(static_cast<ir::FuncId>(f));
  }
  while (!ready.empty()) {
    const ir::FuncId g = ready.back();
    ready.pop_back();
    for (ir::FuncId f : callees[g]) {
      calls[f] += calls[g];
      if (--callers[f] == 0) ready.push_back(f);
    }
  }
  return calls;
}

// The block that holds each block (the block of its `if`), or kNoBlock for a function's body.
ir::BlockId Parent(const ir::Module& m, ir::BlockId block) {
  const ir::BindingId owner = m.blocks[block].owner;
  return owner == ir::kNoBinding ? ir::kNoBlock : m.bindings[owner].block;
}

// Each block's nesting depth (0: a function's body), with an explicit stack.
std::vector<size_t> Depths(const ir::Module& m) {
  constexpr size_t kUnknown = SIZE_MAX;
  std::vector<size_t> depth(m.blocks.size(), kUnknown);
  std::vector<ir::BlockId> pending;
  for (ir::BlockId start = 0; start < m.blocks.size(); ++start) {
    for (ir::BlockId b = start; b != ir::kNoBlock && depth[b] == kUnknown; b = Parent(m, b)) pending.push_back(b);
    while (!pending.empty()) {
      const ir::BlockId b = pending.back();
      pending.pop_back();
      const ir::BlockId parent = Parent(m, b);
      depth[b] = parent == ir::kNoBlock ? 0 : depth[parent] + 1;
    }
  }
  return depth;
}

}  // namespace

std::vector<double> RunsPerBinding(const ir::Module& m, const std::function<double(ir::BindingId)>& own_cost) {
  std::vector<ir::FuncId> func_of(m.bindings.size(), ir::kNoFunc);
  for (const ir::Block& block : m.blocks) {
    for (ir::BindingId b : block.bindings) func_of[b] = block.func;
  }
  const std::vector<double> calls = CallsPerFunction(m, func_of);
  const std::vector<size_t> depth = Depths(m);
  std::vector<ir::BlockId> order(m.blocks.size());  // innermost first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](ir::BlockId a, ir::BlockId b) { return depth[a] > depth[b]; });
  // Each block's cost: its bindings' own and, for each `if` in it, its larger arm's (computed before).
  std::vector<double> cost(m.blocks.size(), 0);
  for (ir::BlockId block : order) {
    for (ir::BindingId b : m.blocks[block].bindings) {
      const ir::Expr& e = m.bindings[b].expr;
      cost[block] += own_cost(b);
      if (e.kind == ir::ExprKind::kIf) cost[block] += std::max(cost[e.then_block], cost[e.else_block]);
    }
  }
  // An arm runs where its `if` runs and it is the larger; outermost first.
  std::vector<bool> runs_block(m.blocks.size(), true);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::BlockId block = *it;
    const ir::BindingId owner = m.blocks[block].owner;
    if (owner == ir::kNoBinding) continue;
    const ir::Expr& e = m.bindings[owner].expr;
    const bool larger =
        block == e.then_block ? cost[e.then_block] >= cost[e.else_block] : cost[e.else_block] > cost[e.then_block];
    runs_block[block] = larger && runs_block[m.bindings[owner].block];
  }
  std::vector<double> runs(m.bindings.size(), 1);
  for (size_t b = 0; b < runs.size(); ++b) {
    const ir::FuncId f = func_of[b];
    if (f != ir::kNoFunc && m.functions[f].kind == ir::FuncKind::kGlobal && calls[f] > 1) runs[b] = calls[f];
    const ir::BlockId block = m.bindings[b].block;
    if (block != ir::kNoBlock && block < runs_block.size() && !runs_block[block]) runs[b] = 0;
  }
  return runs;
}

}  // namespace vdev::planner_internal
