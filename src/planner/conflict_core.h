// The smallest set of device annotations that cannot hold together, found with Z3.
//
// The planner states a conflict as nodes (values, use sites) that must share a device, plus pins:
// annotations that fix some fields of one node's device. FindMinimalConflict asks Z3 for an unsat
// core of the tracked pins, shrinks it by deletion until every pin in it is needed, and re-checks
// the answer in plain C++ (the set cannot hold, every set with one pin fewer can) before returning.
// Z3 stays inside conflict_core.cc: no z3 header leaks, no z3::exception crosses this interface.
//
// Because the lattice's Join fails field by field, two pins always suffice for a conflict, so the
// irreducible core found by deletion is also a smallest one.
#ifndef VDEV_SRC_PLANNER_CONFLICT_CORE_H_
#define VDEV_SRC_PLANNER_CONFLICT_CORE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::planner_internal {

struct DevicePin {
  uint32_t node = 0;
  VirtualDevice device;
};

struct ConflictProblem {
  uint32_t num_nodes = 0;
  // Hard: the two nodes live on one device.
  std::vector<std::pair<uint32_t, uint32_t>> equalities;
  // Tracked: the node's device agrees with `device` on every field `device` sets.
  std::vector<DevicePin> pins;
};

struct ConflictCoreStats {
  int solver_calls = 0;
  double solver_seconds = 0;
};

// Z3's budget per check, in its deterministic resource units rather than seconds, so that whether
// a conflict gets explained never depends on how loaded the machine is. Measured: ~33 units per
// equality per check on a chain, so this admits classes of ~300,000 nodes (~8 s on the build machine).
inline constexpr unsigned kConflictResourceLimit = 10'000'000;

// Indices into problem.pins of a smallest subset that cannot hold together, in increasing order.
// NotFound when all pins hold together; Internal when Z3's answer fails the plain re-check;
// ResourceExhausted when a check needs more than `resource_limit` units.
absl::StatusOr<std::vector<size_t>> FindMinimalConflict(const ConflictProblem& problem,
                                                        ConflictCoreStats* stats = nullptr,
                                                        unsigned resource_limit = kConflictResourceLimit);

// Plain C++: whether the chosen pins hold together under the equalities (union-find and Join).
bool PinsHoldTogether(const ConflictProblem& problem, absl::Span<const size_t> pins);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_CONFLICT_CORE_H_
