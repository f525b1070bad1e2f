// Z3 encoding of device conflicts: one integer per device field per node, equalities between nodes,
// and one tracking literal per pin; unsat core, deletion-based minimisation, plain re-check.
#include "src/planner/conflict_core.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace vdev::planner_internal {
namespace {

// Device fields as integers: scopes and targets are numbered in order of appearance.
struct FieldCodes {
  absl::flat_hash_map<std::string, int> scopes;
  absl::flat_hash_map<std::string, int> targets;
  int Scope(const std::string& s) { return scopes.try_emplace(s, static_cast<int>(scopes.size())).first->second; }
  int Target(const std::string& t) { return targets.try_emplace(t, static_cast<int>(targets.size())).first->second; }
};

class Encoding {
 public:
  Encoding(const ConflictProblem& problem, unsigned resource_limit) : solver_(context_) {
    z3::params params(context_);
    params.set("random_seed", 0u);
    params.set("rlimit", resource_limit);
    solver_.set(params);
    for (const auto& [a, b] : problem.equalities) {
      for (int f = 0; f < kFields; ++f) solver_.add(Var(a, f) == Var(b, f));
    }
    for (size_t i = 0; i < problem.pins.size(); ++i) {
      const DevicePin& pin = problem.pins[i];
      z3::expr track = context_.bool_const(absl::StrCat("pin", i).c_str());
      z3::expr_vector fields(context_);
      const VirtualDevice& d = pin.device;
      if (d.has_device_type()) fields.push_back(Var(pin.node, 0) == static_cast<int>(d.device_type()));
      if (d.has_id()) fields.push_back(Var(pin.node, 1) == d.virtual_device_id());
      if (d.has_memory_scope()) fields.push_back(Var(pin.node, 2) == codes_.Scope(d.memory_scope()));
      if (d.has_target()) fields.push_back(Var(pin.node, 3) == codes_.Target(d.target()->ToString()));
      if (!fields.empty()) solver_.add(z3::implies(track, z3::mk_and(fields)));
      tracks_.push_back(track);
      index_of_.emplace(track.id(), i);
    }
  }

  // kUnsat with the core's pin indices, or the solver's verdict.
  z3::check_result Check(const std::vector<size_t>& pins, std::vector<size_t>* core) {
    z3::expr_vector assumptions(context_);
    for (size_t i : pins) assumptions.push_back(tracks_[i]);
    ++calls_;
    z3::check_result result = solver_.check(assumptions);
    if (result == z3::unsat && core != nullptr) {
      core->clear();
      z3::expr_vector unsat_core = solver_.unsat_core();
      for (unsigned i = 0; i < unsat_core.size(); ++i) core->push_back(index_of_.at(unsat_core[i].id()));
      std::sort(core->begin(), core->end());
    }
    return result;
  }
  int calls() const { return calls_; }

 private:
  static constexpr int kFields = 4;  // type, id, scope, target
  z3::expr Var(uint32_t node, int field) {
    static constexpr const char* kNames[kFields] = {"type", "id", "scope", "target"};
    return context_.int_const(absl::StrCat(kNames[field], "_", node).c_str());
  }

  z3::context context_;
  z3::solver solver_;
  FieldCodes codes_;
  std::vector<z3::expr> tracks_;
  absl::flat_hash_map<unsigned, size_t> index_of_;
  int calls_ = 0;
};

absl::StatusOr<std::vector<size_t>> Solve(const ConflictProblem& problem, Encoding& encoding) {
  std::vector<size_t> all(problem.pins.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<size_t> core;
  z3::check_result result = encoding.Check(all, &core);
  if (result == z3::sat) return absl::NotFoundError("the annotations hold together");
  if (result == z3::unknown) return absl::ResourceExhaustedError("Z3 reached its resource limit on the conflict");
  // Deletion: drop each pin whose removal keeps the rest unsat (and adopt the smaller core).
  for (size_t k = 0; k < core.size();) {
    std::vector<size_t> without = core;
    without.erase(without.begin() + static_cast<ptrdiff_t>(k));
    std::vector<size_t> smaller;
    z3::check_result r = encoding.Check(without, &smaller);
    if (r == z3::unknown) {
      return absl::ResourceExhaustedError("Z3 reached its resource limit while minimising a conflict");
    }
    if (r == z3::unsat) {
      core = smaller;
      k = 0;
    } else {
      ++k;
    }
  }
  return core;
}

}  // namespace

bool PinsHoldTogether(const ConflictProblem& problem, absl::Span<const size_t> pins) {
  std::vector<uint32_t> parent(problem.num_nodes);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&parent](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [a, b] : problem.equalities) parent[find(a)] = find(b);
  absl::flat_hash_map<uint32_t, VirtualDevice> device;
  for (size_t i : pins) {
    const DevicePin& pin = problem.pins[i];
    VirtualDevice& d = device[find(pin.node)];
    std::optional<VirtualDevice> joined = Join(d, pin.device);
    if (!joined) return false;
    d = *joined;
  }
  return true;
}

absl::StatusOr<std::vector<size_t>> FindMinimalConflict(const ConflictProblem& problem, ConflictCoreStats* stats,
                                                        unsigned resource_limit) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<size_t>> core;
  int calls = 0;
  try {
    Encoding encoding(problem, resource_limit);
    core = Solve(problem, encoding);
    calls = encoding.calls();
  } catch (const z3::exception& e) {
    return absl::InternalError(absl::StrCat("Z3: ", e.msg()));
  }
  if (stats != nullptr) {
    stats->solver_calls += calls;
    stats->solver_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (absl::IsNotFound(core.status())) {
    std::vector<size_t> all(problem.pins.size());
    std::iota(all.begin(), all.end(), 0);
    if (!PinsHoldTogether(problem, all)) return absl::InternalError("Z3 found no conflict where the plain check does");
  }
  if (!core.ok()) return core;
  // Re-check in plain C++: the set conflicts, and each pin in it is needed.
  if (PinsHoldTogether(problem, *core)) {
    return absl::InternalError("Z3's conflict holds together under the plain check");
  }
  for (size_t k = 0; k < core->size(); ++k) {
    std::vector<size_t> without = *core;
    without.erase(without.begin() + static_cast<ptrdiff_t>(k));
    if (!PinsHoldTogether(problem, without)) {
      return absl::InternalError("Z3's conflict is not minimal under the plain check");
    }
  }
  return core;
}

}  // namespace vdev::planner_internal
