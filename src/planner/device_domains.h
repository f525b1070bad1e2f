// Device domains: the unknowns of device planning, unified with a union-find.
//
// A first-order domain stands for the device of one value (a virtual device, possibly partial). A
// higher-order domain stands for a function value's device signature: one domain per parameter and
// one for the result. Unifying two domains makes them one; first-order devices meet with the
// lattice's Join, higher-order ones unify parameter by parameter and result with result, and a
// first-order domain unified with a higher-order one collapses it: every parameter and the result
// take the first-order device (a function stored in a tuple or passed through an `if`).
//
// Devices are interned in a DeviceTable so that a domain costs 9 bytes (parent, rank, payload) and a
// join of two already-seen devices is a hash lookup. Nothing here recurses: unification and
// defaulting run on explicit work lists, so function types of any depth are safe.
//
// Chains of results (a curried function: fn -> fn -> … -> f32) cost their length once, not per
// query: ResultLeaf remembers the leaf of every higher-order root it walks, and SetDefault the roots
// whose parameters it has defaulted, both until the next link changes the forest. Without that, 10^4
// nested closures that return closures took 29 s (each query walked the whole chain below it).
//
// Example:
//   DeviceTable devices;
//   DeviceDomains domains(&devices);
//   DomainId a = domains.MakeFirstOrder(devices.Intern(cuda));      // cuda
//   DomainId b = domains.MakeFirstOrder(devices.Intern(id_3));      // *:3
//   domains.Unify(a, b);                                            // both now cuda:3
#ifndef VDEV_SRC_PLANNER_DEVICE_DOMAINS_H_
#define VDEV_SRC_PLANNER_DEVICE_DOMAINS_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::planner_internal {

using DeviceIndex = uint32_t;
using DomainId = uint32_t;

// Interns virtual devices as small indices and memoises Join and Default on them.
class DeviceTable {
 public:
  static constexpr DeviceIndex kUnconstrained = 0;

  DeviceTable();
  DeviceTable(const DeviceTable&) = delete;
  DeviceTable& operator=(const DeviceTable&) = delete;

  DeviceIndex Intern(const VirtualDevice& device);
  // Stable for the table's lifetime.
  const VirtualDevice& Get(DeviceIndex index) const { return devices_[index]; }
  // Join of the lattice; nullopt on a conflict.
  std::optional<DeviceIndex> Join(DeviceIndex a, DeviceIndex b);
  // Default of the lattice: a's fields where set, otherwise b's.
  DeviceIndex Default(DeviceIndex a, DeviceIndex b);
  bool IsFullyUnconstrained(DeviceIndex index) const { return index == kUnconstrained; }

 private:
  static constexpr uint32_t kNoJoin = UINT32_MAX;
  static uint64_t Key(DeviceIndex a, DeviceIndex b) { return (uint64_t{a} << 32) | b; }

  std::deque<VirtualDevice> devices_;
  absl::flat_hash_map<VirtualDevice, DeviceIndex> index_;
  absl::flat_hash_map<uint64_t, uint32_t> join_cache_;
  absl::flat_hash_map<uint64_t, uint32_t> default_cache_;
};

// Why two domains could not be unified: the first-order roots whose devices do not join (their
// devices are reported as they were before the failed step), or a signature arity mismatch.
struct UnifyConflict {
  DomainId lhs = 0;
  DomainId rhs = 0;
  DeviceIndex lhs_device = DeviceTable::kUnconstrained;
  DeviceIndex rhs_device = DeviceTable::kUnconstrained;
  bool arity_mismatch = false;
};

class DeviceDomains {
 public:
  explicit DeviceDomains(DeviceTable* devices) : devices_(devices) {}
  DeviceDomains(const DeviceDomains&) = delete;
  DeviceDomains& operator=(const DeviceDomains&) = delete;

  // `origin` is the caller's tag for what constrains the domain (e.g. an annotation); a class keeps
  // the origin of whichever side first gave it a device.
  static constexpr uint32_t kNoOrigin = UINT32_MAX;

