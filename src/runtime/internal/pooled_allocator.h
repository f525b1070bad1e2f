// The collective, pooled allocation protocol shared by the host and CUDA IPC allocators.
//
// A backend supplies three steps — make this worker's region (flags zeroed) and a handle for it,
// map the peers' regions from their handles, release a region — and this class runs the protocol:
// request numbers, the size/sequence check across workers, reporting a peer's failure to everyone,
// and the pool.
#ifndef VDEV_SRC_RUNTIME_INTERNAL_POOLED_ALLOCATOR_H_
#define VDEV_SRC_RUNTIME_INTERNAL_POOLED_ALLOCATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vdev/runtime/ipc_memory.h"

namespace vdev::internal {

// Every part of a region (its data, barrier words and epochs) starts at a multiple of this.
constexpr size_t kRegionAlignment = 256;

// Where the parts of one worker's region lie.
struct RegionLayout {
  size_t data_bytes = 0;
  size_t barrier_in_offset = 0;
  size_t barrier_out_offset = 0;
  size_t epochs_offset = 0;
  size_t total_bytes = 0;
};
// The layout of a region with `bytes` of data, or nullopt when its size does not fit in size_t.
std::optional<RegionLayout> LayoutFor(size_t bytes);

// One allocation: the IPCMemory handed out, and what the backend needs to release it.
struct PoolEntry {
  IPCMemory memory;
  bool in_use = false;
  std::vector<void*> mappings;  // [i]: base of worker i's region in this process (own at worker_id)
  std::string local_name;       // backend-specific name of this worker's region
  size_t region_bytes = 0;      // RegionLayout::total_bytes
};

class PooledIPCAllocator : public IPCAllocator {
 public:
  explicit PooledIPCAllocator(PeerGroup* session) : session_(session) {}
  absl::StatusOr<IPCMemory*> Allocate(size_t bytes) final;
  void Free(IPCMemory* memory) final;
  PeerGroup* session() const final { return session_; }

 protected:
  // Makes this worker's region of `layout.total_bytes`, all zero (data, barrier words, epochs),
  // stores its base in entry.mappings[worker_id], and returns the handle peers open it with.
  virtual absl::StatusOr<std::string> CreateLocal(const RegionLayout& layout, uint64_t sequence, PoolEntry* entry) = 0;
  virtual absl::Status OpenPeers(const RegionLayout& layout, const std::vector<std::string>& handles,
                                 PoolEntry* entry) = 0;
  // Called once every worker has mapped every region.
  virtual void AllMapped(PoolEntry* entry) { (void)entry; }
  // Undoes CreateLocal/OpenPeers (also after a failure part-way; null mappings are skipped).
  virtual void Release(PoolEntry* entry) = 0;
  // Derived destructors call this: Release needs the derived object.
  void ReleaseAll();
  const std::vector<std::unique_ptr<PoolEntry>>& entries() const { return entries_; }

 private:
  PeerGroup* session_;
  uint64_t requests_ = 0;
  uint64_t next_sequence_ = 0;
  std::vector<std::unique_ptr<PoolEntry>> entries_;
};

}  // namespace vdev::internal

#endif  // VDEV_SRC_RUNTIME_INTERNAL_POOLED_ALLOCATOR_H_
