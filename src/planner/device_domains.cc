// Device domains: interned devices, the union-find over domains, unification and defaulting.
#include "src/planner/device_domains.h"

#include <cassert>

namespace vdev::planner_internal {

DeviceTable::DeviceTable() { Intern(VirtualDevice()); }

DeviceIndex DeviceTable::Intern(const VirtualDevice& device) {
  auto [it, inserted] = index_.try_emplace(device, static_cast<DeviceIndex>(devices_.size()));
  if (inserted) devices_.push_back(device);
  return it->second;
}

std::optional<DeviceIndex> DeviceTable::Join(DeviceIndex a, DeviceIndex b) {
  if (a == b || b == kUnconstrained) return a;
  if (a == kUnconstrained) return b;
  if (a > b) std::swap(a, b);  // Join is commutative: one cache entry per pair.
  auto [it, inserted] = join_cache_.try_emplace(Key(a, b), kNoJoin);
  if (inserted) {
    std::optional<VirtualDevice> joined = vdev::Join(devices_[a], devices_[b]);
    if (joined) {
      DeviceIndex index = Intern(*joined);
      // Intern touches index_ and devices_ only, so `it` stays valid.
      it->second = index;
    }
  }
  if (it->second == kNoJoin) return std::nullopt;
  return it->second;
}

DeviceIndex DeviceTable::Default(DeviceIndex a, DeviceIndex b) {
  if (a == b || b == kUnconstrained) return a;
  if (a == kUnconstrained) return b;
  auto [it, inserted] = default_cache_.try_emplace(Key(a, b), 0);
  if (inserted) it->second = Intern(vdev::Default(devices_[a], devices_[b]));
  return it->second;
}

DomainId DeviceDomains::MakeFirstOrder(DeviceIndex device, uint32_t origin) {
  assert((device & kHigherOrderBit) == 0);
  DomainId id = static_cast<DomainId>(parent_.size());
  parent_.push_back(id);
  rank_.push_back(0);
  payload_.push_back(device);
  origin_.push_back(origin);
  defaulted_.push_back(false);
  return id;
}

DomainId DeviceDomains::MakeHigherOrder(absl::Span<const DomainId> params, DomainId result) {
  uint32_t offset = static_cast<uint32_t>(signatures_.size());
  signatures_.push_back(static_cast<uint32_t>(params.size()));
  signatures_.insert(signatures_.end(), params.begin(), params.end());
  signatures_.push_back(result);
  DomainId id = static_cast<DomainId>(parent_.size());
  parent_.push_back(id);
  rank_.push_back(0);
  payload_.push_back(kHigherOrderBit | offset);
  origin_.push_back(kNoOrigin);
  defaulted_.push_back(false);
  return id;
}

DomainId DeviceDomains::Find(DomainId d) {
  DomainId root = d;
  while (parent_[root] != root) root = parent_[root];
  while (parent_[d] != root) {
    DomainId next = parent_[d];
    parent_[d] = root;
    d = next;
  }
  return root;
}

size_t DeviceDomains::Arity(DomainId d) { return Signature(Find(d))[0]; }

DomainId DeviceDomains::Param(DomainId d, size_t i) { return Signature(Find(d))[1 + i]; }

DomainId DeviceDomains::Result(DomainId d) {
  const uint32_t* sig = Signature(Find(d));
  return sig[1 + sig[0]];
}

DomainId DeviceDomains::ResultLeaf(DomainId d) {
  d = Find(d);
  if ((payload_[d] & kHigherOrderBit) == 0) return d;
  // Walk down to the first-order leaf or to a root whose leaf is known, then remember it for every
  // root passed on the way.
  chain_.clear();
  DomainId leaf = d;
  while (payload_[leaf] & kHigherOrderBit) {
    auto it = chain_memo_.find(leaf);
    if (it != chain_memo_.end() && it->second.leaf_epoch == links_) {
      leaf = it->second.leaf;
      break;
    }
    chain_.push_back(leaf);
    leaf = Find(Result(leaf));
  }
  for (DomainId root : chain_) {
    ChainMemo& memo = chain_memo_[root];
    memo.leaf = leaf;
    memo.leaf_epoch = links_;
  }
  return leaf;
}

DeviceIndex DeviceDomains::Device(DomainId d) { return payload_[ResultLeaf(d)]; }

DomainId DeviceDomains::Link(DomainId a, DomainId b, uint32_t payload) {
  // Keep the origin of the side that had a device (a's when both or neither had one).
  bool a_blank = payload_[a] == DeviceTable::kUnconstrained || origin_[a] == kNoOrigin;
  bool b_blank = payload_[b] == DeviceTable::kUnconstrained || origin_[b] == kNoOrigin;
  uint32_t origin = a_blank && !b_blank ? origin_[b] : origin_[a] != kNoOrigin ? origin_[a] : origin_[b];
  if (rank_[a] < rank_[b]) std::swap(a, b);
  if (++links_ == UINT32_MAX) links_ = 0;
  origin_[a] = origin;
  parent_[b] = a;
  if (rank_[a] == rank_[b]) ++rank_[a];
  payload_[a] = payload;
  return a;
}

// Scratch links and payloads over the real classes, so CanUnify can try a unification and drop it.
class DeviceDomains::Overlay {
 public:
  explicit Overlay(DeviceDomains* domains) : domains_(domains) {}
  DomainId Root(DomainId d) {
    d = domains_->Find(d);
    for (auto it = parent_.find(d); it != parent_.end(); it = parent_.find(d)) d = it->second;
    return d;
  }
  uint32_t Payload(DomainId root) {
    auto it = payload_.find(root);
    return it == payload_.end() ? domains_->payload_[root] : it->second;
  }
  void Link(DomainId a, DomainId b, uint32_t payload) {
    parent_[b] = a;
    payload_[a] = payload;
  }

