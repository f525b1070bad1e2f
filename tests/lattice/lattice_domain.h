// A small finite domain of virtual devices, and a RapidCheck generator over the same fields.
//
// Few values per field make conflicts and agreements both common, which is what the lattice laws
// are about.
#ifndef VDEV_TESTS_LATTICE_LATTICE_DOMAIN_H_
#define VDEV_TESTS_LATTICE_LATTICE_DOMAIN_H_

#include <string>
#include <vector>

#include "rapidcheck.h"
#include "vdev/virtual_device.h"

namespace vdev::lattice_testing {

inline std::vector<std::optional<Target>> TargetsFor(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU: return {std::nullopt, *Target::Parse("llvm")};
    case DeviceType::kCUDA: return {std::nullopt, *Target::Parse("cuda"), *Target::Parse("cuda -arch=sm_90")};
    default: return {std::nullopt};
  }
}

inline const std::vector<DeviceType>& DomainTypes() {
  static const auto* types = new std::vector<DeviceType>{DeviceType::kUnconstrained, DeviceType::kCPU,
                                                         DeviceType::kCUDA};
  return *types;
}
inline const std::vector<int>& DomainIds() {
  static const auto* ids = new std::vector<int>{-1, 0, 1};
  return *ids;
}
inline const std::vector<std::string>& DomainScopes() {
  static const auto* scopes = new std::vector<std::string>{"", "global", "ipc_memory"};
  return *scopes;
}

// Every valid device over the domain's field values (54 of them).
inline std::vector<VirtualDevice> SmallDomain() {
  std::vector<VirtualDevice> out;
  for (DeviceType type : DomainTypes())
    for (const std::optional<Target>& target : TargetsFor(type))
      for (int id : DomainIds())
        for (const std::string& scope : DomainScopes()) out.push_back(*VirtualDevice::Make(type, id, target, scope));
  return out;
}

}  // namespace vdev::lattice_testing

namespace rc {

template <>
struct Arbitrary<vdev::VirtualDevice> {
  static Gen<vdev::VirtualDevice> arbitrary() {
    using vdev::lattice_testing::DomainIds;
    using vdev::lattice_testing::DomainScopes;
    using vdev::lattice_testing::DomainTypes;
    return gen::mapcat(gen::elementOf(DomainTypes()), [](vdev::DeviceType type) {
      return gen::map(gen::tuple(gen::elementOf(vdev::lattice_testing::TargetsFor(type)), gen::elementOf(DomainIds()),
                                 gen::elementOf(DomainScopes())),
                      [type](const std::tuple<std::optional<vdev::Target>, int, std::string>& fields) {
                        return *vdev::VirtualDevice::Make(type, std::get<1>(fields), std::get<0>(fields),
                                                          std::get<2>(fields));
                      });
    });
  }
};

}  // namespace rc

#endif  // VDEV_TESTS_LATTICE_LATTICE_DOMAIN_H_
