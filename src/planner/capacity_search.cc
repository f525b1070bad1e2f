// SearchWithinCapacity (internal/capacity_search.h): iterative deepening over the levels of the
// shrunk model, pruned by the capacity cuts.
#include "src/planner/internal/capacity_search.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "src/planner/internal/reduced_placement.h"

namespace vdev::planner_internal {
namespace {

using Outcome = CapacitySearchResult::Outcome;

// One level: a piece of the core (its allowed assignments enumerated once, cheapest first), or one
// eliminated variable (its choices priced from its cost table and its neighbours' devices).
struct Level {
  std::vector<uint32_t> vars;
  std::vector<std::vector<int>> assignments;  // a piece's, by choice
  std::vector<std::pair<Cost, uint32_t>> by_excess;
  const Elimination* elimination = nullptr;
};

// A level's choices being tried: `f` is the cost of the best completion before the level chooses.
struct Frame {
  Cost f = 0;
  std::vector<std::pair<Cost, uint32_t>> choices;  // (excess, choice), cheapest first
  size_t next = 0;
  size_t undo_mark = 0;
  bool applied = false;
};

struct TermRef {
  uint32_t cut;
  uint32_t term;
};

class Search {
 public:
  Search(const PlacementModel& model, const CapacitySearchLimits& limits)
      : model_(model), limits_(limits), start_(std::chrono::steady_clock::now()) {}

  CapacitySearchResult Run();

 private:
  bool Shrink();
  bool AddPiece(std::vector<uint32_t> vars);
  bool IndexCuts();  // false: the fixed variables alone exceed a cut
  void Open(size_t depth, Cost f);
  bool Apply(size_t depth, uint32_t choice);
  bool Assign(uint32_t v, int device);
  void Undo(size_t depth);
  Outcome Deepen(Cost threshold, Cost& next_threshold);
  bool OutOfBudget();