  DomainId MakeFirstOrder(DeviceIndex device = DeviceTable::kUnconstrained, uint32_t origin = kNoOrigin);
  // A function signature over existing domains.
  DomainId MakeHigherOrder(absl::Span<const DomainId> params, DomainId result);
  void Reserve(size_t domains) {
    parent_.reserve(domains);
    rank_.reserve(domains);
    payload_.reserve(domains);
    origin_.reserve(domains);
    defaulted_.reserve(domains);
  }

  // The representative of d's class (with path compression).
  DomainId Find(DomainId d);
  bool IsHigherOrder(DomainId d) { return (payload_[Find(d)] & kHigherOrderBit) != 0; }
  // Of a higher-order domain's root signature.
  size_t Arity(DomainId d);
  DomainId Param(DomainId d, size_t i);
  DomainId Result(DomainId d);

  // A first-order domain's device; a higher-order domain reports its result's device (followed
  // through results of results).
  DeviceIndex Device(DomainId d);
  // The domain whose device Device(d) reports: d itself, or the innermost result.
  DomainId ResultLeaf(DomainId d);

  // Makes a and b one domain. On a conflict returns it; the first-order step that failed changed
  // nothing, but steps of a higher-order unification before it stay done.
  std::optional<UnifyConflict> Unify(DomainId a, DomainId b);
  // Whether Unify(a, b) would succeed; changes nothing.
  bool CanUnify(DomainId a, DomainId b);
  // Joins d's device (a higher-order domain's result leaf) with `device`; on a conflict changes
  // nothing.
  bool Constrain(DomainId d, DeviceIndex device, uint32_t origin = kNoOrigin);
  uint32_t Origin(DomainId d) { return origin_[ResultLeaf(d)]; }
  // The union-find forest (no compression): with Find, what a conflict explanation needs.
  DomainId ParentOf(DomainId d) const { return parent_[d]; }

  // Defaulting: a first-order domain takes Default(its device, device). A higher-order one defaults
  // its result with `device`, then each parameter with the result's device (TVM's
  // SetResultDefaultThenParams), through nested signatures. A domain is defaulted once: later calls
  // leave it as it is, even where fields are still unset (so the order of defaulting decides).
  void SetDefault(DomainId d, DeviceIndex device);

  size_t size() const { return parent_.size(); }

 private:
  static constexpr uint32_t kHigherOrderBit = 0x80000000u;

  class Overlay;
  // The one unification loop, run on the real classes (Unify) or on a scratch overlay (CanUnify).
  template <typename Store>
  std::optional<UnifyConflict> UnifyIn(Store& store, DomainId a, DomainId b);
  // Links two distinct roots (union by rank) and gives the surviving root `payload`.
  DomainId Link(DomainId a, DomainId b, uint32_t payload);
  const uint32_t* Signature(DomainId root) const { return &signatures_[payload_[root] & ~kHigherOrderBit]; }

  // A higher-order root's remembered result leaf, or that SetDefault has pushed its parameters
  // (and everything below them is defaulted): valid while `epoch` equals links_.
  struct ChainMemo {
    DomainId leaf = 0;
    uint32_t leaf_epoch = UINT32_MAX;
    uint32_t defaulted_epoch = UINT32_MAX;
  };

  DeviceTable* devices_;
  // Counts links (mod 2^32, never UINT32_MAX): a link may change any chain, so it voids the memos.
  uint32_t links_ = 0;
  // Only higher-order roots have entries: first-order programs pay nothing.
  absl::flat_hash_map<DomainId, ChainMemo> chain_memo_;
  std::vector<DomainId> chain_;  // ResultLeaf's scratch
  std::vector<DomainId> parent_;
  std::vector<uint8_t> rank_;
  // First-order: the device index. Higher-order: kHigherOrderBit | offset into signatures_.
  std::vector<uint32_t> payload_;
  std::vector<uint32_t> origin_;
  std::vector<bool> defaulted_;
  // Per signature: arity, the parameter domains, the result domain.
  std::vector<uint32_t> signatures_;
  std::vector<std::pair<DomainId, DomainId>> work_;
};

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_DEVICE_DOMAINS_H_
