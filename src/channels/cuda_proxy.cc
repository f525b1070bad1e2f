// PortProxy: the host thread that serves a rank's port-channel requests (see internal/cuda_proxy.h).
#include "internal/cuda_proxy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
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

PortFifoReader::PortFifoReader(PortFifo* fifo, std::vector<uint64_t*> semaphores)
    : fifo_(fifo), semaphores_(std::move(semaphores)), next_(Read(fifo->done)) {}

absl::StatusOr<bool> PortFifoReader::Next(PortRequest* request, uint64_t* ticket) {
  PortRequest& q = fifo_->slots[next_ % kPortFifoSlots];
  if (Read(q.seq) != next_ + 1) return false;
  request->dst = Read(q.dst);
  request->src = Read(q.src);
  request->bytes = Read(q.bytes);
  request->semaphore = Read(q.semaphore);
  request->count = Read(q.count);
  request->seq = next_ + 1;
  if (request->semaphore != 0) {
    // The proxy copies where the kernel said: only ever into a rank's port semaphore words.
    const bool known = std::any_of(semaphores_.begin(), semaphores_.end(), [&](const uint64_t* words) {
      const uintptr_t begin = reinterpret_cast<uintptr_t>(words);
      return words != nullptr && request->semaphore >= begin && request->semaphore < begin + kPortSemaphoreBytes &&
             (request->semaphore - begin) % sizeof(uint64_t) == 0;
    });
    if (!known) {
      return absl::InternalError(absl::StrCat("port proxy: request ", next_, " signals address 0x",
                                              absl::Hex(request->semaphore), ", not a rank's port semaphore"));
    }
  }
  *ticket = next_++;
  return true;
}

void PortFifoReader::Retire(uint64_t ticket) { Write(fifo_->done, ticket + 1); }

absl::Status CheckWorkQueues(int streams) {
  int queues = 8;  // the driver's default
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (set != nullptr && !absl::SimpleAtoi(set, &queues)) queues = 8;
  if (streams <= queues) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("port channels: ", streams,
                   " streams (each rank's and each proxy's) need a hardware work queue each, and "
                   "this process has ",
                   queues,
                   " (CUDA_DEVICE_MAX_CONNECTIONS; up to 32, set before CUDA starts): a proxy's "
                   "copy queued behind a waiting kernel would never run"));
}

absl::StatusOr<std::unique_ptr<PortProxy>> PortProxy::Start(PortFifo* fifo, std::vector<uint64_t*> semaphores) {
  std::unique_ptr<PortProxy> p(new PortProxy(fifo, std::move(semaphores)));
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

// Takes requests in ticket order as they appear, enqueues each one's copies and an event, and
// retires finished ones in order. Stops when asked and nothing is left.
void PortProxy::Serve() {
  PortFifo* fifo = reader_.fifo();
  std::deque<uint64_t> pending;
  while (true) {
    bool idle = true;
    PortRequest q;
    uint64_t ticket = 0;
    absl::StatusOr<bool> next = reader_.Next(&q, &ticket);
    if (!next.ok()) {
      error_ = next.status();
      return;  // the kernels' waits time out and report it
    }
    if (*next) {
      idle = false;
      taken_.store(ticket + 1, std::memory_order_relaxed);
      const size_t k = ticket % kPortFifoSlots;
      if (q.bytes > 0) {
        error_.Update(Cuda(cudaMemcpyAsync(reinterpret_cast<void*>(q.dst), reinterpret_cast<const void*>(q.src),
                                           q.bytes, cudaMemcpyDeviceToDevice, stream_),
                           "data copy"));
      }
      if (q.semaphore != 0) {
        // The copy's source must stay put until it ran: values[k] is rewritten only for ticket
        // + slots, which the kernel writes after this request has retired.
        Write(fifo->values[k], q.count);
        error_.Update(Cuda(cudaMemcpyAsync(reinterpret_cast<void*>(q.semaphore), &fifo->values[k], sizeof(uint64_t),
                                           cudaMemcpyHostToDevice, stream_),
                           "signal"));
      }
      error_.Update(Cuda(cudaEventRecord(events_[k], stream_), "event"));
      enqueued_.store(ticket + 1, std::memory_order_relaxed);
      pending.push_back(ticket);
    }
    while (!pending.empty()) {
      const cudaError_t e = cudaEventQuery(events_[pending.front() % kPortFifoSlots]);
      if (e == cudaErrorNotReady) break;
      error_.Update(Cuda(e, "completion"));
      idle = false;
      reader_.Retire(pending.front());
      finished_.store(pending.front() + 1, std::memory_order_relaxed);
      pending.pop_front();
    }
    if (!error_.ok()) return;  // the kernels' waits time out and report it
    if (idle) {
      if (stop_.load(std::memory_order_acquire) && pending.empty()) return;
      std::this_thread::yield();
    }
  }
}

std::string PortProxy::Progress() const {
  uint64_t written = 0;
  for (const PortRequest& q : reader_.fifo()->slots) written = std::max(written, Read(q.seq));
  return absl::StrCat("port requests written ", written, ", taken ", taken_.load(), ", copies enqueued ",
                      enqueued_.load(), ", finished ", finished_.load());
}

absl::Status PortProxy::Stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  return error_;
}

absl::StatusOr<std::unique_ptr<PortEndpoint>> PortEndpoint::Start(std::vector<uint64_t*> semaphores) {
  std::unique_ptr<PortEndpoint> p(new PortEndpoint());
  if (absl::Status s =
          Cuda(cudaHostAlloc(reinterpret_cast<void**>(&p->fifo_), sizeof(PortFifo), cudaHostAllocMapped), "FIFO");
      !s.ok()) {
    return s;
  }
  std::memset(static_cast<void*>(p->fifo_), 0, sizeof(PortFifo));
  if (absl::Status s = Cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&p->fifo_device_), p->fifo_, 0), "FIFO");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Cuda(cudaMalloc(reinterpret_cast<void**>(&p->tickets_), sizeof(unsigned long long)), "tickets");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Cuda(cudaMemset(p->tickets_, 0, sizeof(unsigned long long)), "tickets"); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<PortProxy>> proxy = PortProxy::Start(p->fifo_, std::move(semaphores));
  if (!proxy.ok()) return proxy.status();
  p->proxy_ = *std::move(proxy);
  return p;
}

PortEndpoint::~PortEndpoint() {
  proxy_.reset();  // before its FIFO goes
  if (fifo_ != nullptr) cudaFreeHost(fifo_);
  if (tickets_ != nullptr) cudaFree(tickets_);
}

PortProxy::~PortProxy() {
  Stop().IgnoreError();
  for (cudaEvent_t e : events_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

}  // namespace vdev::channels::internal
