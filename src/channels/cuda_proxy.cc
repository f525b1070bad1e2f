// PortProxy: the host thread that serves a rank's port-channel requests (see internal/cuda_proxy.h).
#include "internal/cuda_proxy.h"

#include <deque>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace vdev::channels::internal {
namespace {

absl::Status Cuda(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("port proxy: ", what, ": ", cudaGetErrorString(e)));
}

// The kernel writes the FIFO over the bus; these reads and the `done` store must not be cached or
// reordered by the compiler (the kernel orders its own writes with a system fence before `seq`).
uint64_t Read(const uint64_t& word) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(word)).load(std::memory_order_acquire);
}
void Write(uint64_t& word, uint64_t v) { std::atomic_ref<uint64_t>(word).store(v, std::memory_order_release); }

}  // namespace

absl::StatusOr<std::unique_ptr<PortProxy>> PortProxy::Start(PortFifo* fifo) {
  std::unique_ptr<PortProxy> p(new PortProxy());
  p->fifo_ = fifo;
  if (absl::Status s = Cuda(cudaStreamCreateWithFlags(&p->stream_, cudaStreamNonBlocking), "stream"); !s.ok()) return s;
  for (cudaEvent_t& e : p->events_) {
    if (absl::Status s = Cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event"); !s.ok()) return s;
  }
  int device = 0;
  if (absl::Status s = Cuda(cudaGetDevice(&device), "device"); !s.ok()) return s;
  PortProxy* raw = p.get();
  p->thread_ = std::thread([raw, device] {
    raw->error_ = Cuda(cudaSetDevice(device), "set device");
    if (raw->error_.ok()) raw->Serve();
  });
  return p;
}

// Takes requests in ticket order as their `seq` appears, enqueues each one's copies and an event,
// and retires finished ones in order (advancing `done`). Stops when asked and nothing is left.
void PortProxy::Serve() {
  uint64_t next = Read(fifo_->done);
  std::deque<uint64_t> pending;
  while (true) {
    bool idle = true;
    PortRequest& q = fifo_->slots[next % kPortFifoSlots];
    if (Read(q.seq) == next + 1) {
      idle = false;
      const size_t k = next % kPortFifoSlots;
      const uint64_t bytes = Read(q.bytes), semaphore = Read(q.semaphore);
      if (bytes > 0) {
        error_.Update(Cuda(cudaMemcpyAsync(reinterpret_cast<void*>(Read(q.dst)), reinterpret_cast<const void*>(Read(q.src)),
                                           bytes, cudaMemcpyDeviceToDevice, stream_),
                           "data copy"));
      }
      if (semaphore != 0) {
        Write(fifo_->values[k], Read(q.count));
        error_.Update(Cuda(cudaMemcpyAsync(reinterpret_cast<void*>(semaphore), &fifo_->values[k], sizeof(uint64_t),
                                           cudaMemcpyHostToDevice, stream_),
                           "signal"));
      }
      error_.Update(Cuda(cudaEventRecord(events_[k], stream_), "event"));
      pending.push_back(next++);
    }
    while (!pending.empty()) {
      const cudaError_t e = cudaEventQuery(events_[pending.front() % kPortFifoSlots]);
      if (e == cudaErrorNotReady) break;
      error_.Update(Cuda(e, "completion"));
      idle = false;
      Write(fifo_->done, pending.front() + 1);
      pending.pop_front();
    }
    if (!error_.ok()) return;  // the kernels' waits time out and report it
    if (idle) {
      if (stop_.load(std::memory_order_acquire) && pending.empty()) return;
      std::this_thread::yield();
    }
  }
}

absl::Status PortProxy::Stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  return error_;
}

PortProxy::~PortProxy() {
  Stop().IgnoreError();
  for (cudaEvent_t e : events_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

}  // namespace vdev::channels::internal
