// LowerBound: sequential message passing on the local LP's dual, an exact integer bound from
// rounded messages, and the assignments decoded on the way (improved by ICM).
#include "src/planner/placement_bound.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

namespace vdev::planner_internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The model as the message passing sees it: self pairs folded into unary costs, each variable's
// allowed devices, and per variable its pairs with the side it is on (0: a, 1: b).
struct Graph {
  int d = 0;
  std::vector<std::vector<Cost>> unary;
  std::vector<std::vector<int>> allowed;
  std::vector<std::vector<std::pair<uint32_t, int>>> adj;
  std::vector<bool> self;  // by pair

  explicit Graph(const PlacementModel& m) : d(m.num_devices), unary(m.unary), adj(m.unary.size()) {
    self.assign(m.pairs.size(), false);
    for (uint32_t e = 0; e < m.pairs.size(); ++e) {
      const PlacementModel::Pair& p = m.pairs[e];
      if (p.a == p.b) {
        self[e] = true;
        for (int i = 0; i < d; ++i) {
          if (unary[p.a][i] != kForbidden) unary[p.a][i] += p.cost[i * d + i];
        }
        continue;
      }
      adj[p.a].push_back({e, 0});
      adj[p.b].push_back({e, 1});
    }
    allowed.resize(unary.size());
    for (size_t v = 0; v < unary.size(); ++v) {
      for (int i = 0; i < d; ++i) {
        if (unary[v][i] != kForbidden) allowed[v].push_back(i);
      }
    }
  }
  uint32_t Other(const PlacementModel& m, uint32_t e, int side) const {
    return side == 0 ? m.pairs[e].b : m.pairs[e].a;
  }
};

// Messages m[e][side][i]: the cost moved from pair e to its variable on `side` at device i.
class Messages {
 public:
  Messages(const PlacementModel& m, const Graph& g) : m_(m), g_(g), msg_(m.pairs.size() * 2 * g.d, 0.0) {}

  double& At(uint32_t e, int side, int i) { return msg_[(e * 2 + side) * g_.d + i]; }
  double At(uint32_t e, int side, int i) const { return msg_[(e * 2 + side) * g_.d + i]; }
  // pair'[e] with v (on `side`) at i and the other variable at j.
  double Pair(uint32_t e, int side, int i, int j) const {
    int a = side == 0 ? i : j;
    int b = side == 0 ? j : i;
    return static_cast<double>(m_.pairs[e].cost[a * g_.d + b]) - At(e, 0, a) - At(e, 1, b);
  }
  double Unary(uint32_t v, int i) const {
    double t = static_cast<double>(g_.unary[v][i]);
    for (auto [e, side] : g_.adj[v]) t += At(e, side, i);
    return t;
  }
  // Moves pair e's min-marginal onto its variable on `side`.
  void Collect(uint32_t v, uint32_t e, int side) {
    const std::vector<int>& other = g_.allowed[g_.Other(m_, e, side)];
    for (int i : g_.allowed[v]) {
      double low = kInf;
      for (int j : other) low = std::min(low, Pair(e, side, i, j));
      At(e, side, i) += low;
    }
  }
  // One pass in `forward` order: each variable collects from all its pairs, then spreads its cost
  // over the pairs to variables later in the pass, a 1/max(#later, #earlier) share each (TRW-S).
  void Pass(bool forward) {
    const size_t n = g_.unary.size();
    std::vector<double> theta(g_.d);
    for (size_t k = 0; k < n; ++k) {
      uint32_t v = static_cast<uint32_t>(forward ? k : n - 1 - k);
      int later = 0;
      int earlier = 0;
      for (auto [e, side] : g_.adj[v]) {
        Collect(v, e, side);
        uint32_t u = g_.Other(m_, e, side);
        ((u > v) == forward ? later : earlier) += 1;
      }
      if (later == 0) continue;
      for (int i : g_.allowed[v]) theta[i] = Unary(v, i);
      const double share = 1.0 / std::max(later, earlier);
      for (auto [e, side] : g_.adj[v]) {
        uint32_t u = g_.Other(m_, e, side);
        if ((u > v) != forward) continue;
        for (int i : g_.allowed[v]) At(e, side, i) -= share * theta[i];
      }
    }
  }
  double Bound() const {
    double total = 0;
    for (uint32_t v = 0; v < g_.unary.size(); ++v) {
      double low = kInf;
      for (int i : g_.allowed[v]) low = std::min(low, Unary(v, i));
      total += low;
    }
    for (uint32_t e = 0; e < m_.pairs.size(); ++e) {
      if (g_.self[e]) continue;
      double low = kInf;
      for (int i : g_.allowed[m_.pairs[e].a]) {
        for (int j : g_.allowed[m_.pairs[e].b]) low = std::min(low, Pair(e, 0, i, j));
      }
      total += low;
    }
    return total;
  }
  const std::vector<double>& raw() const { return msg_; }
  void set_raw(const std::vector<double>& raw) { msg_ = raw; }

