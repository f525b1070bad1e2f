// The shrinking of SolvePlacement (internal/reduced_placement.h): the reduced problem, fixed
// variables folded into their neighbours, leaves and links of chains eliminated exactly.
#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/planner/internal/reduced_placement.h"

namespace vdev::planner_internal {
namespace {

// Eliminates v, whose live pairs are e1 (to u) and e2 (to w): a pair u-w of v's best cost.
void EliminateLink(Reduced& r, uint32_t v, uint32_t e1, uint32_t e2, std::vector<Elimination>& eliminated) {
  const int d = r.d;
  const PlacementModel::Pair p1 = r.pairs[e1];
  const PlacementModel::Pair p2 = r.pairs[e2];
  uint32_t u = r.Other(p1, v);
  uint32_t w = r.Other(p2, v);
  Elimination elim{v, u, w, std::vector<int>(d * d, 0)};
  std::vector<Cost> table(d * d, kForbidden);
  if (r.keep_local_costs) elim.local.assign(d * d * d, kForbidden);
  for (int iu = 0; iu < d; ++iu) {
    for (int iw = 0; iw < d; ++iw) {
      for (int i = 0; i < d; ++i) {
        Cost c = Add(Add(r.unary[v][i], r.PairCost(p1, v, i, iu)), r.PairCost(p2, v, i, iw));
        if (r.keep_local_costs) elim.local[(iu * d + iw) * d + i] = c;
        if (c < table[iu * d + iw]) table[iu * d + iw] = c, elim.best[iu * d + iw] = i;
      }
    }
  }
  r.pair_live[e1] = false;
  r.pair_live[e2] = false;
  // Into the live pair u-w if there is one, else a new one (kept oriented u < w).
  uint32_t existing = UINT32_MAX;
  for (uint32_t e : r.incident[u]) {
    if (r.pair_live[e] && r.Other(r.pairs[e], u) == w) existing = e;
  }
  if (existing == UINT32_MAX) {
    existing = static_cast<uint32_t>(r.pairs.size());
    r.pairs.push_back({std::min(u, w), std::max(u, w), std::vector<Cost>(d * d, 0)});
    r.pair_live.push_back(true);
    r.incident[u].push_back(existing);
    r.incident[w].push_back(existing);
  }
  PlacementModel::Pair& target = r.pairs[existing];
  for (int iu = 0; iu < d; ++iu) {
    for (int iw = 0; iw < d; ++iw) {
      Cost& slot = target.a == u ? target.cost[iu * d + iw] : target.cost[iw * d + iu];
      slot = Add(slot, table[iu * d + iw]);
    }
  }
  eliminated.push_back(std::move(elim));
}

// Leaf v, whose one live pair is `live`: its best device for each device of its neighbour becomes
// the neighbour's cost. Returns the neighbour.
uint32_t EliminateLeaf(Reduced& r, uint32_t v, uint32_t live, std::vector<Elimination>& eliminated) {
  const int d = r.d;
  const PlacementModel::Pair& p = r.pairs[live];
  uint32_t u = r.Other(p, v);
  Elimination elim{v, u, UINT32_MAX, std::vector<int>(d, 0)};
  if (r.keep_local_costs) elim.local.assign(d * d, kForbidden);
  for (int j = 0; j < d; ++j) {
    Cost best = kForbidden;
    for (int i = 0; i < d; ++i) {
      Cost c = Add(r.unary[v][i], r.PairCost(p, v, i, j));
      if (r.keep_local_costs) elim.local[j * d + i] = c;
      if (c < best) best = c, elim.best[j] = i;
    }
    r.unary[u][j] = Add(r.unary[u][j], best);
  }
  r.pair_live[live] = false;
  eliminated.push_back(std::move(elim));
  return u;
}

}  // namespace

// The reduced problem's start: the model's costs, parallel pairs merged and oriented a < b (a pair
// of a variable with itself is a unary cost), the cuts naming each variable.
absl::StatusOr<Reduced> Reduce(const PlacementModel& model) {
  const size_t n = model.unary.size();
  const int d = model.num_devices;
  Reduced r;
  r.d = d;
  r.unary = model.unary;
  r.fixed.assign(n, -1);
  r.done.assign(n, false);
  r.incident.resize(n);
  r.cuts_of.resize(n);
  for (uint32_t c = 0; c < model.capacity.size(); ++c) {
    for (const PlacementModel::CapacityCut::Term& t : model.capacity[c].terms) {
      for (uint32_t v : {t.var, t.other}) {
        if (v != UINT32_MAX && (r.cuts_of[v].empty() || r.cuts_of[v].back() != c)) r.cuts_of[v].push_back(c);
      }
    }
  }
  for (size_t v = 0; v < n; ++v) {
    if (std::all_of(r.unary[v].begin(), r.unary[v].end(), [](Cost c) { return c == kForbidden; })) {
      return absl::InvalidArgumentError(absl::StrCat("placement: variable ", v, " has no allowed device"));
    }
  }
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, size_t> pair_index;
  for (const PlacementModel::Pair& p : model.pairs) {
    if (p.a == p.b) {
      for (int i = 0; i < d; ++i) r.unary[p.a][i] = Add(r.unary[p.a][i], p.cost[i * d + i]);
      continue;
    }
    uint32_t a = std::min(p.a, p.b);
    uint32_t b = std::max(p.a, p.b);
    auto [it, added] = pair_index.try_emplace({a, b}, r.pairs.size());
    if (added) {
      r.pairs.push_back({a, b, std::vector<Cost>(d * d, 0)});
      r.pair_live.push_back(true);
      r.incident[a].push_back(it->second);
      r.incident[b].push_back(it->second);
    }
    std::vector<Cost>& cost = r.pairs[it->second].cost;
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) cost[i * d + j] += p.a == a ? p.cost[i * d + j] : p.cost[j * d + i];
    }
  }
  return r;
}

