// RapidCheck generators for vdev's values, for vdev's own property tests (not installed: it needs
// RapidCheck, which the public headers do not); vdev.testing (python/vdev/testing.py, Hypothesis)
// is the user-facing counterpart in Python. The two draw from the same domain and the same program
// grammar.
//
// Few values per field make agreements and conflicts both common, which is what the lattice laws
// are about. Header-only; needs RapidCheck (Debian: librapidcheck-dev) and, for ProgramText,
// vdev::planner to parse what it generates. Example:
//
//   #include "rapidcheck.h"
//   #include "testing/arbitrary.h"
//   rc::check("join commutes", [](const vdev::VirtualDevice& a, const vdev::VirtualDevice& b) {
//     RC_ASSERT(vdev::Join(a, b) == vdev::Join(b, a));
//   });
//   rc::check("my pass keeps programs plannable", [] {
//     std::string text = *vdev::testing::ProgramText();
//     absl::StatusOr<vdev::ir::Module> m = vdev::ir::ParseModule(text);   // always parses and verifies
//     ...
//   });
#ifndef VDEV_TESTS_TESTING_ARBITRARY_H_
#define VDEV_TESTS_TESTING_ARBITRARY_H_

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rapidcheck.h"
#include "vdev/lattice/target.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::testing {

// The targets a device of `type` may carry in the domain (nullopt: none).
inline std::vector<std::optional<Target>> TargetsFor(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU: return {std::nullopt, *Target::Parse("llvm")};
    case DeviceType::kCUDA: return {std::nullopt, *Target::Parse("cuda"), *Target::Parse("cuda -arch=sm_90")};
    default: return {std::nullopt};
  }
}

inline const std::vector<DeviceType>& DomainTypes() {
  static const auto* types =
      new std::vector<DeviceType>{DeviceType::kUnconstrained, DeviceType::kCPU, DeviceType::kCUDA};
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

// The text of a small well-formed program: a straight-line @main over two tensors with adds,
// negations, tuples and projections, `on_device` annotations (normal, pinned and free), `if`s whose
// arm annotates, and `device_copy`s. It always parses and verifies; planning it may warn
// (conflicting primitive uses) or fail (annotations that cannot hold together).
inline rc::Gen<std::string> ProgramText(int max_bindings = 12) {
  return rc::gen::exec([max_bindings] {
    static const std::vector<std::string> kDevices = {"cpu:0", "cuda:0", "cuda:1", "/global", "cuda", "*:1"};
    const int n = *rc::gen::inRange(1, max_bindings + 1);
    std::string text = "def @main(%p: f32[4], %q: f32[4], %c: bool[]) -> f32[4] {\n";
    std::vector<std::string> values = {"%p", "%q"};
    for (int i = 0; i < n; ++i) {
      auto pick = [&] { return values[*rc::gen::inRange<size_t>(0, values.size())]; };
      const std::string device = *rc::gen::elementOf(kDevices);
      const std::string name = absl::StrCat("%v", i);
      switch (*rc::gen::inRange(0, 8)) {
        case 0: absl::StrAppend(&text, "  ", name, " = add(", pick(), ", ", pick(), ")\n"); break;
        case 1: absl::StrAppend(&text, "  ", name, " = negative(", pick(), ")\n"); break;
        case 2: absl::StrAppend(&text, "  ", name, " = on_device(", pick(), ", ", device, ")\n"); break;
        case 3:
          absl::StrAppend(&text, "  ", name, " = on_device(", pick(), ", ", device, ", constrain_result=true)\n");
          break;
        case 4:
          absl::StrAppend(&text, "  ", name, " = on_device(", pick(),
                          ", ?, constrain_body=false, constrain_result=false)\n");
          break;
        case 5:
          absl::StrAppend(&text, "  %t", i, " = (", pick(), ", ", pick(), ")\n  ", name, " = %t", i, ".",
                          *rc::gen::inRange(0, 2), "\n");
          break;
        case 6:
          absl::StrAppend(&text, "  ", name, " = if %c {\n    %x", i, " = negative(", pick(), ")\n    %y", i,
                          " = on_device(%x", i, ", ", device, ")\n    return %y", i, "\n  } else {\n    return ",
                          pick(), "\n  }\n");
          break;
        default:
          absl::StrAppend(&text, "  ", name, " = device_copy(", pick(), ", src=", device,
                          ", dst=", *rc::gen::elementOf(kDevices), ")\n");
          break;
      }
      values.push_back(name);
    }
    absl::StrAppend(&text, "  return ", values.back(), "\n}\n");
    return text;
  });
}

}  // namespace vdev::testing

namespace rc {

template <>
struct Arbitrary<vdev::Target> {
  static Gen<vdev::Target> arbitrary() {
    return gen::elementOf(std::vector<vdev::Target>{*vdev::Target::Parse("llvm"), *vdev::Target::Parse("cuda"),
                                                    *vdev::Target::Parse("cuda -arch=sm_90")});
  }
};

template <>
struct Arbitrary<vdev::VirtualDevice> {
  static Gen<vdev::VirtualDevice> arbitrary() {
    using vdev::testing::DomainIds;
    using vdev::testing::DomainScopes;
    using vdev::testing::DomainTypes;
    return gen::mapcat(gen::elementOf(DomainTypes()), [](vdev::DeviceType type) {
      return gen::map(gen::tuple(gen::elementOf(vdev::testing::TargetsFor(type)), gen::elementOf(DomainIds()),
                                 gen::elementOf(DomainScopes())),
                      [type](const std::tuple<std::optional<vdev::Target>, int, std::string>& fields) {
                        return *vdev::VirtualDevice::Make(type, std::get<1>(fields), std::get<0>(fields),
                                                          std::get<2>(fields));
                      });
    });
  }
};

}  // namespace rc

#endif  // VDEV_TESTS_TESTING_ARBITRARY_H_
