// Port channels on the GPU: the plan kernel (cuda_executor.cu) writes each port put or signal as a
// request into a FIFO in host-mapped memory; one host thread per rank (PortProxy) serves them in
// order with copy-engine transfers on its own stream — the data with cudaMemcpyAsync between the
// ranks' buffers, then the signal as an 8-byte copy of the count into the peer's port semaphore
// word, so a peer that sees the count sees the data — and reports each finished request back
// through the same memory, which a kernel's flush waits for. No SM copies the data. Port channels
// count in semaphores of their own (a region's barrier_out words; memory channels' are barrier_in).
//
//   PortFifo* fifo = ...;                        // cudaHostAlloc(cudaHostAllocMapped), zeroed
//   VDEV_RETURN_IF_ERROR(CheckWorkQueues(2));    // the rank's stream and the proxy's
//   auto proxy = PortProxy::Start(fifo, ports);   // every rank's port semaphores; then launch plans
//   ...
//   VDEV_RETURN_IF_ERROR(proxy->Stop());          // after the kernels: the first CUDA error, if any
//
// Work queues: the driver feeds every stream through one of CUDA_DEVICE_MAX_CONNECTIONS hardware
// queues (8 unless set before CUDA starts; at most 32), assigned as streams are created. A queue runs
// its commands in order, so when a proxy's stream shares one with a stream holding a kernel that
// waits for this proxy and a later kernel behind it (enqueued back to back), the later kernel blocks
// the queue until the first finishes, and the proxy's copy behind it never starts: a deadlock that
// only the waits' timeout ends. This is what hung all_gather_port's 300 back-to-back executions with
// 5 ranks in one process (2 x 5 streams on 8 queues); given 32 queues, the same build passed them
// for 2..8 ranks (docs/channels.md). Every stream whose kernels wait for a proxy and every proxy
// stream must therefore have a queue of its own: one process with N ranks needs 2N queues.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_
#define VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "internal/port_fifo.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::channels::internal {

// The host's side of a PortFifo's protocol, apart from how requests are carried out (PortProxy does
// it with CUDA copies; tests/channels/port_fifo_test.cc with a fake, no GPU): takes the requests in
// ticket order as each one's seq appears, and retires them in the same order.
class PortFifoReader {
 public:
  // `semaphores`: every rank's port semaphore words (kPortSemaphoreWords each, device addresses),
  // the only places a request may signal.
  PortFifoReader(PortFifo* fifo, std::vector<uint64_t*> semaphores);
  // The next request once the kernel has written all of it (a copy; its slot is `ticket` % slots):
  // true, or false when there is none yet; an error when its semaphore is none of a rank's words.
  // The slot stays the kernel's to reuse only after Retire(ticket).
  absl::StatusOr<bool> Next(PortRequest* request, uint64_t* ticket);
  // Publishes that every request up to `ticket` is finished (tickets retire in order).
  void Retire(uint64_t ticket);
  PortFifo* fifo() const { return fifo_; }

 private:
  PortFifo* fifo_;
  std::vector<uint64_t*> semaphores_;
  uint64_t next_;
};

// OK when the process's work queues (CUDA_DEVICE_MAX_CONNECTIONS, default 8) number at least
// `streams`: the streams that run plans with port channels plus one per PortProxy (see above).
absl::Status CheckWorkQueues(int streams);

class PortProxy {
 public:
  // Starts the thread that serves `fifo` (host address; the kernel gets the device one) on a new
  // stream of the current device; `semaphores` as PortFifoReader's.
  static absl::StatusOr<std::unique_ptr<PortProxy>> Start(PortFifo* fifo, std::vector<uint64_t*> semaphores);
  ~PortProxy();

  // Finishes the requests already written, stops the thread and returns the first CUDA error.
  absl::Status Stop();
  // How far the requests got, for a wait that timed out: written by the kernels (their seq seen in
  // the FIFO), taken by the proxy, their copies enqueued (the CUDA calls returned), finished.
  std::string Progress() const;

 private:
  PortProxy(PortFifo* fifo, std::vector<uint64_t*> semaphores) : reader_(fifo, std::move(semaphores)) {}
  void Serve();

  PortFifoReader reader_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t events_[kPortFifoSlots] = {};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> taken_{0}, enqueued_{0}, finished_{0};  // requests, for Progress
  absl::Status error_;                                          // written by the thread, read after join
  std::thread thread_;
};

// A rank's port-channel endpoint on the current device: its FIFO in host-mapped memory (the kernel
// writes requests at fifo_device()), its ticket counter in device memory (zeroed) and the proxy that
// serves the FIFO, signalling into `semaphores` (every rank's port semaphore words). Destroying it
// stops the proxy before the FIFO goes.
class PortEndpoint {
 public:
  static absl::StatusOr<std::unique_ptr<PortEndpoint>> Start(std::vector<uint64_t*> semaphores);
  ~PortEndpoint();
  PortFifo* fifo_device() const { return fifo_device_; }
  unsigned long long* tickets() const { return tickets_; }
  std::string Progress() const { return proxy_->Progress(); }

 private:
  PortEndpoint() = default;
  PortFifo* fifo_ = nullptr;
  PortFifo* fifo_device_ = nullptr;
  unsigned long long* tickets_ = nullptr;
  std::unique_ptr<PortProxy> proxy_;
};

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_CUDA_PROXY_H_
