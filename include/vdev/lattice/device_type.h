// Device types, numbered as in DLPack so values cross into other runtimes unchanged.
#ifndef VDEV_DEVICE_TYPE_H_
#define VDEV_DEVICE_TYPE_H_

#include <optional>
#include "absl/strings/string_view.h"

namespace vdev {

enum class DeviceType : int {
  kUnconstrained = -1,
  kCPU = 1,
  kCUDA = 2,
  kOpenCL = 4,
  kVulkan = 7,
  kMetal = 8,
  kROCm = 10,
  kWebGPU = 15,
  kHexagon = 16,
};

// The literal spelling: "cpu", "cuda", …; "*" for kUnconstrained.
absl::string_view DeviceTypeName(DeviceType type);

// Inverse of DeviceTypeName; nullopt for an unknown spelling.
std::optional<DeviceType> DeviceTypeFromName(absl::string_view name);

}  // namespace vdev

#endif  // VDEV_DEVICE_TYPE_H_
