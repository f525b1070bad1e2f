// Best-fit storage reuse per (device, scope) pool over live ranges; see vdev/memory/storage_plan.h.
#include "vdev/memory/storage_plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace vdev {
namespace {

int64_t AlignUp(int64_t value, int64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

absl::Status CheckInput(absl::Span<const TensorLifetime> tensors, const StoragePlanOptions& options) {
  if (options.alignment <= 0 || (options.alignment & (options.alignment - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("alignment must be a positive power of two, got ", options.alignment));
  }
  // Every sum and aligned offset below is at most the tensors' bytes plus one alignment per tensor:
  // bounding that once keeps all of them inside int64_t.
  int64_t bound = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    if (t.bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", i, " has a negative size ", t.bytes));
    }
    if (__builtin_add_overflow(bound, t.bytes, &bound) || __builtin_add_overflow(bound, options.alignment, &bound)) {
      return absl::InvalidArgumentError(absl::StrCat("the tensors of ", t.pool.ToString(),
                                                     " and the others, each aligned to ", options.alignment,
                                                     " bytes, need more than 2^63-1 bytes"));
    }
    if (t.last_use < t.first_def) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", i, " is last used at ", t.last_use, " before its definition at ", t.first_def));
    }
    if (t.pool.scope.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", i, " has no memory scope"));
    }
  }
  return absl::OkStatus();
}

// Free storages of one pool, ordered by (size, id) so that lower_bound finds the best fit.
using FreeSet = std::set<std::pair<int64_t, int>>;

// Takes the best-fitting free storage for `bytes` out of `free`; -1 when `free` is empty.
int TakeBestFit(FreeSet& free, int64_t bytes) {
  if (free.empty()) return -1;
  auto it = free.lower_bound({bytes, std::numeric_limits<int>::min()});
  if (it == free.end()) {
    // Nothing is large enough: grow the largest (the lowest id among equals).
    it = free.lower_bound({std::prev(free.end())->first, std::numeric_limits<int>::min()});
  }
  int id = it->second;
  free.erase(it);
  return id;
}

}  // namespace

std::string PoolKey::ToString() const { return absl::StrCat(DeviceTypeName(device.type), ":", device.id, "/", scope); }

bool operator<(const PoolKey& a, const PoolKey& b) {
  return std::tie(a.device.type, a.device.id, a.scope) < std::tie(b.device.type, b.device.id, b.scope);
}

int64_t StoragePlan::PoolBytes(const PoolKey& key) const {
  for (const PoolSize& p : pools) {
    if (p.pool == key) return p.bytes;
  }
  return 0;
}

absl::StatusOr<StoragePlan> PlanStorage(absl::Span<const TensorLifetime> tensors, const StoragePlanOptions& options) {
  if (absl::Status s = CheckInput(tensors, options); !s.ok()) return s;
  StoragePlan plan;
  plan.storage_of.assign(tensors.size(), -1);

  std::vector<int> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return tensors[a].first_def < tensors[b].first_def; });

  absl::flat_hash_map<PoolKey, FreeSet> free_by_pool;
  // Storages in use by a reusable tensor, keyed by that tensor's last use.
  using Busy = std::pair<int, int>;  // (last_use, storage id)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<Busy>> busy;

  for (int t : order) {
    const TensorLifetime& tensor = tensors[t];
    plan.tensor_bytes += tensor.bytes;
    while (!busy.empty() && busy.top().first < tensor.first_def) {
      int id = busy.top().second;
      busy.pop();
      const Storage& s = plan.storages[id];
      free_by_pool[s.pool].insert({s.bytes, id});
    }
    int id = tensor.reusable ? TakeBestFit(free_by_pool[tensor.pool], tensor.bytes) : -1;
    if (id < 0) {
      id = static_cast<int>(plan.storages.size());
      plan.storages.push_back(Storage{tensor.pool, 0, 0, {}});
    }
    Storage& storage = plan.storages[id];
    storage.bytes = std::max(storage.bytes, tensor.bytes);
    storage.tensors.push_back(t);
    plan.storage_of[t] = id;
    if (tensor.reusable) busy.push({tensor.last_use, id});
  }

  // Lay each pool's storages end to end in id order.
  absl::flat_hash_map<PoolKey, size_t> pool_index;
  for (Storage& s : plan.storages) {
    auto [it, inserted] = pool_index.try_emplace(s.pool, plan.pools.size());
    if (inserted) plan.pools.push_back(PoolSize{s.pool, 0, 0});
    PoolSize& pool = plan.pools[it->second];
    s.pool_offset = AlignUp(pool.bytes, options.alignment);
    pool.bytes = s.pool_offset + s.bytes;
    ++pool.storages;
  }
  std::sort(plan.pools.begin(), plan.pools.end(), [](const PoolSize& a, const PoolSize& b) { return a.pool < b.pool; });
  for (const PoolSize& p : plan.pools) plan.pool_bytes += p.bytes;
  return plan;
}

absl::Status VerifyStoragePlan(absl::Span<const TensorLifetime> tensors, const StoragePlan& plan,
                               const StoragePlanOptions& options) {
  auto fail = [](auto&&... parts) { return absl::InternalError(absl::StrCat(parts...)); };
  if (plan.storage_of.size() != tensors.size())
    return fail("plan covers ", plan.storage_of.size(), " tensors of ", tensors.size());
  std::vector<std::vector<int>> members(plan.storages.size());
  int64_t tensor_bytes = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    int id = plan.storage_of[t];
    if (id < 0 || id >= static_cast<int>(plan.storages.size())) return fail("tensor ", t, " has no storage");
    const Storage& s = plan.storages[id];
    if (!(s.pool == tensors[t].pool))
      return fail("tensor ", t, " in pool ", tensors[t].pool.ToString(), " placed in storage ", id, " of ",
                  s.pool.ToString());
    if (s.bytes < tensors[t].bytes) return fail("tensor ", t, " larger than its storage ", id);
    members[id].push_back(static_cast<int>(t));
    tensor_bytes += tensors[t].bytes;
  }
  for (size_t id = 0; id < members.size(); ++id) {
    std::vector<int>& m = members[id];
    if (m.size() > 1) {
      for (int t : m) {
        if (!tensors[t].reusable) return fail("non-reusable tensor ", t, " shares storage ", id);
      }
      std::sort(m.begin(), m.end(), [&](int a, int b) { return tensors[a].first_def < tensors[b].first_def; });
      for (size_t i = 1; i < m.size(); ++i) {
        if (tensors[m[i]].first_def <= tensors[m[i - 1]].last_use) {
          return fail("tensors ", m[i - 1], " and ", m[i], " share storage ", id, " while both live");
        }
      }
    }
  }
  absl::flat_hash_map<PoolKey, int64_t> pool_end;
  for (const Storage& s : plan.storages) {
    int64_t& end = pool_end[s.pool];
    if (s.pool_offset % options.alignment != 0 || s.pool_offset < end)
      return fail("storage at ", s.pool_offset, " in ", s.pool.ToString(), " misplaced");
    end = s.pool_offset + s.bytes;
  }
  int64_t pool_bytes = 0;
  for (const PoolSize& p : plan.pools) {
    if (pool_end[p.pool] != p.bytes)
      return fail("pool ", p.pool.ToString(), " reports ", p.bytes, " bytes, ends at ", pool_end[p.pool]);
    pool_bytes += p.bytes;
  }
  if (pool_bytes != plan.pool_bytes || tensor_bytes != plan.tensor_bytes) return fail("totals do not add up");
  return absl::OkStatus();
}

}  // namespace vdev
