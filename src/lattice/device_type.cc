// Spellings of device types.
#include "vdev/lattice/device_type.h"

#include <array>
#include <utility>

namespace vdev {
namespace {

constexpr std::array<std::pair<DeviceType, absl::string_view>, 9> kNames = {{
    {DeviceType::kUnconstrained, "*"},
    {DeviceType::kCPU, "cpu"},
    {DeviceType::kCUDA, "cuda"},
    {DeviceType::kROCm, "rocm"},
    {DeviceType::kMetal, "metal"},
    {DeviceType::kVulkan, "vulkan"},
    {DeviceType::kOpenCL, "opencl"},
    {DeviceType::kHexagon, "hexagon"},
    {DeviceType::kWebGPU, "webgpu"},
}};

}  // namespace

absl::string_view DeviceTypeName(DeviceType type) {
  for (const auto& [t, name] : kNames)
    if (t == type) return name;
  return "?";
}

std::optional<DeviceType> DeviceTypeFromName(absl::string_view name) {
  for (const auto& [t, n] : kNames)
    if (n == name) return t;
  return std::nullopt;
}

}  // namespace vdev
