// SolvePlacement: shrink (fixed variables, leaves, chain links), then one Z3 MaxSAT problem per
// component, with the capacity cuts as hard linear constraints.
#include "src/planner/placement_solver.h"

#include <z3++.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace vdev::planner_internal {
namespace {

Cost Add(Cost a, Cost b) { return a == kForbidden || b == kForbidden ? kForbidden : a + b; }

// The reduced problem: pairs oriented a < b, parallel pairs merged, edges removable.
struct Reduced {
  int d = 0;
  std::vector<std::vector<Cost>> unary;
  std::vector<PlacementModel::Pair> pairs;
  std::vector<bool> pair_live;
  std::vector<std::vector<uint32_t>> incident;  // pair ids by variable (some dead)
  std::vector<int> fixed;                       // device, or -1
  std::vector<bool> done;                       // fixed, eliminated or solved
  std::vector<std::vector<uint32_t>> cuts_of;   // capacity cuts naming the variable (never eliminated)

  Cost PairCost(const PlacementModel::Pair& p, uint32_t v, int dv, int du) const {
    return p.a == v ? p.cost[dv * d + du] : p.cost[du * d + dv];
  }
  uint32_t Other(const PlacementModel::Pair& p, uint32_t v) const { return p.a == v ? p.b : p.a; }
  size_t Degree(uint32_t v) const {
    size_t n = 0;
    for (uint32_t e : incident[v]) n += pair_live[e] ? 1 : 0;
    return n;
  }
};

// A variable v eliminated into its neighbour u (a leaf) or its two neighbours u and w (a link of a
// chain): v's best device for each device of u (and of w: best[du * d + dw]).
struct Elimination {
  uint32_t v;
  uint32_t u;
  uint32_t w;  // UINT32_MAX for a leaf
  std::vector<int> best;
};

// Eliminates v, whose live pairs are e1 (to u) and e2 (to w): a pair u-w of v's best cost.
void EliminateLink(Reduced& r, uint32_t v, uint32_t e1, uint32_t e2, std::vector<Elimination>& eliminated) {
  const int d = r.d;
  const PlacementModel::Pair p1 = r.pairs[e1];
  const PlacementModel::Pair p2 = r.pairs[e2];
  uint32_t u = r.Other(p1, v);
  uint32_t w = r.Other(p2, v);
  Elimination elim{v, u, w, std::vector<int>(d * d, 0)};
  std::vector<Cost> table(d * d, kForbidden);
  for (int iu = 0; iu < d; ++iu) {
    for (int iw = 0; iw < d; ++iw) {
      for (int i = 0; i < d; ++i) {
        Cost c = Add(Add(r.unary[v][i], r.PairCost(p1, v, i, iu)), r.PairCost(p2, v, i, iw));
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

// Prints a progress line through `on_slow` once the solve it guards has run `after` seconds: from a
// watching thread while it runs, or, if that thread has not been scheduled by then, when it ends.
class SlowSolveWatch {
 public:
  SlowSolveWatch(const std::function<void(size_t)>& on_slow, size_t variables, double after)
      : on_slow_(on_slow), variables_(variables), after_(after), start_(std::chrono::steady_clock::now()) {
    if (!on_slow_) return;
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(after_), [this] { return done_; })) Report();
    });
  }
  ~SlowSolveWatch() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= after_) Report();
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Report() {  // under mutex_
    if (!reported_) on_slow_(variables_);
    reported_ = true;
  }
  const std::function<void(size_t)>& on_slow_;
  size_t variables_;
  double after_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool reported_ = false;
  std::thread thread_;
};