 private:
  DeviceDomains* domains_;
  absl::flat_hash_map<DomainId, DomainId> parent_;
  absl::flat_hash_map<DomainId, uint32_t> payload_;
};

template <typename Store>
std::optional<UnifyConflict> DeviceDomains::UnifyIn(Store& store, DomainId a, DomainId b) {
  std::vector<std::pair<DomainId, DomainId>>& work = work_;
  size_t base = work.size();
  work.emplace_back(a, b);
  std::optional<UnifyConflict> conflict;
  while (work.size() > base) {
    auto [x, y] = work.back();
    work.pop_back();
    DomainId rx = store.Root(x);
    DomainId ry = store.Root(y);
    if (rx == ry) continue;
    uint32_t px = store.Payload(rx);
    uint32_t py = store.Payload(ry);
    bool hx = (px & kHigherOrderBit) != 0;
    bool hy = (py & kHigherOrderBit) != 0;
    if (!hx && !hy) {
      std::optional<DeviceIndex> joined = devices_->Join(px, py);
      if (!joined) {
        conflict = UnifyConflict{rx, ry, px, py, false};
        break;
      }
      store.Link(rx, ry, *joined);
    } else if (hx && hy) {
      const uint32_t* sx = &signatures_[px & ~kHigherOrderBit];
      const uint32_t* sy = &signatures_[py & ~kHigherOrderBit];
      if (sx[0] != sy[0]) {
        conflict = UnifyConflict{rx, ry, 0, 0, true};
        break;
      }
      store.Link(rx, ry, px);
      for (uint32_t i = 0; i <= sx[0]; ++i) work.emplace_back(sx[1 + i], sy[1 + i]);
    } else {
      // Collapse: the function's parameters and result all take the first-order device.
      DomainId first = hx ? ry : rx;
      uint32_t sig = (hx ? px : py) & ~kHigherOrderBit;
      uint32_t device = hx ? py : px;
      store.Link(rx, ry, device);
      const uint32_t* s = &signatures_[sig];
      for (uint32_t i = 0; i <= s[0]; ++i) work.emplace_back(first, s[1 + i]);
    }
  }
  work.resize(base);
  return conflict;
}

std::optional<UnifyConflict> DeviceDomains::Unify(DomainId a, DomainId b) {
  struct Store {
    DeviceDomains* d;
    DomainId Root(DomainId x) { return d->Find(x); }
    uint32_t Payload(DomainId root) { return d->payload_[root]; }
    void Link(DomainId x, DomainId y, uint32_t payload) { d->Link(x, y, payload); }
  } store{this};
  return UnifyIn(store, a, b);
}

bool DeviceDomains::CanUnify(DomainId a, DomainId b) {
  if (Find(a) == Find(b)) return true;
  Overlay overlay(this);
  return !UnifyIn(overlay, a, b).has_value();
}

bool DeviceDomains::Constrain(DomainId d, DeviceIndex device, uint32_t origin) {
  DomainId root = ResultLeaf(d);
  std::optional<DeviceIndex> joined = devices_->Join(payload_[root], device);
  if (!joined) return false;
  if (origin_[root] == kNoOrigin || payload_[root] == DeviceTable::kUnconstrained) origin_[root] = origin;
  payload_[root] = *joined;
  return true;
}

void DeviceDomains::SetDefault(DomainId d, DeviceIndex device) {
  // A first-order domain (nearly every call) needs no work list: no allocation per binding.
  if (DomainId root = Find(d); (payload_[root] & kHigherOrderBit) == 0) {
    if (!defaulted_[root]) payload_[root] = devices_->Default(payload_[root], device);
    defaulted_[root] = true;
    return;
  }
  std::vector<std::pair<DomainId, DeviceIndex>> work{{d, device}};
  while (!work.empty()) {
    auto [domain, fallback] = work.back();
    work.pop_back();
    DomainId leaf = ResultLeaf(domain);
    if (!defaulted_[leaf]) payload_[leaf] = devices_->Default(payload_[leaf], fallback);
    defaulted_[leaf] = true;
    DeviceIndex result_device = payload_[leaf];
    // Parameters along the chain of results default to the result's device. A root whose
    // parameters were pushed since the last link ends the walk: what lies below it shares this
    // leaf, so it was pushed with this device, and is defaulted (once is all a domain takes).
    for (DomainId r = Find(domain); payload_[r] & kHigherOrderBit; r = Find(Result(r))) {
      uint32_t& defaulted_epoch = chain_memo_[r].defaulted_epoch;
      if (defaulted_epoch == links_) break;
      defaulted_epoch = links_;
      const uint32_t* sig = Signature(r);
      for (uint32_t i = 0; i < sig[0]; ++i) work.emplace_back(sig[1 + i], result_device);
    }
  }
}

}  // namespace vdev::planner_internal
