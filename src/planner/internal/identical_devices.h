// Identical devices, searched once: a machine's devices of one type and one spec whose links are all
// their type's (no pair link names one) are interchangeable. Moving everything one of them holds
// onto another changes no op's cost and no copy's cost to a third device, and removes the copies
// between the two, so without capacity limits some optimal placement uses only one of them that the
// program does not name. The optimiser therefore solves on a sub-machine: every device a pair link or
// the program names (by id, any type: an annotation, the default or host device), and of each group
// of identical devices that nothing names, the first `keep` (the program's capacity may need more
// than one; OptimizePlacement doubles `keep` when it does). Its set-up then grows with the devices
// the program can tell apart, not with the machine.
#ifndef VDEV_SRC_PLANNER_INTERNAL_IDENTICAL_DEVICES_H_
#define VDEV_SRC_PLANNER_INTERNAL_IDENTICAL_DEVICES_H_

#include <vector>

#include "vdev/ir/ir.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::planner_internal {

struct DeviceSubset {
  Machine machine;              // the kept devices, in the full machine's order
  std::vector<int> full_index;  // by device of `machine`: its index in the full machine
  bool complete = true;         // every device kept (the sub-machine is the machine)
};

DeviceSubset KeepIdenticalDevices(const ir::Module& module, const PlanOptions& options, const Machine& machine,
                                  int keep);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_IDENTICAL_DEVICES_H_