// One component in Z3: devices as an enumeration sort, unary and pair costs as soft constraints
// inside push()/pop() (check with assumptions returned non-optimal models), MaxRes.
absl::Status SolveComponent(const Reduced& r, const PlacementModel& problem, const std::vector<uint32_t>& vars,
                            double seconds_left, std::vector<int>& device, bool& optimal) {
  try {
    z3::context ctx;
    std::vector<std::string> names;
    for (int i = 0; i < r.d; ++i) names.push_back(absl::StrCat("d", i));
    std::vector<const char*> name_ptrs;
    for (const std::string& n : names) name_ptrs.push_back(n.c_str());
    z3::func_decl_vector consts(ctx);
    z3::func_decl_vector testers(ctx);
    z3::sort dev = ctx.enumeration_sort("Device", r.d, name_ptrs.data(), consts, testers);
    absl::flat_hash_map<uint32_t, size_t> index;
    std::vector<z3::expr> x;
    for (uint32_t v : vars) {
      index[v] = x.size();
      x.push_back(ctx.constant(absl::StrCat("x", v).c_str(), dev));
    }
    z3::optimize opt(ctx);
    z3::params params(ctx);
    params.set("maxsat_engine", ctx.str_symbol("maxres"));
    params.set("timeout", static_cast<unsigned>(std::max(1.0, seconds_left * 1000)));
    opt.set(params);
    opt.push();
    for (uint32_t v : vars) {
      const z3::expr& xv = x[index[v]];
      Cost low = kForbidden;
      for (int i = 0; i < r.d; ++i) low = std::min(low, r.unary[v][i]);
      for (int i = 0; i < r.d; ++i) {
        z3::expr is_i = xv == consts[i]();
        if (r.unary[v][i] == kForbidden) {
          opt.add(!is_i);
        } else if (r.unary[v][i] > low) {
          opt.add_soft(!is_i, std::to_string(r.unary[v][i] - low).c_str());
        }
      }
    }
    for (size_t e = 0; e < r.pairs.size(); ++e) {
      if (!r.pair_live[e] || !index.contains(r.pairs[e].a)) continue;
      const PlacementModel::Pair& p = r.pairs[e];
      const z3::expr& xa = x[index[p.a]];
      const z3::expr& xb = x[index[p.b]];
      for (int i = 0; i < r.d; ++i) {
        for (int j = 0; j < r.d; ++j) {
          Cost c = p.cost[i * r.d + j];
          if (c > 0) opt.add_soft(!(xa == consts[i]() && xb == consts[j]()), std::to_string(c).c_str());
        }
      }
    }
    // The capacity cuts naming this component's variables (the others in them are fixed).
    std::vector<bool> cut_added(problem.capacity.size(), false);
    for (uint32_t v : vars) {
      for (uint32_t c : r.cuts_of[v]) {
        if (cut_added[c]) continue;
        cut_added[c] = true;
        const PlacementModel::CapacityCut& cut = problem.capacity[c];
        auto on = [&](uint32_t var, bool want) -> z3::expr {
          if (r.fixed[var] >= 0) return ctx.bool_val((r.fixed[var] == cut.device) == want);
          z3::expr is_on = x[index.at(var)] == consts[cut.device]();
          return want ? is_on : !is_on;
        };
        z3::expr load = ctx.int_val(0);
        for (const PlacementModel::CapacityCut::Term& t : cut.terms) {
          z3::expr holds = on(t.var, true);
          if (t.other != UINT32_MAX) holds = holds && on(t.other, false);
          load = load + z3::ite(holds, ctx.int_val(t.bytes), ctx.int_val(0));
        }
        opt.add(load <= ctx.int_val(cut.limit));
      }
    }
    z3::check_result result = opt.check();
    if (result == z3::unsat) {
      opt.pop();
      if (std::find(cut_added.begin(), cut_added.end(), true) != cut_added.end()) {
        return absl::FailedPreconditionError("placement: no assignment keeps every device within its capacity");
      }
      return absl::InternalError("placement: a component without forbidden-only variables is unsatisfiable");
    }
    z3::model model = opt.get_model();
    optimal = result == z3::sat;
    for (uint32_t v : vars) {
      z3::expr value = model.eval(x[index[v]], /*model_completion=*/true);
      int chosen = -1;
      for (int i = 0; i < r.d && chosen < 0; ++i) {
        if (z3::eq(value, consts[i]())) chosen = i;
      }
      if (chosen < 0) {
        opt.pop();
        return absl::DeadlineExceededError("placement: no model within the time limit");
      }
      device[v] = chosen;
    }
    opt.pop();
    return absl::OkStatus();
  } catch (const z3::exception& e) {
    return absl::InternalError(absl::StrCat("placement: Z3: ", e.msg()));
  }
}

}  // namespace

int64_t CutLoad(const PlacementModel::CapacityCut& cut, const std::vector<int>& device) {
  int64_t load = 0;
  for (const PlacementModel::CapacityCut::Term& t : cut.terms) {
    bool holds = device[t.var] == cut.device && (t.other == UINT32_MAX || device[t.other] != cut.device);
    if (holds) load += t.bytes;
  }
  return load;
}

bool CapacityHolds(const PlacementModel& model, const std::vector<int>& device) {
  return std::all_of(model.capacity.begin(), model.capacity.end(),
                     [&](const PlacementModel::CapacityCut& cut) { return CutLoad(cut, device) <= cut.limit; });
}

Cost PlacementCost(const PlacementModel& model, const std::vector<int>& device) {
  Cost total = 0;
  for (size_t v = 0; v < model.unary.size(); ++v) total = Add(total, model.unary[v][device[v]]);
  for (const PlacementModel::Pair& p : model.pairs) {
    total = Add(total, p.cost[device[p.a] * model.num_devices + device[p.b]]);
  }
  return total;
}

