// What the host and CUDA executors check of a plan before they allocate for it.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_PLAN_CHECKS_H_
#define VDEV_SRC_CHANNELS_INTERNAL_PLAN_CHECKS_H_

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "vdev/channels/channel_program.h"
#include "vdev/runtime/peer_group.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::internal {

// Valid, and for the session's world size.
inline absl::Status CheckPlanForSession(const ProgramSpec& plan, const PeerGroup& session) {
  VDEV_RETURN_IF_ERROR(ValidateProgram(plan));
  if (plan.world_size != session.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", plan.name, " is for ", plan.world_size,
                                                   " ranks; the session has ", session.world_size()));
  }
  return absl::OkStatus();
}

// The largest tag of the plan's channels (-1: none); instance i of tag t uses semaphore tag
// t * instances + i.
inline int MaxTag(const ProgramSpec& plan) {
  int max_tag = -1;
  for (const auto* channels : {&plan.memory_channels, &plan.port_channels}) {
    for (const ChannelSpec& c : *channels) max_tag = std::max(max_tag, c.tag);
  }
  return max_tag;
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_PLAN_CHECKS_H_
