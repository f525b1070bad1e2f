// SolvePlacement: shrink (fixed variables, leaves, chain links), then per component the LP bound and a
// heuristic assignment (placement_bound.h), reduced-cost fixing and a nested solve of the rest, and
// one Z3 MaxSAT problem for what is left, with the capacity cuts as hard linear constraints.
#include "src/planner/placement_solver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/planner/internal/capacity_search.h"
#include "src/planner/internal/reduced_placement.h"
#include "src/planner/internal/slow_solve_watch.h"
#include "src/planner/placement_bound.h"
#include "vdev/support/status_macros.h"

namespace vdev::planner_internal {

int64_t CutLoad(const PlacementModel::CapacityCut& cut, const std::vector<int>& device) {
  __int128 load = 0;  // terms of up to 2^63 bytes each, summed without overflow
  for (const PlacementModel::CapacityCut::Term& t : cut.terms) {
    bool holds = device[t.var] == cut.device && (t.other == UINT32_MAX || device[t.other] != cut.device);
    if (holds) load += t.bytes;
  }
  return static_cast<int64_t>(std::min<__int128>(load, INT64_MAX));
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

namespace {

bool HasCuts(const Reduced& r, const std::vector<uint32_t>& vars) {
  return std::any_of(vars.begin(), vars.end(), [&](uint32_t v) { return !r.cuts_of[v].empty(); });
}

// A component's share of the reduced problem's cost: its variables' and its live pairs' costs.
Cost ComponentCost(const Reduced& r, const std::vector<uint32_t>& vars, const std::vector<int>& device) {
  Cost total = 0;
  for (uint32_t v : vars) {
    total = Add(total, r.unary[v][device[v]]);
    for (uint32_t e : r.incident[v]) {
      const PlacementModel::Pair& p = r.pairs[e];
      if (r.pair_live[e] && p.a == v) total = Add(total, r.PairCost(p, p.a, device[p.a], device[p.b]));
    }
  }
  return total;
}

// A component before Z3: its own model (variables in `vars` order; none of its pairs leave it), its
// LP bound and best assignment (kForbidden cost: none, for a component with capacity cuts).
struct Prepared {
  bool cuts = false;
  PlacementModel sub;
  DualBound dual;
  std::vector<int> best;
  Cost upper = kForbidden;
};

Prepared Prepare(const Reduced& r, const std::vector<uint32_t>& vars, bool cuts, double seconds_left) {
  Prepared p;
  p.cuts = cuts;
  absl::flat_hash_map<uint32_t, uint32_t> local;
  for (uint32_t k = 0; k < vars.size(); ++k) local[vars[k]] = k;
  p.sub.num_devices = r.d;
  for (uint32_t v : vars) {
    p.sub.unary.push_back(r.unary[v]);
    for (uint32_t e : r.incident[v]) {
      const PlacementModel::Pair& pair = r.pairs[e];
      if (r.pair_live[e] && pair.a == v) p.sub.pairs.push_back({local.at(pair.a), local.at(pair.b), pair.cost});
    }
  }
  // The bound gets a share of the time; it usually converges far sooner.
  p.dual = LowerBound(p.sub, {.max_iterations = 2000, .seconds = std::max(0.05, seconds_left / 4)});
  if (cuts) return p;
  p.best = HeuristicAssignment(p.sub, p.dual);
  p.upper = PlacementCost(p.sub, p.best);
  return p;
}

// How a component was solved: proven optimal, or bounded by `lower` (capacity cuts included) and
// `relaxation` (ignoring them).
struct Outcome {
  bool optimal = true;
  Cost lower = 0;
  Cost relaxation = 0;
};

absl::StatusOr<PlacementSolution> SolveModel(const PlacementModel& model, const PlacementSolveOptions& options,
                                             int depth);

// What is left: components of variables of degree >= 2 (or named by a capacity cut, which joins
// its variables), each solved on its own.
std::vector<std::vector<uint32_t>> Components(const Reduced& r, const PlacementModel& model) {
  const size_t n = r.unary.size();
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
  return components;
}

// What a slow solve reports before Z3: the variables outside components, then each component's.
PlacementProgress ProgressBeforeZ3(const Reduced& r, const std::vector<int>& device,
                                   const std::vector<Prepared>& prepared, size_t open, bool bound_first) {
  PlacementProgress progress{open, 0, 0};
  for (uint32_t v = 0; v < r.unary.size(); ++v) {  // fixed and isolated variables
    if (r.fixed[v] >= 0 || device[v] >= 0) progress.best += r.unary[v][r.fixed[v] >= 0 ? r.fixed[v] : device[v]];
  }
  progress.lower_bound = progress.best;
  for (const Prepared& p : prepared) {
    progress.best = Add(progress.best, bound_first ? p.upper : kForbidden);
    progress.lower_bound += p.dual.bound;
  }
  return progress;
}

// The state SolveModel's components share.
struct ComponentSolve {
  const PlacementModel& model;
  const PlacementSolveOptions& options;
  int depth;
  const Reduced& r;
  std::vector<int>& device;
  PlacementSolution& solution;
};

// One component: its bound and heuristic assignment closing it, else the devices priced out dropped
// and the rest solved as a model of its own, else Z3.
absl::Status SolveOneComponent(ComponentSolve& s, const std::vector<uint32_t>& component, const Prepared& p,
                               double left, Outcome& o) {
  o.relaxation = p.dual.bound;
  bool z3 = !s.options.bound_first || p.cuts;
  PlacementModel restricted;
  if (!z3) {
    o.optimal = true;
    for (size_t k = 0; k < component.size(); ++k) s.device[component[k]] = p.best[k];
    if (p.dual.bound >= p.upper) return absl::OkStatus();
    bool pruned = false;
    if (!RestrictByPrices(p.sub, p.dual, p.upper, restricted, pruned)) return absl::OkStatus();  // p.best is optimal
    z3 = !pruned && s.depth > 0;  // reparameterised already and nothing left to drop
    o.optimal = false;
    o.lower = p.dual.bound;
  }
  if (z3) {
    std::vector<int> z3_device = s.device;
    s.solution.z3_variables += component.size();
    absl::Status status =
        SolveComponent(s.r, s.model, component, {.seconds = left, .rlimit = s.options.z3_resource_limit}, z3_device,
                       o.optimal, o.lower);
    // With p.best in hand, a Z3 that found nothing (timeout, cancellation) leaves it unproven.
    if (!status.ok() && !(s.options.bound_first && !p.cuts)) return status;
    if (!status.ok()) o.optimal = false, o.lower = 0;
    bool better = status.ok() && (p.cuts || !s.options.bound_first ||
                                  ComponentCost(s.r, component, z3_device) < ComponentCost(s.r, component, s.device));
    if (better) s.device = std::move(z3_device);
    o.lower = std::max(o.lower, p.dual.bound);
    return absl::OkStatus();
  }
  // The devices that no assignment cheaper than p.best uses are gone: solve the rest as a model of
  // its own (it shrinks again, and its components are bounded again).
  PlacementSolveOptions nested;
  nested.time_limit_seconds = left;
  nested.z3_resource_limit = s.options.z3_resource_limit;
  absl::StatusOr<PlacementSolution> rest = SolveModel(restricted, nested, s.depth + 1);
  if (!rest.ok() && !absl::IsDeadlineExceeded(rest.status())) return rest.status();
  if (!rest.ok()) return absl::OkStatus();  // p.best, not proven
  o.optimal = rest->optimal;
  // Dropped devices cost p.upper or more, so the optimum is min(p.upper, the rest's optimum).
  o.lower = std::max(o.lower, std::min(p.upper, rest->lower_bound + p.dual.bound));
  if (rest->cost + p.dual.bound < p.upper) {
    for (size_t k = 0; k < component.size(); ++k) s.device[component[k]] = rest->device[k];
  }
  s.solution.z3_variables += rest->z3_variables;
  return absl::OkStatus();
}

// The fixed and eliminated variables' devices, then the re-check: every device allowed, and the
// reduced problem's cost (what was optimised: fixed and remaining variables' costs, eliminated
// ones folded into their neighbours) equals the model's cost of the assignment.
absl::Status CompleteAndRecheck(const PlacementModel& model, const Reduced& r,
                                const std::vector<Elimination>& eliminated, std::vector<int> device,
                                PlacementSolution& solution) {
  const size_t n = r.unary.size();
  const int d = r.d;
  for (uint32_t v = 0; v < n; ++v) {
    if (r.fixed[v] >= 0) device[v] = r.fixed[v];
  }
  for (size_t k = eliminated.size(); k-- > 0;) {
    const Elimination& e = eliminated[k];
    device[e.v] = e.w == UINT32_MAX ? e.best[device[e.u]] : e.best[device[e.u] * d + device[e.w]];
  }
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
  return absl::OkStatus();
}

// Bounds: each component's share of the cost is its chosen cost when proven optimal, else its bound.
void SetBounds(const Reduced& r, const std::vector<std::vector<uint32_t>>& components,
               const std::vector<Prepared>& prepared, const std::vector<Outcome>& outcome,
               PlacementSolution& solution) {
  solution.lower_bound = solution.relaxation_bound = solution.cost;
  for (size_t c = 0; c < components.size(); ++c) {
    Cost share = ComponentCost(r, components[c], solution.device);
    const Outcome& o = outcome[c];
    solution.optimal = solution.optimal && o.optimal;
    solution.lower_bound -= share - (o.optimal ? share : std::min(share, o.lower));
    Cost relaxation = prepared[c].cuts ? o.relaxation : o.optimal ? share : o.lower;
    solution.relaxation_bound -= share - std::min(share, relaxation);
  }
  if (solution.lower_bound == solution.cost) solution.optimal = true;  // the bound met the assignment
  solution.relaxation_bound = std::min(solution.relaxation_bound, solution.lower_bound);
}

absl::StatusOr<PlacementSolution> SolveModel(const PlacementModel& model, const PlacementSolveOptions& options,
                                             int depth) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  VDEV_ASSIGN_OR_RETURN(Reduced r, Reduce(model));
  FixSingleDeviceVariables(r);
  std::vector<Elimination> eliminated;
  std::vector<int> device(model.unary.size(), -1);
  EliminateLeavesAndLinks(r, eliminated, device);
  // A cut whose variables are all fixed is a constant: it holds or nothing can.
  for (const PlacementModel::CapacityCut& cut : model.capacity) {
    bool constant = std::all_of(cut.terms.begin(), cut.terms.end(), [&](const PlacementModel::CapacityCut::Term& t) {
      return r.fixed[t.var] >= 0 && (t.other == UINT32_MAX || r.fixed[t.other] >= 0);
    });
    if (constant && CutLoad(cut, r.fixed) > cut.limit) {
      return absl::FailedPreconditionError("placement: fixed values exceed a device's capacity");
    }
  }
  const std::vector<std::vector<uint32_t>> components = Components(r, model);
  PlacementSolution solution;
  solution.components = components.size();
  // Each component's bound and best assignment before Z3 (those with capacity cuts: only the bound,
  // which ignores the cuts); a component whose bound meets its assignment's cost needs no Z3.
  std::vector<Prepared> prepared(components.size());
  std::vector<Outcome> outcome(components.size());
  size_t open = 0;  // variables of components that the bound does not close
  for (size_t c = 0; c < components.size(); ++c) {
    if (options.bound_first) {
      prepared[c] = Prepare(r, components[c], HasCuts(r, components[c]), options.time_limit_seconds - elapsed());
    }
    bool closed = prepared[c].upper != kForbidden && prepared[c].dual.bound >= prepared[c].upper;
    if (!closed) open += components[c].size();
  }
  {
    SlowSolveWatch watch(options.on_slow_solve, ProgressBeforeZ3(r, device, prepared, open, options.bound_first),
                         std::max(0.0, options.slow_after_seconds - elapsed()));
    ComponentSolve s{model, options, depth, r, device, solution};
    for (size_t c = 0; c < components.size(); ++c) {
      VDEV_RETURN_IF_ERROR(
          SolveOneComponent(s, components[c], prepared[c], options.time_limit_seconds - elapsed(), outcome[c]));
    }
  }
  VDEV_RETURN_IF_ERROR(CompleteAndRecheck(model, r, eliminated, std::move(device), solution));
  SetBounds(r, components, prepared, outcome, solution);
  solution.seconds = elapsed();
  return solution;
}

}  // namespace

absl::StatusOr<PlacementSolution> SolvePlacement(const PlacementModel& model, const PlacementSolveOptions& options) {
  if (model.capacity.empty() || options.capacity_search_nodes == 0) return SolveModel(model, options, 0);
  const auto start = std::chrono::steady_clock::now();
  CapacitySearchResult found = SearchWithinCapacity(
      model, {.max_nodes = options.capacity_search_nodes, .seconds = options.time_limit_seconds / 2});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (found.outcome == CapacitySearchResult::Outcome::kInfeasible) {
    return absl::FailedPreconditionError("placement: no assignment keeps every device within its capacity");
  }
  if (found.outcome == CapacitySearchResult::Outcome::kOptimal) {
    PlacementSolution solution;
    solution.device = std::move(found.device);
    solution.cost = solution.lower_bound = found.cost;
    solution.relaxation_bound = found.unconstrained;
    solution.seconds = seconds;
    return solution;
  }
  PlacementSolveOptions rest = options;  // Z3 gets what the search left of the time
  rest.time_limit_seconds -= seconds;
  return SolveModel(model, rest, 0);
}

}  // namespace vdev::planner_internal
