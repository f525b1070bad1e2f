// ProbeRemoteWrite (remote_write_probe.h).
#include <cuda_runtime.h>

#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "channels/remote_write_probe.h"

namespace vdev::channels::testing {
namespace {

__device__ unsigned long long Now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// out[0]: the %globaltimer reading when the word read 1 (0: never); out[1]: the last value read.
__global__ void Poll(const unsigned long long* word, unsigned long long bound_ns, unsigned long long* out) {
  const unsigned long long start = Now();
  unsigned long long v = 0;
  while (true) {
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
    if (v == 1) {
      out[0] = Now();
      break;
    }
    if (Now() - start > bound_ns) break;
  }
  out[1] = v;
}

__global__ void Store(unsigned long long* word, unsigned long long* at) {
  *at = Now();
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(word), "l"(1ull) : "memory");
}

__global__ void Stamp(unsigned long long* at) { *at = Now(); }

absl::Status Check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? absl::OkStatus() : absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

// What one probe allocates, released however it ends.
struct Probe {
  unsigned long long *out = nullptr, *out_device = nullptr;  // the poller's two words, then the write's time
  unsigned long long *device_word = nullptr, *one = nullptr;
  cudaStream_t poller = nullptr, writer = nullptr;
  ~Probe() {
    cudaStreamDestroy(poller);
    cudaStreamDestroy(writer);
    cudaFree(device_word);
    cudaFreeHost(one);
    cudaFreeHost(out);
  }
  absl::Status Allocate() {
    for (auto [e, what] : {std::pair{cudaHostAlloc(&out, 3 * sizeof(unsigned long long), cudaHostAllocMapped), "out"},
                           std::pair{cudaHostAlloc(&one, sizeof(unsigned long long), cudaHostAllocDefault), "one"},
                           std::pair{cudaMalloc(&device_word, sizeof(unsigned long long)), "cudaMalloc"},
                           std::pair{cudaStreamCreateWithFlags(&poller, cudaStreamNonBlocking), "stream"},
                           std::pair{cudaStreamCreateWithFlags(&writer, cudaStreamNonBlocking), "stream"}}) {
      if (absl::Status s = Check(e, what); !s.ok()) return s;
    }
    for (auto [e, what] : {std::pair{cudaHostGetDevicePointer(reinterpret_cast<void**>(&out_device), out, 0), "out"},
                           std::pair{cudaMemset(device_word, 0, sizeof(unsigned long long)), "cudaMemset"}}) {
      if (absl::Status s = Check(e, what); !s.ok()) return s;
    }
    // Every kernel's first launch, with nothing polling (see the header): then zero everything.
    Poll<<<1, 1>>>(device_word, 0, out_device);
    Store<<<1, 1>>>(device_word, out_device + 2);
    Stamp<<<1, 1>>>(out_device + 2);
    if (absl::Status s = Check(cudaDeviceSynchronize(), "first launches"); !s.ok()) return s;
    out[0] = out[1] = out[2] = 0;
    *one = 1;
    if (absl::Status s = Check(cudaMemset(device_word, 0, sizeof(unsigned long long)), "cudaMemset"); !s.ok()) return s;
    return Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the poller's stream does not follow the memset's
  }
  // Writes 1 into the polled word the writer's way; out[2] gets the time on the GPU's clock.
  absl::Status Write(RemoteWriter kind) {
    switch (kind) {
      case RemoteWriter::kKernelStore:
        Store<<<1, 1, 0, writer>>>(device_word, out_device + 2);
        return Check(cudaGetLastError(), "launching the writer");
      case RemoteWriter::kCopyEngine:
        Stamp<<<1, 1, 0, writer>>>(out_device + 2);
        return Check(cudaMemcpyAsync(device_word, one, sizeof(unsigned long long), cudaMemcpyHostToDevice, writer),
                     "cudaMemcpyAsync");
    }
    return absl::InvalidArgumentError("unknown writer");
  }
};

}  // namespace

absl::StatusOr<absl::Duration> ProbeRemoteWrite(RemoteWriter writer, absl::Duration delay, absl::Duration bound) {
  Probe p;
  if (absl::Status s = p.Allocate(); !s.ok()) return s;
  Poll<<<1, 1, 0, p.poller>>>(p.device_word, static_cast<unsigned long long>(absl::ToInt64Nanoseconds(bound)),
                              p.out_device);
  if (absl::Status s = Check(cudaGetLastError(), "launching the poller"); !s.ok()) return s;
  std::this_thread::sleep_for(std::chrono::nanoseconds(absl::ToInt64Nanoseconds(delay)));
  const absl::Status wrote = p.Write(writer);
  const absl::Status synced = Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (!wrote.ok()) return wrote;
  if (!synced.ok()) return synced;
  if (p.out[0] == 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("the poller read ", p.out[1], " for ", absl::FormatDuration(bound)));
  }
  return absl::Nanoseconds(static_cast<int64_t>(p.out[0]) - static_cast<int64_t>(p.out[2]));
}

}  // namespace vdev::channels::testing
