// The optimiser's rounds (internal/capacity_rounds.h): solve, sweep the plan's liveness, add a
// capacity cut where a device overflowed, solve again; and why no placement fits when none does.
#include "src/planner/internal/capacity_rounds.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/planner/internal/capacity.h"
#include "src/planner/internal/placement_model.h"
#include "src/planner/internal/planner.h"
#include "vdev/support/status_macros.h"

namespace vdev::planner_internal {

std::string BindingLoc(const ir::Module& m, ir::BindingId b) {
  return absl::StrCat(m.bindings[b].expr.loc.line, ":", m.bindings[b].expr.loc.col);
}

namespace {

double Seconds(Cost picoseconds) { return static_cast<double>(picoseconds) * 1e-12; }
std::string Milliseconds(Cost picoseconds) { return absl::StrFormat("%.4g ms", Seconds(picoseconds) * 1e3); }
std::string GapPercent(Cost best, Cost lower) {
  return absl::StrFormat("%.3g%%",
                         best == 0 ? 0.0 : 100.0 * static_cast<double>(best - lower) / static_cast<double>(best));
}

std::string ValueText(const ir::Module& m, ir::ValueRef v) { return absl::StrCat("%", m.Name(m.ValueName(v))); }

// A parameter's name, or the expression that makes a binding's value.
SourceLoc ValueLoc(const ir::Module& m, ir::ValueRef v) {
  return v.is_param() ? m.params[v.index].loc : m.bindings[v.index].expr.loc;
}

// A point where the plan of some round overflowed a device.
struct Overflow {
  int device;
  uint32_t item;
  uint32_t point;
};

// Why no placement fits: where a cut's values that nothing can move off its device exceed its
// capacity, the fewest of them that do (largest first), each with what fixed its device;
// otherwise (only the cuts together fail) the points of the cuts.
PlanError ExplainCapacity(const ir::Module& m, const PlacementClasses& classes, const PlacementModel& model,
                          const std::vector<std::vector<ir::ValueRef>>& term_values,
                          const std::vector<Overflow>& overflows, const Machine& machine) {
  PlanError error;
  for (size_t c = 0; c < model.capacity.size(); ++c) {
    const PlacementModel::CapacityCut& cut = model.capacity[c];
    auto only_on_cut_device = [&](uint32_t v) {
      for (int d = 0; d < model.num_devices; ++d) {
        if (d != cut.device && model.unary[v][d] != kForbidden) return false;
      }
      return true;
    };
    std::vector<size_t> forced;
    for (size_t t = 0; t < cut.terms.size(); ++t) {
      const auto& term = cut.terms[t];
      bool other_cannot_join = term.other == UINT32_MAX || model.unary[term.other][cut.device] == kForbidden;
      if (only_on_cut_device(term.var) && other_cannot_join) forced.push_back(t);
    }
    std::stable_sort(forced.begin(), forced.end(),
                     [&](size_t a, size_t b) { return cut.terms[a].bytes > cut.terms[b].bytes; });
    int64_t sum = 0;
    size_t needed = 0;
    while (needed < forced.size() && sum <= cut.limit) sum += cut.terms[forced[needed++]].bytes;
    if (sum <= cut.limit) continue;
    ir::BindingId at = planner_internal::BindingAt(m, overflows[c].item, overflows[c].point);
    const VirtualDevice& device = machine.devices[cut.device];
    error.loc = at == ir::kNoBinding ? SourceLoc{} : m.bindings[at].expr.loc;
    error.message = absl::StrCat("the values live here need ", sum, " bytes on ", device.ToString(), ", which holds ",
                                 cut.limit, ": no placement fits in its memory");
    for (size_t k = 0; k < needed; ++k) {
      const auto& term = cut.terms[forced[k]];
      ir::ValueRef v = term_values[c][forced[k]];
      std::string why = classes.origin[term.var].empty() ? std::string("its ops run only there")
                                                         : absl::StrCat("placed by ", classes.origin[term.var]);
      error.conflicts.push_back(
          {ValueLoc(m, v), device,
           absl::StrCat(ValueText(m, v), " (", term.bytes, " bytes) is live here on ", device.ToString(), ", ", why)});
    }
    return error;
  }
  // A value larger than every device its class may take.
  for (size_t c = 0; c < model.capacity.size(); ++c) {
    const PlacementModel::CapacityCut& cut = model.capacity[c];
    for (size_t t = 0; t < cut.terms.size(); ++t) {
      const auto& term = cut.terms[t];
      bool fits_somewhere = false;
      for (int d = 0; d < model.num_devices; ++d) {
        fits_somewhere |= model.unary[term.var][d] != kForbidden && term.bytes <= CapacityLimit(machine, d);
      }
      if (fits_somewhere) continue;
      ir::ValueRef v = term_values[c][t];
      error.loc = ValueLoc(m, v);
      error.message = absl::StrCat(ValueText(m, v), " needs ", term.bytes,
                                   " bytes, more than any device its placement allows holds");
      std::string why = classes.origin[term.var].empty() ? std::string("its ops run only on devices that small")
                                                         : absl::StrCat("placed by ", classes.origin[term.var]);
      error.conflicts.push_back({ValueLoc(m, v), machine.devices[cut.device],
                                 absl::StrCat(ValueText(m, v), " (", term.bytes, " bytes), ", why)});
      return error;
    }
  }
  error.message = "no placement keeps every device within its capacity at these points together:";
  for (const Overflow& o : overflows) {
    ir::BindingId at = planner_internal::BindingAt(m, o.item, o.point);
    if (at == ir::kNoBinding) continue;
    if (!error.loc.valid()) error.loc = m.bindings[at].expr.loc;
    absl::StrAppend(&error.message, " ", machine.devices[o.device].ToString(), " at ", BindingLoc(m, at));
  }
  return error;
}

// One OptimizePlacement on one machine: the state its rounds share.
class CapacityRounds {
 public:
  CapacityRounds(const ir::Module& module, const Machine& machine, const OptimizeOptions& options, PlanError* error)
      : module_(module), machine_(machine), options_(options), points_(InputPoints(module)), error_(error) {}

