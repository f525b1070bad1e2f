// The validator's simulation of consecutive executions of a channel program (see validate.cc).
#ifndef VDEV_SRC_CHANNELS_INTERNAL_SIMULATE_H_
#define VDEV_SRC_CHANNELS_INTERNAL_SIMULATE_H_

#include "absl/status/status.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels::internal {

// Runs `calls` executions of a structurally valid program (CheckStructure passed) and reports the
// first deadlock, race, unbalanced semaphore or wrong output.
absl::Status SimulateExecutions(const ProgramSpec& program, int calls);

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_SIMULATE_H_