  const PlacementModel& model_;
  const CapacitySearchLimits limits_;
  const std::chrono::steady_clock::time_point start_;
  Reduced r_;
  std::vector<Elimination> eliminated_;
  std::vector<Level> levels_;
  std::vector<Frame> frames_;
  std::vector<int> device_;  // -1: not chosen yet
  std::vector<std::vector<TermRef>> terms_of_;
  std::vector<__int128> load_;                      // bytes of each cut's terms whose variables are all chosen and hold
  std::vector<std::pair<uint32_t, int64_t>> undo_;  // (cut, bytes) added, in order
  Cost unconstrained_ = 0;
  uint64_t nodes_ = 0;
};

bool Search::Shrink() {
  absl::StatusOr<Reduced> reduced = Reduce(model_);
  if (!reduced.ok()) return false;  // the solver reports it
  r_ = *std::move(reduced);
  for (std::vector<uint32_t>& cuts : r_.cuts_of) cuts.clear();  // set aside: every variable may go
  r_.keep_local_costs = true;
  FixSingleDeviceVariables(r_);
  const uint32_t n = static_cast<uint32_t>(r_.unary.size());
  std::vector<int> isolated(n, -1);
  EliminateLeavesAndLinks(r_, eliminated_, isolated);
  device_.assign(n, -1);
  for (uint32_t v = 0; v < n; ++v) {
    if (r_.fixed[v] < 0) continue;
    device_[v] = r_.fixed[v];
    unconstrained_ = Add(unconstrained_, r_.unary[v][r_.fixed[v]]);
  }
  // The core's pieces: each isolated variable, each component of the variables left.
  std::vector<bool> seen(n, false);
  for (uint32_t s = 0; s < n; ++s) {
    if (isolated[s] >= 0 && !AddPiece({s})) return false;
    if (r_.done[s] || seen[s]) continue;
    std::vector<uint32_t> piece{s};
    seen[s] = true;
    for (size_t k = 0; k < piece.size(); ++k) {
      for (uint32_t e : r_.incident[piece[k]]) {
        uint32_t u = r_.Other(r_.pairs[e], piece[k]);
        if (r_.pair_live[e] && !seen[u]) seen[u] = true, piece.push_back(u);
      }
    }
    if (!AddPiece(std::move(piece))) return false;
  }
  for (size_t k = eliminated_.size(); k-- > 0;) levels_.push_back(Level{.elimination = &eliminated_[k]});
  return unconstrained_ != kForbidden;
}

bool Search::AddPiece(std::vector<uint32_t> vars) {
  std::vector<std::vector<int>> allowed(vars.size());
  int64_t count = 1;
  for (size_t k = 0; k < vars.size(); ++k) {
    for (int i = 0; i < r_.d; ++i) {
      if (r_.unary[vars[k]][i] != kForbidden) allowed[k].push_back(i);
    }
    count *= static_cast<int64_t>(allowed[k].size());
    if (count > kMaxPieceAssignments) return false;
  }
  absl::flat_hash_map<uint32_t, size_t> position;
  for (size_t k = 0; k < vars.size(); ++k) position[vars[k]] = k;
  Level level{.vars = vars};
  std::vector<Cost> costs;
  std::vector<size_t> digit(vars.size(), 0);  // odometer over the allowed devices
  while (true) {
    std::vector<int> assignment(vars.size());
    for (size_t k = 0; k < vars.size(); ++k) assignment[k] = allowed[k][digit[k]];
    Cost cost = 0;
    for (size_t k = 0; k < vars.size(); ++k) {
      cost = Add(cost, r_.unary[vars[k]][assignment[k]]);
      for (uint32_t e : r_.incident[vars[k]]) {
        const PlacementModel::Pair& p = r_.pairs[e];
        if (r_.pair_live[e] && p.a == vars[k])
          cost = Add(cost, r_.PairCost(p, p.a, assignment[k], assignment[position.at(p.b)]));
      }
    }
    if (cost != kForbidden) level.assignments.push_back(std::move(assignment)), costs.push_back(cost);
    size_t k = 0;
    while (k < vars.size() && ++digit[k] == allowed[k].size()) digit[k++] = 0;
    if (k == vars.size()) break;
  }
  if (costs.empty()) return false;
  const Cost least = *std::min_element(costs.begin(), costs.end());
  for (uint32_t c = 0; c < costs.size(); ++c) level.by_excess.push_back({costs[c] - least, c});
  std::sort(level.by_excess.begin(), level.by_excess.end());
  unconstrained_ = Add(unconstrained_, least);
  levels_.push_back(std::move(level));
  return true;
}

bool Search::IndexCuts() {
  terms_of_.resize(r_.unary.size());
  load_.assign(model_.capacity.size(), 0);
  for (uint32_t c = 0; c < model_.capacity.size(); ++c) {
    const PlacementModel::CapacityCut& cut = model_.capacity[c];
    for (uint32_t t = 0; t < cut.terms.size(); ++t) {
      const CapacityTerm& term = cut.terms[t];
      if (term.var == term.other) continue;  // on the device and off it: never counts
      terms_of_[term.var].push_back({c, t});
      if (term.other != UINT32_MAX) terms_of_[term.other].push_back({c, t});
      const bool chosen = device_[term.var] >= 0 && (term.other == UINT32_MAX || device_[term.other] >= 0);
      if (chosen && device_[term.var] == cut.device &&
          (term.other == UINT32_MAX || device_[term.other] != cut.device)) {
        load_[c] += term.bytes;
      }
    }
    if (load_[c] > cut.limit) return false;
  }
  return true;
}

// Chooses v's device; counts each term that this choice completes. false when a cut overflows.
bool Search::Assign(uint32_t v, int device) {
  device_[v] = device;
  bool within = true;
  for (const TermRef& ref : terms_of_[v]) {
    const PlacementModel::CapacityCut& cut = model_.capacity[ref.cut];
    const CapacityTerm& term = cut.terms[ref.term];
    const uint32_t partner = term.var == v ? term.other : term.var;
    if (partner != UINT32_MAX && device_[partner] < 0) continue;  // counted when the partner is chosen
    if (device_[term.var] != cut.device || (term.other != UINT32_MAX && device_[term.other] == cut.device)) continue;
    load_[ref.cut] += term.bytes;
    undo_.push_back({ref.cut, term.bytes});
    within = within && load_[ref.cut] <= cut.limit;
  }
  return within;
}

// The level's choices given the devices chosen before it, cheapest first.
void Search::Open(size_t depth, Cost f) {
  Frame& frame = frames_[depth];
  frame.f = f;
  frame.next = 0;
  frame.applied = false;
  const Level& level = levels_[depth];
  if (level.elimination == nullptr) {
    frame.choices = level.by_excess;
    return;
  }
  const Elimination& e = *level.elimination;
  const int d = r_.d;
  const size_t row = e.w == UINT32_MAX ? static_cast<size_t>(device_[e.u]) * d
                                       : (static_cast<size_t>(device_[e.u]) * d + device_[e.w]) * d;
  const Cost least = e.local[row + e.best[row / d]];
  frame.choices.clear();
  for (int i = 0; i < d; ++i) {
    if (e.local[row + i] != kForbidden) frame.choices.push_back({e.local[row + i] - least, i});
  }
  std::sort(frame.choices.begin(), frame.choices.end());
}

bool Search::Apply(size_t depth, uint32_t choice) {
  Frame& frame = frames_[depth];
  frame.undo_mark = undo_.size();
  frame.applied = true;
  const Level& level = levels_[depth];
  if (level.elimination != nullptr) return Assign(level.elimination->v, static_cast<int>(choice));
  bool within = true;
  for (size_t k = 0; k < level.vars.size(); ++k) within = Assign(level.vars[k], level.assignments[choice][k]) && within;
  return within;
}

void Search::Undo(size_t depth) {
  Frame& frame = frames_[depth];
  for (size_t k = undo_.size(); k-- > frame.undo_mark;) load_[undo_[k].first] -= undo_[k].second;
  undo_.resize(frame.undo_mark);
  const Level& level = levels_[depth];
  if (level.elimination != nullptr) {
    device_[level.elimination->v] = -1;
  } else {
    for (uint32_t v : level.vars) device_[v] = -1;
  }
  frame.applied = false;
}

bool Search::OutOfBudget() {
  if (++nodes_ > limits_.max_nodes) return true;
  return nodes_ % 1024 == 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > limits_.seconds;
}

// Every partial assignment whose best completion costs at most `threshold`, depth first; the least
// cost above it that was cut off goes to `next_threshold`. kOptimal leaves the assignment in device_.
Outcome Search::Deepen(Cost threshold, Cost& next_threshold) {
  Open(0, unconstrained_);
  size_t depth = 0;
  while (true) {
    Frame& frame = frames_[depth];
    if (frame.applied) Undo(depth);
    if (frame.next == frame.choices.size()) {
      if (depth == 0) return Outcome::kInfeasible;  // within this threshold
      --depth;
      continue;
    }
    const auto [excess, choice] = frame.choices[frame.next++];
    const Cost f = frame.f + excess;
    if (f > threshold) {  // the rest of the level costs more still
      next_threshold = std::min(next_threshold, f);
      frame.next = frame.choices.size();
      continue;
    }
    if (OutOfBudget()) return Outcome::kGaveUp;
    if (!Apply(depth, choice)) continue;
    if (depth + 1 == levels_.size()) return Outcome::kOptimal;
    Open(++depth, f);
  }
}

CapacitySearchResult Search::Run() {
  CapacitySearchResult result;
  if (model_.num_devices > kMaxSearchDevices || !Shrink()) return result;
  result.unconstrained = unconstrained_;
  if (!IndexCuts()) {
    result.outcome = Outcome::kInfeasible;
    return result;
  }
  frames_.resize(levels_.size());
  Cost threshold = unconstrained_;
  Outcome outcome = levels_.empty() ? Outcome::kOptimal : Outcome::kInfeasible;
  while (!levels_.empty()) {
    Cost next_threshold = kForbidden;
    outcome = Deepen(threshold, next_threshold);
    if (outcome == Outcome::kGaveUp || outcome == Outcome::kOptimal || next_threshold == kForbidden) break;
    threshold = next_threshold;
  }
  result.nodes = nodes_;
  result.outcome = outcome;
  if (outcome != Outcome::kOptimal) return result;
  // The re-check: the search's cost is the model's, and every cut holds.
  result.device = device_;
  result.cost = PlacementCost(model_, device_);
  if (result.cost != (levels_.empty() ? unconstrained_ : threshold) || !CapacityHolds(model_, device_)) {
    result.outcome = Outcome::kGaveUp;
  }
  return result;
}

}  // namespace

CapacitySearchResult SearchWithinCapacity(const PlacementModel& model, const CapacitySearchLimits& limits) {
  return Search(model, limits).Run();
}

}  // namespace vdev::planner_internal
