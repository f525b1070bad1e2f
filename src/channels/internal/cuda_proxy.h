// Port channels on the GPU: the plan kernel (cuda_executor.cu) writes each port put or signal as a
// request into a FIFO in host-mapped memory; one host thread per rank (PortProxy) serves them in
// order with copy-engine transfers on its own stream — the data with cudaMemcpyAsync between the
// ranks' buffers, then the signal as an 8-byte copy of the count into the peer's semaphore word, so
// a peer that sees the count sees the data — and reports each finished request back through the
// same memory, which a kernel's flush waits for. No SM copies the data.
//
//   PortFifo* fifo = ...;                        // cudaHostAlloc(cudaHostAllocMapped), zeroed
//   auto proxy = PortProxy::Start(fifo);          // then launch plans with args.port_fifo set
//   ...
//   VDEV_RETURN_IF_ERROR(proxy->Stop());          // after the kernels: the first CUDA error, if any
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vdev::channels::internal {

// Requests in flight per rank; a kernel that finds the FIFO full waits (bounded) for a slot.
inline constexpr int kPortFifoSlots = 256;

// One request. `seq` is written last (ticket + 1) and tells the proxy the slot is complete.
struct PortRequest {
  uint64_t dst;        // device address; 0 with bytes 0: a signal alone
  uint64_t src;
  uint64_t bytes;
  uint64_t semaphore;  // the peer's semaphore word (device address); 0: no signal
  uint64_t count;      // the value to raise it to
  uint64_t seq;
};

// Host-mapped, zeroed before the first launch. The kernel takes tickets from a device counter
// (PlanLaunchArgs::port_tickets); ticket t uses slot t % kPortFifoSlots once `done` > t - slots.
struct PortFifo {
  PortRequest slots[kPortFifoSlots];
  uint64_t values[kPortFifoSlots];  // the proxy's copy of each request's count (the signal's source)
  uint64_t done;                    // requests finished, in ticket order (written by the proxy)
};

class PortProxy {
 public:
  // Starts the thread that serves `fifo` (host address; the kernel gets the device one) on a new
  // stream of the current device.
  static absl::StatusOr<std::unique_ptr<PortProxy>> Start(PortFifo* fifo);
  ~PortProxy();

  // Finishes the requests already written, stops the thread and returns the first CUDA error.
  absl::Status Stop();

 private:
  PortProxy() = default;
  void Serve();

  PortFifo* fifo_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[kPortFifoSlots] = {};
  std::atomic<bool> stop_{false};
  absl::Status error_;  // written by the thread, read after join
  std::thread thread_;
};

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_
