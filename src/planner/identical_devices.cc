// KeepIdenticalDevices: the sub-machine the optimiser searches (internal/identical_devices.h).
#include "src/planner/internal/identical_devices.h"

#include <utility>

#include "absl/container/flat_hash_set.h"

namespace vdev::planner_internal {
namespace {

// The device ids the program can name: every interned device's, the default's and the host's.
absl::flat_hash_set<int> NamedIds(const ir::Module& module, const PlanOptions& options) {
  absl::flat_hash_set<int> ids;
  auto add = [&](const VirtualDevice& d) {
    if (d.has_id()) ids.insert(d.virtual_device_id());
  };
  for (ir::DeviceId d = 0; d < module.devices.size(); ++d) add(module.Device(d));
  add(options.default_device.value_or(module.config.EffectiveDefault()));
  add(options.host_device.value_or(module.config.EffectiveHost()));
  return ids;
}

}  // namespace

DeviceSubset KeepIdenticalDevices(const ir::Module& module, const PlanOptions& options, const Machine& machine,
                                  int keep) {
  const int n = static_cast<int>(machine.devices.size());
  std::vector<bool> kept(n, false);
  for (const auto& [key, link] : machine.pair_links) {
    kept[key >> 32] = kept[key & 0xffffffffu] = true;
  }
  const absl::flat_hash_set<int> named = NamedIds(module, options);
  // Groups of identical devices, by a representative; a machine has few distinct specs.
  std::vector<int> group_of_rep;
  std::vector<int> kept_in_group;
  DeviceSubset subset;
  for (int d = 0; d < n; ++d) {
    if (kept[d] || named.contains(machine.devices[d].virtual_device_id())) {
      kept[d] = true;
      continue;
    }
    size_t g = 0;
    while (g < group_of_rep.size() &&
           !(machine.devices[group_of_rep[g]].device_type() == machine.devices[d].device_type() &&
             machine.specs[group_of_rep[g]] == machine.specs[d])) {
      ++g;
    }
    if (g == group_of_rep.size()) {
      group_of_rep.push_back(d);
      kept_in_group.push_back(0);
    }
    kept[d] = kept_in_group[g] < keep;
    kept_in_group[g] += kept[d] ? 1 : 0;
    subset.complete = subset.complete && kept[d];
  }
  if (subset.complete) {
    subset.machine = machine;
    for (int d = 0; d < n; ++d) subset.full_index.push_back(d);
    return subset;
  }
  std::vector<int> sub_index(n, -1);
  MachineBuilder b;
  for (int d = 0; d < n; ++d) {
    if (!kept[d]) continue;
    sub_index[d] = static_cast<int>(subset.full_index.size());
    subset.full_index.push_back(d);
    b.AddDevice(machine.devices[d], machine.specs[d]);
  }
  for (const auto& [key, link] : machine.pair_links) {
    b.AddLink(sub_index[key >> 32], sub_index[key & 0xffffffffu], link);
  }
  for (const auto& [types, link] : machine.type_links) {
    b.AddTypeLink(static_cast<DeviceType>(types >> 16), static_cast<DeviceType>(types & 0xffff), link);
  }
  for (const auto& [op, types] : machine.support) b.SupportOnly(op, types);
  subset.machine = *b.Build();  // a sub-machine of a valid machine is valid
  return subset;
}

}  // namespace vdev::planner_internal