absl::StatusOr<PlacementSolution> SolvePlacement(const PlacementModel& model, const PlacementSolveOptions& options) {
  auto start = std::chrono::steady_clock::now();
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
  // Parallel pairs merged, oriented a < b; a pair of a variable with itself is a unary cost.
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
  // Variables with one allowed device are fixed; their pairs become their neighbours' costs.
  for (uint32_t v = 0; v < n; ++v) {
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
  // Leaves and links of chains are eliminated exactly: a leaf's best device for each device of its
  // neighbour becomes the neighbour's cost; a link's best device for each pair of devices of its two
  // neighbours becomes a pair between them (merged with theirs, if any).
  std::vector<Elimination> eliminated;
  std::vector<uint32_t> work;
  auto eliminable = [&](uint32_t v) { return !r.done[v] && r.cuts_of[v].empty() && r.Degree(v) <= 2; };
  for (uint32_t v = 0; v < n; ++v) {
    if (eliminable(v)) work.push_back(v);
  }
  std::vector<int> device(n, -1);
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
      continue;
    }
    if (live == UINT32_MAX) {  // isolated: its cheapest device
      device[v] = static_cast<int>(std::min_element(r.unary[v].begin(), r.unary[v].end()) - r.unary[v].begin());
      continue;
    }
    const PlacementModel::Pair& p = r.pairs[live];
    uint32_t u = r.Other(p, v);
    Elimination elim{v, u, UINT32_MAX, std::vector<int>(d, 0)};
    for (int j = 0; j < d; ++j) {
      Cost best = kForbidden;
      for (int i = 0; i < d; ++i) {
        Cost c = Add(r.unary[v][i], r.PairCost(p, v, i, j));
        if (c < best) best = c, elim.best[j] = i;
      }
      r.unary[u][j] = Add(r.unary[u][j], best);
    }
    r.pair_live[live] = false;
    eliminated.push_back(std::move(elim));
    if (eliminable(u)) work.push_back(u);
  }
  // A cut whose variables are all fixed is a constant: it holds or nothing can.
  for (const PlacementModel::CapacityCut& cut : model.capacity) {
    bool constant = std::all_of(cut.terms.begin(), cut.terms.end(), [&](const PlacementModel::CapacityCut::Term& t) {
      return r.fixed[t.var] >= 0 && (t.other == UINT32_MAX || r.fixed[t.other] >= 0);
    });
    if (constant && CutLoad(cut, r.fixed) > cut.limit) {
      return absl::FailedPreconditionError("placement: fixed values exceed a device's capacity");
    }
  }
  // What is left: components of variables of degree >= 2 (or named by a capacity cut, which joins
  // its variables), each a Z3 problem.
  std::vector<std::vector<uint32_t>> components;
  std::vector<bool> seen(n, false);
  for (uint32_t s = 0; s < n; ++s) {
    if (r.done[s] || seen[s]) continue;
    std::vector<uint32_t> component{s};
    seen[s] = true;
    auto reach = [&](uint32_t u) {
      if (u != UINT32_MAX && !r.done[u] && !seen[u]) seen[u] = true, component.push_back(u);
    };
    for (size_t k = 0; k < component.size(); ++k) {
      for (uint32_t e : r.incident[component[k]]) {
        if (r.pair_live[e]) reach(r.Other(r.pairs[e], component[k]));
      }
      for (uint32_t c : r.cuts_of[component[k]]) {
        for (const PlacementModel::CapacityCut::Term& t : model.capacity[c].terms) reach(t.var), reach(t.other);
      }
    }
    components.push_back(std::move(component));
  }
  PlacementSolution solution;
  solution.components = components.size();
  for (const std::vector<uint32_t>& component : components) solution.z3_variables += component.size();
  {
    SlowSolveWatch watch(options.on_slow_solve, solution.z3_variables, options.slow_after_seconds);
    for (const std::vector<uint32_t>& component : components) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      bool optimal = true;
      absl::Status status =
          SolveComponent(r, model, component, options.time_limit_seconds - elapsed, device, optimal);
      if (!status.ok()) return status;
      solution.optimal = solution.optimal && optimal;
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    if (r.fixed[v] >= 0) device[v] = r.fixed[v];
  }
  for (size_t k = eliminated.size(); k-- > 0;) {
    const Elimination& e = eliminated[k];
    device[e.v] = e.w == UINT32_MAX ? e.best[device[e.u]] : e.best[device[e.u] * d + device[e.w]];
  }
  // The re-check: every device allowed, and the reduced problem's cost (what was optimised: fixed
  // and remaining variables' costs, eliminated ones folded into their neighbours) equals the model's
  // cost of the assignment.
  std::vector<bool> folded(n, false);
  for (const Elimination& e : eliminated) folded[e.v] = true;
  Cost reduced = 0;
  for (uint32_t v = 0; v < n; ++v) {
    if (device[v] < 0 || model.unary[v][device[v]] == kForbidden) {
      return absl::InternalError(absl::StrCat("placement: variable ", v, " got a forbidden device"));
    }
    if (!folded[v]) reduced = Add(reduced, r.unary[v][device[v]]);
  }
  for (size_t e = 0; e < r.pairs.size(); ++e) {
    const PlacementModel::Pair& p = r.pairs[e];
    if (r.pair_live[e]) reduced = Add(reduced, r.PairCost(p, p.a, device[p.a], device[p.b]));
  }
  if (!CapacityHolds(model, device)) {
    return absl::InternalError("placement: re-check: the assignment breaks a capacity cut");
  }
  solution.device = std::move(device);
  solution.cost = PlacementCost(model, solution.device);
  if (solution.cost != reduced) {
    return absl::InternalError(absl::StrCat("placement: re-check: the assignment costs ", solution.cost,
                                            ", the solved problem said ", reduced));
  }
  solution.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return solution;
}

}  // namespace vdev::planner_internal