// Variables with one allowed device are fixed; their pairs become their neighbours' costs.
void FixSingleDeviceVariables(Reduced& r) {
  const int d = r.d;
  for (uint32_t v = 0; v < r.unary.size(); ++v) {
    int allowed = -1;
    int count = 0;
    for (int i = 0; i < d; ++i) {
      if (r.unary[v][i] != kForbidden) allowed = i, ++count;
    }
    if (count != 1) continue;
    r.fixed[v] = allowed;
    r.done[v] = true;
  }
  for (size_t e = 0; e < r.pairs.size(); ++e) {
    const PlacementModel::Pair& p = r.pairs[e];
    for (auto [v, u] : {std::pair{p.a, p.b}, std::pair{p.b, p.a}}) {
      if (!r.pair_live[e] || r.fixed[v] < 0) continue;
      if (r.fixed[u] >= 0) {
        r.unary[v][r.fixed[v]] = Add(r.unary[v][r.fixed[v]], r.PairCost(p, v, r.fixed[v], r.fixed[u]));
      } else {
        for (int j = 0; j < d; ++j) r.unary[u][j] = Add(r.unary[u][j], r.PairCost(p, v, r.fixed[v], j));
      }
      r.pair_live[e] = false;
    }
  }
}

// Leaves and links of chains are eliminated exactly, repeatedly: a leaf into its neighbour's costs,
// a link into a pair between its two neighbours (merged with theirs, if any). Isolated variables
// get their cheapest device in `device`.
void EliminateLeavesAndLinks(Reduced& r, std::vector<Elimination>& eliminated, std::vector<int>& device) {
  std::vector<uint32_t> work;
  auto eliminable = [&](uint32_t v) { return !r.done[v] && r.cuts_of[v].empty() && r.Degree(v) <= 2; };
  for (uint32_t v = 0; v < r.unary.size(); ++v) {
    if (eliminable(v)) work.push_back(v);
  }
  while (!work.empty()) {
    uint32_t v = work.back();
    work.pop_back();
    if (!eliminable(v)) continue;
    r.done[v] = true;
    uint32_t live = UINT32_MAX;
    uint32_t second = UINT32_MAX;
    for (uint32_t e : r.incident[v]) {
      if (!r.pair_live[e]) continue;
      (live == UINT32_MAX ? live : second) = e;
    }
    if (second != UINT32_MAX) {
      EliminateLink(r, v, live, second, eliminated);
      for (uint32_t u : {eliminated.back().u, eliminated.back().w}) {
        if (eliminable(u)) work.push_back(u);
      }
    } else if (live == UINT32_MAX) {  // isolated: its cheapest device
      device[v] = static_cast<int>(std::min_element(r.unary[v].begin(), r.unary[v].end()) - r.unary[v].begin());
    } else if (uint32_t u = EliminateLeaf(r, v, live, eliminated); eliminable(u)) {
      work.push_back(u);
    }
  }
}

}  // namespace vdev::planner_internal
