// The port FIFO as the plan kernel and the host proxy share it (internal/cuda_proxy.h serves it):
// requests, their slots and the port semaphores' size. Device-visible: compiled plans include it
// through NVRTC (internal/compiled_plan.h), so it includes nothing but the fixed-width integers.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_PORT_FIFO_H_
#define VDEV_SRC_CHANNELS_INTERNAL_PORT_FIFO_H_

#include <cstddef>
#include <cstdint>

#include "vdev/runtime/peer_group.h"

namespace vdev::channels::internal {

// Requests in flight per rank; a kernel that finds the FIFO full waits (bounded) for a slot.
inline constexpr int kPortFifoSlots = 256;
// A rank's port semaphore words (device memory): word [tag * kMaxWorkers + src] counts rank src's
// port signals, as PlanLaunchArgs::semaphores do memory channels' (256 tags).
inline constexpr size_t kPortSemaphoreWords = size_t{256} * kMaxWorkers;
inline constexpr size_t kPortSemaphoreBytes = kPortSemaphoreWords * sizeof(uint64_t);

// One request. `seq` is written last (ticket + 1) and tells the proxy the slot is complete.
struct PortRequest {
  uint64_t dst;  // device address; 0 with bytes 0: a signal alone
  uint64_t src;
  uint64_t bytes;
  uint64_t semaphore;  // the peer's port semaphore word (device address); 0: no signal
  uint64_t count;      // the value to raise it to
  uint64_t seq;
};

// Host-mapped, zeroed before the first launch. The kernel takes tickets from a device counter
// (PlanLaunchArgs::port_tickets); ticket t uses slot t % kPortFifoSlots once `done` > t - slots.
// A kernel whose wait for a slot times out leaves its ticket unwritten: the proxy then serves
// nothing more from this FIFO (the kernels' waits report the timeout; a new FIFO is needed).
struct PortFifo {
  PortRequest slots[kPortFifoSlots];
  uint64_t values[kPortFifoSlots];  // the proxy's copy of each request's count (the signal's source)
  uint64_t done;                    // requests finished, in ticket order (written by the proxy)
};

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_PORT_FIFO_H_
