// The CUDA backend of IPCMemory: cudaMalloc'd regions shared through cudaIpcGetMemHandle.
#include <cuda_runtime_api.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "internal/pooled_allocator.h"
#include "vdev/cuda_allreduce.h"

namespace vdev {
namespace {

absl::Status CudaStatus(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

class CudaIPCAllocator final : public internal::PooledIPCAllocator {
 public:
  CudaIPCAllocator(Session* session, int device) : PooledIPCAllocator(session), device_(device) {}
  ~CudaIPCAllocator() override { ReleaseAll(); }
  MemoryBackend backend() const override { return MemoryBackend::kCuda; }

 protected:
  absl::StatusOr<std::string> CreateLocal(const internal::RegionLayout& layout, uint64_t,
                                          internal::PoolEntry* entry) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    void* base = nullptr;
    if (s.ok()) s = CudaStatus(cudaMalloc(&base, layout.total_bytes), "cudaMalloc");
    if (!s.ok()) return s;
    entry->mappings[session()->rank()] = base;
    // Flags and epochs start at zero, and are zero before any peer can see them.
    s = CudaStatus(cudaMemset(static_cast<char*>(base) + layout.barrier_in_offset, 0,
                              layout.total_bytes - layout.barrier_in_offset),
                   "cudaMemset");
    if (s.ok()) s = CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cudaIpcMemHandle_t handle;
    if (s.ok()) s = CudaStatus(cudaIpcGetMemHandle(&handle, base), "cudaIpcGetMemHandle");
    if (!s.ok()) return s;
    return std::string(reinterpret_cast<const char*>(&handle), sizeof(handle));
  }

  absl::Status OpenPeers(const internal::RegionLayout&, const std::vector<std::string>& handles,
                         internal::PoolEntry* entry) override {
    for (size_t i = 0; i < handles.size(); ++i) {
      if (static_cast<int>(i) == session()->rank()) continue;
      if (handles[i].size() != sizeof(cudaIpcMemHandle_t)) return absl::DataLossError("bad IPC handle");
      cudaIpcMemHandle_t handle;
      std::memcpy(&handle, handles[i].data(), sizeof(handle));
      void* base = nullptr;
      absl::Status s = CudaStatus(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess),
                                  absl::StrCat("cudaIpcOpenMemHandle of worker ", i));
      if (!s.ok()) return s;
      entry->mappings[i] = base;
    }
    return absl::OkStatus();
  }

  void Release(internal::PoolEntry* entry) override {
    cudaSetDevice(device_);
    for (size_t i = 0; i < entry->mappings.size(); ++i) {
      if (entry->mappings[i] == nullptr) continue;
      if (static_cast<int>(i) == session()->rank()) {
        cudaFree(entry->mappings[i]);
      } else {
        cudaIpcCloseMemHandle(entry->mappings[i]);
      }
      entry->mappings[i] = nullptr;
    }
  }

 private:
  int device_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IPCAllocator>> CreateCudaIPCAllocator(Session* session, int device) {
  return std::unique_ptr<IPCAllocator>(new CudaIPCAllocator(session, device));
}

}  // namespace vdev
