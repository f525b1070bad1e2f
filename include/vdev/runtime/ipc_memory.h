// IPCMemory: memory allocated by all workers of a session together, readable and writable by each.
//
// Every worker owns one region; `remote_data[i]` is worker i's region as mapped in this process
// (the worker's own region at i == worker_id). Beside the data, each region carries two arrays of
// barrier flags (`barrier_in`, `barrier_out`: kMaxBarrierBlocks × kMaxWorkers 64-bit words; the word
// [b * kMaxWorkers + j] is written only by worker j, for block b) and this worker's epoch counters
// (`barrier_flag`: kMaxBarrierBlocks words). Flags only ever grow: a barrier waits for "flag >= epoch",
// and epochs are never reset, so no barrier needs a cleaning pass and a late reader never mistakes an
// old round for a new one. All flags start at zero: they are zeroed before handles are exchanged,
// and so is a new region's data (memory handed out again from the pool keeps what it held).
//
// Allocation is collective: every worker calls `Allocate` with the same size in the same order. The
// sizes and sequence numbers are exchanged and compared, so a worker that asks for something else
// gets an error naming both requests (never a hang). Freed memory goes back to a pool and is handed
// out again, to every worker alike, by the next `Allocate` of the same size.
//
// Example:
//   VDEV_ASSIGN_OR_RETURN(auto allocator, vdev::CreateHostIPCAllocator(session.get()));
//   VDEV_ASSIGN_OR_RETURN(vdev::IPCMemory* mem, allocator->Allocate(1 << 20));
//   // mem->remote_data[(mem->worker_id + 1) % mem->num_workers] is the next worker's megabyte.
#ifndef VDEV_IPC_MEMORY_H_
#define VDEV_IPC_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/runtime/peer_group.h"

namespace vdev {

// Blocks (CUDA thread blocks; one on the host) that can take part in one barrier round.
inline constexpr int kMaxBarrierBlocks = 256;
inline constexpr size_t kBarrierWords = size_t{kMaxBarrierBlocks} * kMaxWorkers;

enum class MemoryBackend { kHost, kCuda };

struct IPCMemory {
  int num_workers = 0;
  int worker_id = 0;
  size_t size = 0;        // bytes of each worker's data region
  uint64_t sequence = 0;  // the allocation's number, equal on every worker
  std::vector<void*> remote_data;
  std::vector<uint64_t*> barrier_in;
  std::vector<uint64_t*> barrier_out;
  uint64_t* barrier_flag = nullptr;  // this worker's epochs, one per block; never reset
};

class IPCAllocator {
 public:
  virtual ~IPCAllocator() = default;
  virtual MemoryBackend backend() const = 0;
  // Collective. The returned memory stays owned by the allocator (valid until Free or destruction).
  virtual absl::StatusOr<IPCMemory*> Allocate(size_t bytes) = 0;
  // Returns the memory to the pool (local; the pool evolves alike on every worker).
  virtual void Free(IPCMemory* memory) = 0;
  virtual PeerGroup* session() const = 0;
};

// POSIX shared memory (shm_open, mode 0600; each segment is unlinked once every worker mapped it).
absl::StatusOr<std::unique_ptr<IPCAllocator>> CreateHostIPCAllocator(PeerGroup* session);

}  // namespace vdev

#endif  // VDEV_IPC_MEMORY_H_
