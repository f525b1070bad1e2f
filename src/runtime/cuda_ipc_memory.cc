// The CUDA backend of IPCMemory: cudaMalloc'd regions shared through cudaIpcGetMemHandle.
#include <cuda_runtime_api.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "cuda_common/cuda_common.h"
#include "internal/pooled_allocator.h"
#include "vdev/runtime/cuda_allreduce.h"

namespace vdev {
namespace {

using internal::CudaStatus;

class CudaIPCAllocator final : public internal::PooledIPCAllocator {
 public:
  CudaIPCAllocator(PeerGroup* session, int device) : PooledIPCAllocator(session), device_(device) {}
  ~CudaIPCAllocator() override {
    // No region is freed while a peer still maps it (undefined behaviour in CUDA IPC): close every
    // peer mapping, meet, then free.
    cudaSetDevice(device_);
    for (const std::unique_ptr<internal::PoolEntry>& entry : entries()) ClosePeerMappings(entry.get());
    session()->Barrier("cuda-ipc-release").IgnoreError();  // a worker that is gone maps nothing
    ReleaseAll();
  }
  MemoryBackend backend() const override { return MemoryBackend::kCuda; }

 protected:
  absl::StatusOr<std::string> CreateLocal(const internal::RegionLayout& layout, uint64_t,
                                          internal::PoolEntry* entry) override {
    absl::Status s = CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
    void* base = nullptr;
    if (s.ok()) s = CudaStatus(cudaMalloc(&base, layout.total_bytes), "cudaMalloc");
    if (!s.ok()) return s;
    entry->mappings[session()->rank()] = base;
    // Data, flags and epochs start at zero, and are zero before any peer can see them. (cudaMalloc
    // may hand back memory this process freed, e.g. an earlier communicator's workspace, whose
    // flagged lines a new workspace's readers would otherwise take for data.)
    s = CudaStatus(cudaMemset(base, 0, layout.total_bytes), "cudaMemset");
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
    ClosePeerMappings(entry);
    void*& own = entry->mappings[session()->rank()];
    if (own != nullptr) cudaFree(own);
    own = nullptr;
  }

 private:
  void ClosePeerMappings(internal::PoolEntry* entry) {
    for (size_t i = 0; i < entry->mappings.size(); ++i) {
      if (entry->mappings[i] == nullptr || static_cast<int>(i) == session()->rank()) continue;
      cudaIpcCloseMemHandle(entry->mappings[i]);
      entry->mappings[i] = nullptr;
    }
  }

  int device_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IPCAllocator>> CreateCudaIPCAllocator(PeerGroup* session, int device) {
  return std::unique_ptr<IPCAllocator>(new CudaIPCAllocator(session, device));
}

}  // namespace vdev