 private:
  const PlacementModel& m_;
  const Graph& g_;
  std::vector<double> msg_;
};

// Exact integer costs from rounded messages: the identity Σ unary' + Σ pair' = cost holds exactly.
DualBound Integral(const PlacementModel& m, const Graph& g, const Messages& msg) {
  const int d = g.d;
  DualBound out;
  auto rounded = [&](uint32_t e, int side, int i) { return static_cast<Cost>(std::llround(msg.At(e, side, i))); };
  out.unary = g.unary;
  out.pair.resize(m.pairs.size());
  for (uint32_t v = 0; v < g.unary.size(); ++v) {
    for (int i : g.allowed[v]) {
      for (auto [e, side] : g.adj[v]) out.unary[v][i] += rounded(e, side, i);
    }
    Cost low = kForbidden;
    for (int i : g.allowed[v]) low = std::min(low, out.unary[v][i]);
    out.bound += low;
  }
  for (uint32_t e = 0; e < m.pairs.size(); ++e) {
    const PlacementModel::Pair& p = m.pairs[e];
    out.pair[e].assign(d * d, 0);
    if (g.self[e]) continue;
    Cost low = kForbidden;
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) {
        Cost c = p.cost[i * d + j] - rounded(e, 0, i) - rounded(e, 1, j);
        out.pair[e][i * d + j] = c;
        bool allowed = g.unary[p.a][i] != kForbidden && g.unary[p.b][j] != kForbidden;
        if (allowed) low = std::min(low, c);
      }
    }
    out.bound += low;
  }
  return out;
}

// Greedy decoding in variable order: each variable takes the device that is cheapest given the
// devices already chosen and, for neighbours not yet chosen, their best reply.
std::vector<int> Decode(const PlacementModel& m, const Graph& g, const Messages& msg) {
  const size_t n = g.unary.size();
  std::vector<int> x(n, -1);
  for (uint32_t v = 0; v < n; ++v) {
    double best = kInf;
    for (int i : g.allowed[v]) {
      double score = msg.Unary(v, i);
      for (auto [e, side] : g.adj[v]) {
        uint32_t u = g.Other(m, e, side);
        if (x[u] >= 0) {
          score += msg.Pair(e, side, i, x[u]);
        } else {
          double low = kInf;
          for (int j : g.allowed[u]) low = std::min(low, msg.Pair(e, side, i, j));
          score += low;
        }
      }
      if (score < best || x[v] < 0) best = score, x[v] = i;
    }
  }
  return x;
}

// Iterated conditional modes on the model's own costs: moves one variable at a time to its cheapest
// device given its neighbours', until no move lowers the cost.
void Improve(const PlacementModel& m, const Graph& g, std::vector<int>& x) {
  const int d = g.d;
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool moved = false;
    for (uint32_t v = 0; v < g.unary.size(); ++v) {
      Cost best = kForbidden;
      int best_i = x[v];
      for (int i : g.allowed[v]) {
        Cost c = g.unary[v][i];
        for (auto [e, side] : g.adj[v]) {
          int j = x[g.Other(m, e, side)];
          c += side == 0 ? m.pairs[e].cost[i * d + j] : m.pairs[e].cost[j * d + i];
        }
        if (c < best || (c == best && i == x[v])) best = c, best_i = i;
      }
      if (best_i != x[v]) x[v] = best_i, moved = true;
    }
    if (!moved) return;
  }
}

}  // namespace

DualBound LowerBound(const PlacementModel& model, const BoundOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Graph g(model);
  Messages msg(model, g);
  double best = -kInf;
  std::vector<double> best_raw = msg.raw();
  int since_better = 0;
  int iterations = 0;
  for (; iterations < options.max_iterations; ++iterations) {
    msg.Pass(true);
    msg.Pass(false);
    double bound = msg.Bound();
    if (bound > best + std::max(0.5, 1e-10 * std::abs(best))) {
      since_better = 0;
    } else if (++since_better >= 30) {
      break;
    }
    if (bound > best) best = bound, best_raw = msg.raw();
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > options.seconds) break;
  }
  msg.set_raw(best_raw);
  DualBound out = Integral(model, g, msg);
  out.iterations = iterations;
  return out;
}

