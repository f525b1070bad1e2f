// Machine descriptions: the builder, the shipped default, the JSON format of docs/machine.md.
#include "vdev/machine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "vdev/device_type.h"
#include "vdev/diagnostic.h"

namespace vdev {

std::optional<int> Machine::Find(const VirtualDevice& device) const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].device_type() == device.device_type() && devices[i].virtual_device_id() == device.virtual_device_id()) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

bool Machine::Supports(absl::string_view op, int device) const {
  auto it = support.find(std::string(op));
  return it == support.end() || it->second.contains(devices[device].device_type());
}

MachineBuilder& MachineBuilder::AddDevice(const VirtualDevice& device, const DeviceSpec& spec) {
  machine_.devices.push_back(device);
  machine_.specs.push_back(spec);
  return *this;
}

MachineBuilder& MachineBuilder::AddLink(int a, int b, const LinkSpec& link) {
  pending_.emplace_back(a, b);
  pending_links_.push_back(link);
  return *this;
}

MachineBuilder& MachineBuilder::SupportOnly(const std::string& op, std::set<DeviceType> types) {
  machine_.support[op] = std::move(types);
  return *this;
}

absl::StatusOr<Machine> MachineBuilder::Build() const {
  Machine m = machine_;
  const size_t n = m.devices.size();
  if (n == 0) return absl::InvalidArgumentError("machine: no devices");
  for (size_t i = 0; i < n; ++i) {
    const VirtualDevice& d = m.devices[i];
    if (!d.has_device_type() || !d.has_id()) {
      return absl::InvalidArgumentError(absl::StrCat("machine: device ", d.ToString(), " needs a type and an id"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (m.Find(d) == static_cast<int>(j)) {
        return absl::InvalidArgumentError(absl::StrCat("machine: device ", d.ToString(), " is listed twice"));
      }
    }
    const DeviceSpec& s = m.specs[i];
    bool rates_ok = s.bandwidth > 0 && s.default_flops > 0 && s.memory_bytes > 0;
    for (const auto& [dtype, rate] : s.flops) rates_ok = rates_ok && rate > 0;
    if (!rates_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine: device ", d.ToString(), " needs memory, bandwidth and flop rates above 0"));
    }
  }
  m.links.assign(n * n, LinkSpec{});
  std::vector<bool> linked(n * n, false);
  for (size_t k = 0; k < pending_.size(); ++k) {
    auto [a, b] = pending_[k];
    if (a < 0 || b < 0 || a >= static_cast<int>(n) || b >= static_cast<int>(n) || a == b) {
      return absl::InvalidArgumentError(absl::StrCat("machine: link ", a, "-", b, " is not between two devices"));
    }
    if (pending_links_[k].bandwidth <= 0 || pending_links_[k].latency < 0) {
      return absl::InvalidArgumentError(absl::StrCat("machine: link ", m.devices[a].ToString(), "-",
                                                     m.devices[b].ToString(), " needs a bandwidth above 0"));
    }
    m.links[a * n + b] = m.links[b * n + a] = pending_links_[k];
    linked[a * n + b] = linked[b * n + a] = true;
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a != b && !linked[a * n + b]) {
        return absl::InvalidArgumentError(absl::StrCat("machine: no link between ", m.devices[a].ToString(),
                                                       " and ", m.devices[b].ToString()));
      }
    }
  }
  return m;
}

Machine DefaultMachine(int gpus, GpuKind kind) {
  using ir::DType;
  MachineBuilder b;
  // A two-socket server CPU: ~5 TFLOP/s f32 (AVX-512), ~600 GB/s DDR5.
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0),
              {.memory_bytes = 1024e9, .bandwidth = 600e9, .flops = {{DType::kF32, 5e12}, {DType::kF64, 2.5e12}},
               .default_flops = 5e12});
  // H100 SXM: 989 TFLOP/s dense f16/bf16, 67 f32, 3.35 TB/s, 80 GB; H200: same compute, 4.8 TB/s, 141 GB.
  const bool h200 = kind == GpuKind::kH200;
  DeviceSpec gpu{.memory_bytes = h200 ? 141e9 : 80e9,
                 .bandwidth = h200 ? 4.8e12 : 3.35e12,
                 .flops = {{DType::kF16, 989e12}, {DType::kBF16, 989e12}, {DType::kF32, 67e12}, {DType::kF64, 34e12},
                           {DType::kI8, 1979e12}},
                 .default_flops = 67e12};
  for (int g = 0; g < gpus; ++g) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g), gpu);
  for (int g = 0; g < gpus; ++g) {
    b.AddLink(0, g + 1, {.bandwidth = 64e9, .latency = 10e-6});  // PCIe Gen5 x16
    for (int h = g + 1; h < gpus; ++h) b.AddLink(g + 1, h + 1, {.bandwidth = 450e9, .latency = 3e-6});  // NVLink 4
  }
  return *b.Build();  // valid by construction
}

