// An exact search for the cheapest assignment within the capacity cuts, in plain C++, for models whose
// pair graph (cuts ignored) shrinks to small pieces: chains, trees and series-parallel programs such
// as layer pipelines. SolvePlacement tries it before Z3 whenever a model has capacity cuts.
//
// How it works: the cuts are set aside and the model is shrunk exactly (fixed variables folded, leaves
// and chain links eliminated, placement_shrink.cc) keeping each eliminated variable's cost table.
// What is left (the core) splits into pieces small enough to enumerate. Choosing the pieces'
// assignments, then the eliminated variables in reverse order, every choice adds an exact excess
// (its cost minus the cheapest choice there given the choices before it) to the unconstrained
// optimum, so every partial assignment knows the cost of its cheapest completion (ignoring the cuts).
// A depth-first search explores the partial assignments whose completion costs at most a threshold,
// pruning those whose bytes already placed exceed a cut's limit; the threshold starts at the
// unconstrained optimum and rises to the least cost it cut off, so the first assignment within the
// cuts that the search completes is an optimum (iterative deepening, A* with an exact heuristic).
// No search level recurses: the stack is a vector of frames, one per level.
//
// Gives up (the caller runs Z3) when the core has a piece of more than kMaxPieceAssignments
// assignments, the machine has more than kMaxSearchDevices devices, or the node or time budget runs out.
#ifndef VDEV_SRC_PLANNER_INTERNAL_CAPACITY_SEARCH_H_
#define VDEV_SRC_PLANNER_INTERNAL_CAPACITY_SEARCH_H_

#include <cstdint>
#include <vector>

#include "src/planner/placement_solver.h"

namespace vdev::planner_internal {

inline constexpr int kMaxSearchDevices = 16;
inline constexpr int64_t kMaxPieceAssignments = 4096;

struct CapacitySearchLimits {
  uint64_t max_nodes = 0;  // choices tried over all rounds of deepening
  double seconds = 0;
};

struct CapacitySearchResult {
  enum class Outcome { kOptimal, kInfeasible, kGaveUp };
  Outcome outcome = Outcome::kGaveUp;
  std::vector<int> device;  // kOptimal: an optimum within every cut
  Cost cost = 0;            // kOptimal: its cost
  Cost unconstrained = 0;   // the optimum ignoring the cuts (kOptimal and kInfeasible)
  uint64_t nodes = 0;
};

CapacitySearchResult SearchWithinCapacity(const PlacementModel& model, const CapacitySearchLimits& limits);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_CAPACITY_SEARCH_H_