std::vector<std::vector<Cost>> DevicePrices(const PlacementModel& model, const DualBound& dual) {
  const int d = model.num_devices;
  Graph g(model);
  std::vector<Cost> pair_low(model.pairs.size(), 0);
  for (uint32_t e = 0; e < model.pairs.size(); ++e) {
    if (g.self[e]) continue;
    Cost low = kForbidden;
    for (int i : g.allowed[model.pairs[e].a]) {
      for (int j : g.allowed[model.pairs[e].b]) low = std::min(low, dual.pair[e][i * d + j]);
    }
    pair_low[e] = low;
  }
  std::vector<std::vector<Cost>> price(model.unary.size(), std::vector<Cost>(d, kForbidden));
  for (uint32_t v = 0; v < model.unary.size(); ++v) {
    Cost low = kForbidden;
    for (int i : g.allowed[v]) low = std::min(low, dual.unary[v][i]);
    for (int i : g.allowed[v]) {
      Cost p = dual.bound - low + dual.unary[v][i];
      for (auto [e, side] : g.adj[v]) {
        Cost edge = kForbidden;
        for (int j : g.allowed[g.Other(model, e, side)]) {
          edge = std::min(edge, side == 0 ? dual.pair[e][i * d + j] : dual.pair[e][j * d + i]);
        }
        p += edge - pair_low[e];
      }
      price[v][i] = p;
    }
  }
  return price;
}

std::vector<int> HeuristicAssignment(const PlacementModel& model, const DualBound& dual) {
  // Decoding the integer reparameterisation: messages of zero over the reparameterised model.
  PlacementModel reparameterised;
  reparameterised.num_devices = model.num_devices;
  reparameterised.unary = dual.unary;
  reparameterised.pairs = model.pairs;
  for (size_t e = 0; e < model.pairs.size(); ++e) reparameterised.pairs[e].cost = dual.pair[e];
  Graph g(reparameterised);
  Messages none(reparameterised, g);
  std::vector<int> x = Decode(reparameterised, g, none);
  Improve(reparameterised, g, x);
  return x;
}

// The component's model reparameterised (placement_bound.h) and shifted to costs >= 0, so that its
// cost is the component's minus dual.bound, without the devices whose price reaches `upper`.
// false when some variable keeps no device: nothing costs less than `upper`.
bool RestrictByPrices(const PlacementModel& sub, const DualBound& dual, Cost upper, PlacementModel& out, bool& pruned) {
  const int d = sub.num_devices;
  std::vector<std::vector<Cost>> price = DevicePrices(sub, dual);
  out.num_devices = d;
  out.unary = dual.unary;
  for (size_t v = 0; v < sub.unary.size(); ++v) {
    Cost low = kForbidden;
    for (int i = 0; i < d; ++i) {
      if (sub.unary[v][i] != kForbidden) low = std::min(low, dual.unary[v][i]);
    }
    bool any = false;
    for (int i = 0; i < d; ++i) {
      if (sub.unary[v][i] == kForbidden) continue;
      if (price[v][i] >= upper) {
        out.unary[v][i] = kForbidden;
        pruned = true;
      } else {
        out.unary[v][i] -= low;
        any = true;
      }
    }
    if (!any) return false;
  }
  for (size_t e = 0; e < sub.pairs.size(); ++e) {
    const PlacementModel::Pair& p = sub.pairs[e];
    auto allowed = [&](uint32_t v, int i) { return sub.unary[v][i] != kForbidden; };
    Cost low = kForbidden;
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) {
        if (allowed(p.a, i) && allowed(p.b, j)) low = std::min(low, dual.pair[e][i * d + j]);
      }
    }
    PlacementModel::Pair shifted{p.a, p.b, std::vector<Cost>(d * d, 0)};
    for (int i = 0; i < d; ++i) {
      for (int j = 0; j < d; ++j) {
        if (allowed(p.a, i) && allowed(p.b, j)) shifted.cost[i * d + j] = dual.pair[e][i * d + j] - low;
      }
    }
    out.pairs.push_back(std::move(shifted));
  }
  return true;
}

}  // namespace vdev::planner_internal