absl::StatusOr<Machine> ParseMachineJson(absl::string_view text) {
  using Json = nlohmann::json;
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    // parse_error knows the byte (1-based, one past the offending one); out_of_range (a number too
    // large) does not.
    std::string where;
    if (const auto* syntax = dynamic_cast<const Json::parse_error*>(&e)) {
      const SourceLoc loc = LocateOffset(text, syntax->byte > 0 ? syntax->byte - 1 : 0);
      where = absl::StrCat(" at line ", loc.line, ", column ", loc.col);
    }
    std::string what = e.what();
    const size_t colon = what.rfind(": "), bracket = what.find("] ");
    what = colon != std::string::npos ? what.substr(colon + 2) : bracket != std::string::npos ? what.substr(bracket + 2) : what;
    return absl::InvalidArgumentError(absl::StrCat("machine: not JSON", where, ": ", what));
  }
  if (!j.is_object()) return absl::InvalidArgumentError("machine: not a JSON object");
  auto number = [](const Json& o, const char* key, double scale, double* out) -> absl::Status {
    if (!o.contains(key) || !o[key].is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("machine: \"", key, "\" must be a number"));
    }
    *out = o[key].get<double>() * scale;
    return absl::OkStatus();
  };
  MachineBuilder b;
  if (!j.contains("devices") || !j["devices"].is_array()) {
    return absl::InvalidArgumentError("machine: \"devices\" must be an array");
  }
  std::vector<VirtualDevice> devices;
  for (const Json& d : j["devices"]) {
    if (!d.is_object() || !d.contains("device") || !d["device"].is_string()) {
      return absl::InvalidArgumentError("machine: each device needs \"device\" (e.g. \"cuda:0\")");
    }
    absl::StatusOr<VirtualDevice> device = ParseVirtualDevice(d["device"].get<std::string>());
    if (!device.ok()) return absl::InvalidArgumentError(absl::StrCat("machine: ", device.status().message()));
    DeviceSpec spec;
    for (auto [key, scale, out] : {std::tuple{"memory_gb", 1e9, &spec.memory_bytes},
                                   std::tuple{"bandwidth_gbs", 1e9, &spec.bandwidth},
                                   std::tuple{"default_tflops", 1e12, &spec.default_flops}}) {
      if (absl::Status s = number(d, key, scale, out); !s.ok()) return s;
    }
    if (d.contains("tflops")) {
      if (!d["tflops"].is_object()) return absl::InvalidArgumentError("machine: \"tflops\" must be an object");
      for (const auto& [name, rate] : d["tflops"].items()) {
        std::optional<ir::DType> dtype = ir::DTypeFromName(name);
        if (!dtype || !rate.is_number()) {
          return absl::InvalidArgumentError(absl::StrCat("machine: \"tflops\": bad entry \"", name, "\""));
        }
        spec.flops[*dtype] = rate.get<double>() * 1e12;
      }
    }
    devices.push_back(*device);
    b.AddDevice(*device, spec);
  }
  auto index = [&](const Json& name) -> std::optional<int> {
    if (!name.is_string()) return std::nullopt;
    absl::StatusOr<VirtualDevice> d = ParseVirtualDevice(name.get<std::string>());
    if (!d.ok()) return std::nullopt;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i] == *d) return static_cast<int>(i);
    }
    return std::nullopt;
  };
  if (j.contains("links")) {
    if (!j["links"].is_array()) return absl::InvalidArgumentError("machine: \"links\" must be an array");
    for (const Json& l : j["links"]) {
      if (!l.is_object() || !l.contains("between") || !l["between"].is_array() || l["between"].size() != 2) {
        return absl::InvalidArgumentError("machine: each link needs \"between\": [two devices]");
      }
      std::optional<int> a = index(l["between"][0]);
      std::optional<int> c = index(l["between"][1]);
      if (!a || !c) return absl::InvalidArgumentError("machine: a link names a device that is not listed");
      LinkSpec link;
      if (absl::Status s = number(l, "bandwidth_gbs", 1e9, &link.bandwidth); !s.ok()) return s;
      if (absl::Status s = number(l, "latency_us", 1e-6, &link.latency); !s.ok()) return s;
      b.AddLink(*a, *c, link);
    }
  }
  if (j.contains("ops")) {
    if (!j["ops"].is_object()) return absl::InvalidArgumentError("machine: \"ops\" must be an object");
    for (const auto& [op, types] : j["ops"].items()) {
      std::set<DeviceType> set;
      if (!types.is_array()) return absl::InvalidArgumentError(absl::StrCat("machine: \"ops\".", op, " must be an array"));
      for (const Json& t : types) {
        std::optional<DeviceType> type = t.is_string() ? DeviceTypeFromName(t.get<std::string>()) : std::nullopt;
        if (!type) return absl::InvalidArgumentError(absl::StrCat("machine: \"ops\".", op, ": unknown device type"));
        set.insert(*type);
      }
      b.SupportOnly(op, std::move(set));
    }
  }
  return b.Build();
}

double OpSeconds(const Machine& machine, int device, double flops, double bytes, ir::DType dtype) {
  const DeviceSpec& s = machine.specs[device];
  auto it = s.flops.find(dtype);
  double rate = it != s.flops.end() ? it->second : s.default_flops;
  return std::max(flops / rate, bytes / s.bandwidth);
}

double CopySeconds(const Machine& machine, int from, int to, double bytes) {
  if (from == to) return 0;
  const LinkSpec& l = machine.Link(from, to);
  return l.latency + bytes / l.bandwidth;
}

}  // namespace vdev