  absl::StatusOr<RoundsResult> Run();
  bool capacity_infeasible() const { return capacity_error_.has_value(); }

 private:
  // The placement callback of one round: the model with a cut per earlier overflow, solved.
  absl::StatusOr<std::vector<std::optional<VirtualDevice>>> Choose(const ir::Module& m,
                                                                   const PlacementClasses& classes);
  PlacementSolveOptions SolveOptions(size_t classes) const;
  void Record(const PlacementSolution& solution, size_t classes);
  std::vector<std::optional<VirtualDevice>> Chosen(const PlacementModel& model, const PlacementClasses& classes,
                                                   const std::vector<int>& device) const;
  // After a round's plan: the points where it overflows, or an error when only what the cuts do
  // not count overflows. True when a new cut was added.
  absl::StatusOr<bool> AddOverflows(const PlanResult& plan);
  void Finish(const PlanResult& plan);
  // The error of a round past the time limit; `why`: what the solver said, if anything.
  absl::Status OutOfTime(absl::string_view why) const;

  const ir::Module& module_;
  const Machine& machine_;
  const OptimizeOptions& options_;
  const std::vector<uint32_t> points_;
  PlanError* error_;
  std::vector<LiveValue> input_values_;  // made at the first overflow
  std::vector<Overflow> overflows_;
  std::optional<PlanError> capacity_error_;
  std::optional<PlanError> model_error_;  // located: an op that no device of the machine implements
  double seconds_left_ = 0;
  Cost lower_bound_ = 0;
  RoundsResult result_;
};

PlacementSolveOptions CapacityRounds::SolveOptions(size_t classes) const {
  PlacementSolveOptions solve;
  solve.time_limit_seconds = seconds_left_;
  solve.slow_after_seconds = options_.progress_after_seconds;
  solve.bound_first = options_.bound_first;
  if (!options_.capacity_search) solve.capacity_search_nodes = 0;
  if (!options_.progress) return solve;
  solve.on_slow_solve = [progress = options_.progress, classes](const PlacementProgress& p) {
    std::string line = absl::StrCat("optimising the placement of ", classes, " classes (", p.z3_variables,
                                    " left for Z3 after shrinking");
    if (p.best != kForbidden) {
      absl::StrAppend(&line, "; best so far ", Milliseconds(p.best), ", lower bound ", Milliseconds(p.lower_bound),
                      ", gap ", GapPercent(p.best, p.lower_bound));
    } else {
      absl::StrAppend(&line, "; lower bound ", Milliseconds(p.lower_bound));
    }
    progress(line + ")…");
  };
  return solve;
}

void CapacityRounds::Record(const PlacementSolution& solution, size_t classes) {
  OptimizedPlan& r = result_.optimized;
  r.optimal = solution.optimal;
  result_.model_cost = solution.cost;
  lower_bound_ = solution.lower_bound;
  result_.relaxation_bound = solution.relaxation_bound;
  r.classes = classes;
  r.z3_variables = solution.z3_variables;
  r.solve_seconds += solution.seconds;
  r.class_devices = solution.device;
}

std::vector<std::optional<VirtualDevice>> CapacityRounds::Chosen(const PlacementModel& model,
                                                                 const PlacementClasses& classes,
                                                                 const std::vector<int>& device) const {
  std::vector<bool> in_cut(classes.device.size(), false);
  for (const PlacementModel::CapacityCut& cut : model.capacity) {
    for (const auto& t : cut.terms) {
      in_cut[t.var] = true;
      if (t.other != UINT32_MAX) in_cut[t.other] = true;
    }
  }
  std::vector<std::optional<VirtualDevice>> chosen(classes.device.size());
  for (size_t c = 0; c < chosen.size(); ++c) {
    if (!classes.passive[c] || in_cut[c]) chosen[c] = machine_.devices[device[c]];
  }
  return chosen;
}

absl::StatusOr<std::vector<std::optional<VirtualDevice>>> CapacityRounds::Choose(const ir::Module& m,
                                                                                 const PlacementClasses& classes) {
  absl::StatusOr<PlacementModel> built = BuildPlacementModel(m, classes, machine_);
  if (!built.ok()) {
    model_error_ = LocatedModelError(built.status());
    return built.status();
  }
  PlacementModel& model = *built;
  // One cut per point where an earlier round's plan overflowed.
  std::vector<std::vector<ir::ValueRef>> term_values(overflows_.size());
  for (size_t k = 0; k < overflows_.size(); ++k) {
    const Overflow& o = overflows_[k];
    model.capacity.push_back(CapacityCutAt(input_values_, classes, machine_, o.item, o.point, o.device,
                                           CapacityLimit(machine_, o.device), &term_values[k]));
  }
  absl::StatusOr<PlacementSolution> solution = SolvePlacement(model, SolveOptions(classes.device.size()));
  if (absl::IsFailedPrecondition(solution.status())) {
    capacity_error_ = ExplainCapacity(m, classes, model, term_values, overflows_, machine_);
    return absl::InvalidArgumentError(capacity_error_->message);
  }
  if (!solution.ok()) return solution.status();
  VDEV_RETURN_IF_ERROR(CheckWithinCostRange(model, solution->device));
  Record(*solution, classes.device.size());
  return Chosen(model, classes, solution->device);
}

absl::StatusOr<bool> CapacityRounds::AddOverflows(const PlanResult& plan) {
  OptimizedPlan& r = result_.optimized;
  r.peak_bytes.clear();
  std::vector<Overflow> overflowed;
  std::vector<DevicePeak> peaks = PeakBytes(plan, points_, machine_);
  for (int d = 0; d < static_cast<int>(peaks.size()); ++d) {
    r.peak_bytes.push_back(static_cast<double>(peaks[d].bytes));
    if (peaks[d].bytes > CapacityLimit(machine_, d)) overflowed.push_back({d, peaks[d].item, peaks[d].point});
  }
  if (overflowed.empty()) return false;
  bool added = false;
  for (const Overflow& candidate : overflowed) {
    bool seen = std::any_of(overflows_.begin(), overflows_.end(), [&](const Overflow& o) {
      return o.device == candidate.device && o.item == candidate.item && o.point == candidate.point;
    });
    if (seen) continue;
    if (input_values_.empty()) input_values_ = LiveValues(module_, points_);
    overflows_.push_back(candidate);
    added = true;
  }
  if (added) return true;
  // Every cut there held, so what overflows is what the cuts do not count (copies the planner adds
  // at conflicts and kernel boundaries): not modelled, so not silently accepted.
  const Overflow& o = overflowed.front();
  ir::BindingId at = BindingAt(module_, o.item, o.point);
  error_->loc = at == ir::kNoBinding ? SourceLoc{} : module_.bindings[at].expr.loc;
  error_->message = absl::StrCat(
      "the optimised plan needs ", peaks[o.device].bytes, " bytes on ", machine_.devices[o.device].ToString(),
      " here (capacity ", CapacityLimit(machine_, o.device), "), partly for copies the capacity model does not count");
  error_->conflicts.clear();
  return absl::UnimplementedError(absl::StrCat(error_->loc.line, ":", error_->loc.col, ": ", error_->message));
}

void CapacityRounds::Finish(const PlanResult& plan) {
  OptimizedPlan& r = result_.optimized;
  r.capacity_cuts = overflows_.size();
  // With cuts, optimality holds where the cuts bound the plans' live bytes from below; copies the
  // planner adds (conflicts, kernel boundaries) can end a value's life earlier than the cut counts.
  bool added_copies = std::any_of(plan.copies.begin(), plan.copies.end(),
                                  [&](const PlannedCopy& c) { return c.binding >= plan.input_bindings; });
  if (!overflows_.empty() && added_copies) {
    // The optimum under the cuts may then exceed the optimum under capacity: only the bound that
    // ignores the cuts is proven; meeting the plan's cost, it still proves the plan optimal.
    lower_bound_ = result_.relaxation_bound;
    r.optimal = lower_bound_ == result_.model_cost;
  }
  const Cost model_cost = result_.model_cost;
  r.model_cost = Seconds(model_cost);
  r.lower_bound = Seconds(lower_bound_);
  r.gap = model_cost == 0 ? 0 : static_cast<double>(model_cost - lower_bound_) / static_cast<double>(model_cost);
}

absl::Status CapacityRounds::OutOfTime(absl::string_view why) const {
  return absl::DeadlineExceededError(absl::StrCat("no plan within every device's capacity in the time limit (",
                                                  overflows_.size(), " capacity cuts", why, ")"));
}

absl::StatusOr<RoundsResult> CapacityRounds::Run() {
  auto choose = [this](const ir::Module& m, const PlacementClasses& classes) { return Choose(m, classes); };
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    seconds_left_ =
        options_.time_limit_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!overflows_.empty() && seconds_left_ <= 0) return OutOfTime("");
    absl::StatusOr<PlanResult> plan = PlanWithPlacement(module_.Clone(), options_.plan, choose, error_);
    if (const std::optional<PlanError>& located = capacity_error_ ? capacity_error_ : model_error_;
        !plan.ok() && located) {
      *error_ = *located;
      return absl::InvalidArgumentError(absl::StrCat(located->loc.line, ":", located->loc.col, ": ", located->message));
    }
    // A solve with cuts that ran out of time (Z3 found no model, or was abandoned at its deadline).
    if (!plan.ok() && absl::IsDeadlineExceeded(plan.status()) && !overflows_.empty()) {
      return OutOfTime(absl::StrCat("; ", plan.status().message()));
    }
    if (!plan.ok()) return plan.status();
    VDEV_ASSIGN_OR_RETURN(bool solve_again, AddOverflows(*plan));
    if (solve_again) continue;
    Finish(*plan);
    result_.optimized.plan = *std::move(plan);
    return std::move(result_);
  }
}

}  // namespace

absl::StatusOr<RoundsResult> SolveWithCapacity(const ir::Module& module, const Machine& machine,
                                               const OptimizeOptions& options, PlanError* error,
                                               bool* capacity_infeasible) {
  CapacityRounds rounds(module, machine, options, error);
  absl::StatusOr<RoundsResult> result = rounds.Run();
  if (capacity_infeasible != nullptr) *capacity_infeasible = !result.ok() && rounds.capacity_infeasible();
  return result;
}

}  // namespace vdev::planner_internal
