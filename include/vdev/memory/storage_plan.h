// Static storage planning: which tensors share a storage, and how large each memory pool is.
//
// The planner sees an abstract list of tensors, each with a byte size, the pool it must live in
// (a concrete device and a memory scope), and its live range in program order. It assigns every
// tensor to a storage so that tensors in one storage have disjoint live ranges and the same pool,
// then lays the storages of each pool end to end (aligned) so the runtime can allocate each pool
// once. Function parameters and results are marked not reusable: each gets a storage of its own.
//
// Reuse rule (best fit, as TVM's StaticPlanBlockMemory): tensors are visited in order of
// definition; a tensor takes the free storage of its pool whose size is the smallest one at least
// as large as the tensor, else the largest free storage (which grows to fit), else a new storage.
// Ties go to the lower storage id. The plan is a pure function of its input: deterministic.
//
// Example:
//   std::vector<TensorLifetime> t = {
//       {.bytes = 400, .pool = {{DeviceType::kCUDA, 0}, "global"}, .first_def = 0, .last_use = 1},
//       {.bytes = 400, .pool = {{DeviceType::kCUDA, 0}, "global"}, .first_def = 2, .last_use = 3}};
//   PlanStorage(t)->storages.size() == 1   // disjoint live ranges share one storage
#ifndef VDEV_STORAGE_PLAN_H_
#define VDEV_STORAGE_PLAN_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev {

// Where a storage is allocated: a concrete device and a memory scope. Storage is never shared
// between two pools: an `ipc_memory` tensor never reuses `global` memory and vice versa.
struct PoolKey {
  Device device;
  std::string scope;

  // The virtual-device literal of the pool, e.g. "cuda:0/ipc_memory".
  std::string ToString() const;

  friend bool operator==(const PoolKey&, const PoolKey&) = default;
  // Orders pools by device type, device id, then scope: the order reports list them in.
  friend bool operator<(const PoolKey& a, const PoolKey& b);
  template <typename H>
  friend H AbslHashValue(H h, const PoolKey& k) {
    return H::combine(std::move(h), k.device.type, k.device.id, k.scope);
  }
  template <typename Sink>
  friend void AbslStringify(Sink& sink, const PoolKey& k) {
    sink.Append(k.ToString());
  }
  friend std::ostream& operator<<(std::ostream& os, const PoolKey& k) { return os << k.ToString(); }
};

// One tensor to place. Live range [first_def, last_use], both inclusive, in program order
// (binding indices): two tensors may share storage only if their ranges do not intersect.
struct TensorLifetime {
  int64_t bytes = 0;
  PoolKey pool;
  int first_def = 0;
  int last_use = 0;
  // False for function parameters and results: they get a storage of their own.
  bool reusable = true;
};

struct StoragePlanOptions {
  // Start offsets of storages within a pool are multiples of this (a power of two).
  int64_t alignment = 256;
};

// A storage: one `memory.alloc_storage` of `bytes` bytes at `pool_offset` in its pool.
struct Storage {
  PoolKey pool;
  int64_t bytes = 0;         // exactly the largest tensor placed in it
  int64_t pool_offset = 0;   // aligned start within the pool
  std::vector<int> tensors;  // indices into the input, in order of definition
};

struct PoolSize {
  PoolKey pool;
  int64_t bytes = 0;  // end of the pool's last storage; 0 for a pool with no storage
  int storages = 0;
};

struct StoragePlan {
  std::vector<int> storage_of;    // per input tensor, an index into `storages`
  std::vector<Storage> storages;  // ids in order of creation
  std::vector<PoolSize> pools;    // sorted by PoolKey
  int64_t tensor_bytes = 0;       // sum of all tensor sizes (what planning without reuse costs)
  int64_t pool_bytes = 0;         // sum of all pool sizes

  // The pool size of `key`; 0 when no tensor lives there.
  int64_t PoolBytes(const PoolKey& key) const;
};

// Plans storages for `tensors`. InvalidArgument for a negative size, a live range that ends before
// it starts, an empty scope, or an alignment that is not a positive power of two. O(n log n).
absl::StatusOr<StoragePlan> PlanStorage(absl::Span<const TensorLifetime> tensors,
                                        const StoragePlanOptions& options = {});

// Re-checks a plan against its input: every tensor has a storage of its own pool at least as large
// as itself, tensors sharing a storage have disjoint live ranges, non-reusable tensors share with
// nothing, storages of one pool do not overlap and are aligned, and the totals add up.
// Internal on a violation (a planner bug).
absl::Status VerifyStoragePlan(absl::Span<const TensorLifetime> tensors, const StoragePlan& plan,
                               const StoragePlanOptions& options = {});

}  // namespace vdev

#endif  // VDEV_STORAGE_PLAN_H_
