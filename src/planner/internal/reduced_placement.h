// The placement problem as SolvePlacement shrinks it, shared by its shrinking
// (placement_solver.cc) and its Z3 part (placement_z3.cc).
#ifndef VDEV_SRC_PLANNER_INTERNAL_REDUCED_PLACEMENT_H_
#define VDEV_SRC_PLANNER_INTERNAL_REDUCED_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/planner/placement_solver.h"

namespace vdev::planner_internal {

inline Cost Add(Cost a, Cost b) { return a == kForbidden || b == kForbidden ? kForbidden : a + b; }

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
  bool keep_local_costs = false;                // each Elimination keeps `local` (capacity_search.h)

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
// chain): v's best device for each device of u (and of w: best[du * d + dw]). With
// Reduced::keep_local_costs, `local` holds v's cost on each device i given u's (and w's) device, of
// which `best` is the least: local[du * d + i], or local[(du * d + dw) * d + i].
struct Elimination {
  uint32_t v;
  uint32_t u;
  uint32_t w;  // UINT32_MAX for a leaf
  std::vector<int> best;
  std::vector<Cost> local;
};

// The shrinking (placement_shrink.cc). Reduce: the model's costs, parallel pairs merged and oriented
// a < b, the cuts naming each variable (InvalidArgument when a variable has no allowed device).
absl::StatusOr<Reduced> Reduce(const PlacementModel& model);
// Variables with one allowed device are fixed; their pairs become their neighbours' costs.
void FixSingleDeviceVariables(Reduced& r);
// Leaves and links of chains not named by a cut are eliminated exactly, repeatedly (in `eliminated`'s
// order); isolated variables get their cheapest device in `device`.
void EliminateLeavesAndLinks(Reduced& r, std::vector<Elimination>& eliminated, std::vector<int>& device);

// How long Z3 may take: `seconds` (its timeout; past it plus kZ3DeadlineMargin the solve is
// interrupted, and after another margin abandoned to finish on its own thread) and, when not 0,
// `rlimit` (Z3's deterministic resource units).
struct Z3Limits {
  double seconds = 60;
  uint64_t rlimit = 0;
};
inline constexpr double kZ3DeadlineMargin = 0.5;

// One component in Z3: devices as an enumeration sort, unary and pair costs as soft constraints
// inside push()/pop() (check with assumptions returned non-optimal models), MaxRes, the capacity
// cuts naming its variables as hard constraints. `lower`: a lower bound on the component's cost
// proven by Z3 (its objective's lower bound, also after a timeout), at least the sum of its costs'
// minima. DeadlineExceeded when Z3 found no model within its limits; the call returns by
// limits.seconds + 2 * kZ3DeadlineMargin. No z3::exception leaves it.
absl::Status SolveComponent(const Reduced& r, const PlacementModel& problem, const std::vector<uint32_t>& vars,
                            const Z3Limits& limits, std::vector<int>& device, bool& optimal, Cost& lower);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_REDUCED_PLACEMENT_H_
