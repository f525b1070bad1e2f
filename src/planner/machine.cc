// Machine descriptions: the builder, the shipped default, the JSON format of docs/machine.md.
#include "vdev/planner/machine.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "vdev/lattice/device_type.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/status_macros.h"

namespace vdev {

namespace {

uint64_t DeviceKey(const VirtualDevice& d) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(d.device_type())) << 32) |
         static_cast<uint32_t>(d.virtual_device_id());
}

// Every pair of devices has a link: each pair of device types present has a type link, or its
// pairs' own links number as many as its pairs (pair links are distinct by their keys).
absl::Status CheckEveryPairLinked(const Machine& m) {
  std::map<DeviceType, int64_t> per_type;
  for (const VirtualDevice& d : m.devices) ++per_type[d.device_type()];
  std::map<uint32_t, int64_t> pair_links_per_types;
  for (const auto& [key, link] : m.pair_links) {
    const int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
    ++pair_links_per_types[Machine::TypePairKey(m.devices[a].device_type(), m.devices[b].device_type())];
  }
  for (const auto& [ta, na] : per_type) {
    for (const auto& [tb, nb] : per_type) {
      if (tb < ta) continue;
      const uint32_t types = Machine::TypePairKey(ta, tb);
      const int64_t pairs = ta == tb ? na * (na - 1) / 2 : na * nb;
      if (m.type_links.contains(types) || pair_links_per_types[types] == pairs) continue;
      // Name one unlinked pair (only on this error path is the search quadratic).
      for (size_t a = 0; a < m.devices.size(); ++a) {
        for (size_t b = a + 1; b < m.devices.size(); ++b) {
          if (Machine::TypePairKey(m.devices[a].device_type(), m.devices[b].device_type()) == types &&
              !m.pair_links.contains(Machine::PairKey(a, b))) {
            return absl::InvalidArgumentError(
                absl::StrCat("machine: no link between ", m.devices[a].ToString(), " and ", m.devices[b].ToString()));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// Pair links that say what their device types' link says are dropped, and where pair links cover
// every pair of two device types, their most common link becomes the types' link: then a device is
// named by a pair link only where its link differs, and devices alike in all but their ids are
// found identical (the optimiser searches one of them, internal/identical_devices.h).
void FoldPairLinksIntoTypeLinks(Machine& m, const std::map<DeviceType, int64_t>& per_type) {
  using Key = std::tuple<double, double, double>;  // bandwidth, latency, graph latency (-1: none)
  std::map<uint32_t, absl::flat_hash_map<Key, int64_t>> counts;
  for (const auto& [key, link] : m.pair_links) {
    const uint32_t types =
        Machine::TypePairKey(m.devices[key >> 32].device_type(), m.devices[key & 0xffffffffu].device_type());
    if (!m.type_links.contains(types))
      ++counts[types][Key{link.bandwidth, link.latency, link.graph_latency.value_or(-1)}];
  }
  for (const auto& [types, by_link] : counts) {
    const int64_t na = per_type.at(static_cast<DeviceType>(types >> 16));
    const int64_t nb = per_type.at(static_cast<DeviceType>(types & 0xffff));
    const int64_t pairs = (types >> 16) == (types & 0xffff) ? na * (na - 1) / 2 : na * nb;
    int64_t total = 0;
    std::pair<Key, int64_t> common{{0, 0, -1}, -1};
    for (const auto& [link, n] : by_link) {
      total += n;
      if (n > common.second || (n == common.second && link < common.first)) common = {link, n};
    }
    if (total == pairs) {
      const auto [bandwidth, latency, graph_latency] = common.first;
      m.type_links[types] = {.bandwidth = bandwidth,
                             .latency = latency,
                             .graph_latency = graph_latency < 0 ? std::nullopt : std::optional(graph_latency)};
    }
  }
  absl::erase_if(m.pair_links, [&](const auto& entry) {
    const uint32_t types = Machine::TypePairKey(m.devices[entry.first >> 32].device_type(),
                                                m.devices[entry.first & 0xffffffffu].device_type());
    auto it = m.type_links.find(types);
    return it != m.type_links.end() && it->second == entry.second;
  });
}

absl::Status CheckDevice(const VirtualDevice& d, const DeviceSpec& s) {
  if (!d.has_device_type() || !d.has_id()) {
    return absl::InvalidArgumentError(absl::StrCat("machine: device ", d.ToString(), " needs a type and an id"));
  }
  bool rates_ok = s.bandwidth > 0 && s.default_flops > 0 && s.memory_bytes > 0;
  for (const auto& [dtype, rate] : s.flops) rates_ok = rates_ok && rate > 0;
  if (!rates_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("machine: device ", d.ToString(), " needs memory, bandwidth and flop rates above 0"));
  }
  // Also refuses NaN: a per-op time is added to every op's cost.
  auto fixed_ok = [](double seconds) { return seconds >= 0 && seconds < 1; };
  bool fixed = fixed_ok(s.kernel_seconds) && fixed_ok(s.graph_kernel_seconds) && fixed_ok(s.if_seconds) &&
               fixed_ok(s.host_copy_seconds);
  for (const auto* by_kind : {&s.kind_kernel_seconds, &s.kind_graph_kernel_seconds}) {
    for (const auto& [kind, seconds] : *by_kind) fixed = fixed && fixed_ok(seconds);
  }
  for (const auto& [kind, ramp] : s.kind_ramp) {
    fixed = fixed && ramp.bytes > 0 && fixed_ok(ramp.seconds) && fixed_ok(ramp.graph_seconds);
  }
  if (!fixed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "machine: device ", d.ToString(),
        " needs fixed times (kernel_us, graph_kernel_us and their by_kind entries, if_us, host_copy_us, ramp_by_kind's"
        " us and graph_us) of 0 to 1 s and ramp bytes above 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckLink(const LinkSpec& link, const std::string& between) {
  if (!(link.bandwidth > 0) || !(link.latency >= 0) || !(link.graph_latency.value_or(0) >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("machine: link ", between, " needs a bandwidth above 0 and latencies of at least 0"));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t Machine::PairKey(int a, int b) {
  return (static_cast<uint64_t>(std::min(a, b)) << 32) | static_cast<uint32_t>(std::max(a, b));
}

uint32_t Machine::TypePairKey(DeviceType a, DeviceType b) {
  const auto x = static_cast<uint32_t>(a), y = static_cast<uint32_t>(b);
  return (std::min(x, y) << 16) | std::max(x, y);
}

std::optional<int> Machine::Find(const VirtualDevice& device) const {
  if (!device.has_device_type() || !device.has_id()) return std::nullopt;
  auto it = index.find(DeviceKey(device));
  return it == index.end() ? std::nullopt : std::optional<int>(it->second);
}

bool Machine::Supports(absl::string_view op, int device) const {
  auto it = support.find(std::string(op));
  return it == support.end() || it->second.contains(devices[device].device_type());
}

const LinkSpec& Machine::Link(int a, int b) const {
  if (auto it = pair_links.find(PairKey(a, b)); it != pair_links.end()) return it->second;
  return type_links.at(TypePairKey(devices[a].device_type(), devices[b].device_type()));
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

MachineBuilder& MachineBuilder::AddTypeLink(DeviceType a, DeviceType b, const LinkSpec& link) {
  pending_type_links_.emplace_back(Machine::TypePairKey(a, b), link);
  return *this;
}

MachineBuilder& MachineBuilder::SupportOnly(const std::string& op, std::set<DeviceType> types) {
  machine_.support[op] = std::move(types);
  return *this;
}

MachineBuilder& MachineBuilder::SetRunSeconds(double seconds) {
  machine_.run_seconds = seconds;
  return *this;
}

MachineBuilder& MachineBuilder::SetHostRunSeconds(double seconds) {
  machine_.host_run_seconds = seconds;
  return *this;
}

MachineBuilder& MachineBuilder::SetCallSeconds(double seconds) {
  machine_.call_seconds = seconds;
  return *this;
}

absl::StatusOr<Machine> MachineBuilder::Build() const {
  Machine m = machine_;
  const size_t n = m.devices.size();
  if (n == 0) return absl::InvalidArgumentError("machine: no devices");
  for (const auto& [key, seconds] :
       {std::pair{"run_us", m.run_seconds}, std::pair{"host_run_us", m.host_run_seconds.value_or(0)},
        std::pair{"call_us", m.call_seconds}}) {
    if (!(seconds >= 0 && seconds < 1)) {
      return absl::InvalidArgumentError(absl::StrCat("machine: \"", key, "\" must be 0 to 1 s"));
    }
  }
  if (n > kMaxMachineDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("machine: ", n, " devices, more than the ", kMaxMachineDevices, " a machine may have"));
  }
  if (pending_.size() > kMaxMachineLinks) {
    return absl::InvalidArgumentError(
        absl::StrCat("machine: ", pending_.size(), " links given per device pair, more than the ", kMaxMachineLinks,
                     " a machine may have (give a link per pair of device types instead)"));
  }
  for (size_t i = 0; i < n; ++i) {
    const VirtualDevice& d = m.devices[i];
    VDEV_RETURN_IF_ERROR(CheckDevice(d, m.specs[i]));
    if (!m.index.emplace(DeviceKey(d), static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat("machine: device ", d.ToString(), " is listed twice"));
    }
  }
  for (size_t k = 0; k < pending_.size(); ++k) {
    auto [a, b] = pending_[k];
    if (a < 0 || b < 0 || a >= static_cast<int>(n) || b >= static_cast<int>(n) || a == b) {
      return absl::InvalidArgumentError(absl::StrCat("machine: link ", a, "-", b, " is not between two devices"));
    }
    VDEV_RETURN_IF_ERROR(
        CheckLink(pending_links_[k], absl::StrCat(m.devices[a].ToString(), "-", m.devices[b].ToString())));
    m.pair_links[Machine::PairKey(a, b)] = pending_links_[k];
  }
  for (const auto& [types, link] : pending_type_links_) {
    VDEV_RETURN_IF_ERROR(CheckLink(link, absl::StrCat(DeviceTypeName(static_cast<DeviceType>(types >> 16)), "-",
                                                      DeviceTypeName(static_cast<DeviceType>(types & 0xffff)))));
    m.type_links[types] = link;
  }
  VDEV_RETURN_IF_ERROR(CheckEveryPairLinked(m));
  std::map<DeviceType, int64_t> per_type;
  for (const VirtualDevice& d : m.devices) ++per_type[d.device_type()];
  FoldPairLinksIntoTypeLinks(m, per_type);
  return m;
}

Machine DefaultMachine(int gpus, GpuKind kind) {
  using ir::DType;
  MachineBuilder b;
  // A two-socket server CPU: ~5 TFLOP/s f32 (AVX-512), ~600 GB/s DDR5.
  // Per op (a 2x H100 host, `vdev machine probe`): vdev's executor running a small CPU kernel
  // (~1 µs), a GPU kernel op by op (~6 µs) or in a replayed CUDA graph (~1.5 µs); per run ~18 µs.
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0), {.memory_bytes = 1024e9,
                                                              .bandwidth = 600e9,
                                                              .flops = {{DType::kF32, 5e12}, {DType::kF64, 2.5e12}},
                                                              .default_flops = 5e12,
                                                              .kernel_seconds = 1e-6,
                                                              .graph_kernel_seconds = 1e-6});
  // H100 SXM: 989 TFLOP/s dense f16/bf16, 67 f32, 3.35 TB/s, 80 GB; H200: same compute, 4.8 TB/s, 141 GB.
  const bool h200 = kind == GpuKind::kH200;
  DeviceSpec gpu{.memory_bytes = h200 ? 141e9 : 80e9,
                 .bandwidth = h200 ? 4.8e12 : 3.35e12,
                 .flops = {{DType::kF16, 989e12},
                           {DType::kBF16, 989e12},
                           {DType::kF32, 67e12},
                           {DType::kF64, 34e12},
                           {DType::kI8, 1979e12}},
                 .default_flops = 67e12,
                 .kernel_seconds = 6e-6,
                 .graph_kernel_seconds = 1.5e-6};
  for (int g = 0; g < gpus; ++g) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g), gpu);
  b.AddTypeLink(DeviceType::kCPU, DeviceType::kCUDA, {.bandwidth = 64e9, .latency = 10e-6});   // PCIe Gen5 x16
  b.AddTypeLink(DeviceType::kCUDA, DeviceType::kCUDA, {.bandwidth = 450e9, .latency = 3e-6});  // NVLink 4
  b.SetRunSeconds(18e-6);  // launching a run and waiting for it
  return *b.Build();       // valid by construction
}

namespace {

using Json = nlohmann::json;

absl::Status Number(const Json& o, const char* key, double scale, double* out) {
  if (!o.contains(key) || !o[key].is_number()) {
    return absl::InvalidArgumentError(absl::StrCat("machine: \"", key, "\" must be a number"));
  }
  *out = o[key].get<double>() * scale;
  return absl::OkStatus();
}

// `key` times `scale` where given, else `absent`.
absl::Status OptionalNumber(const Json& o, const char* key, double scale, double absent, double* out) {
  if (!o.contains(key)) {
    *out = absent;
    return absl::OkStatus();
  }
  return Number(o, key, scale, out);
}

// A link's end: a listed device (its index) or a device type (every device of it).
struct LinkEnd {
  std::optional<int> device;
  DeviceType type = DeviceType::kUnconstrained;
};

std::optional<LinkEnd> ParseLinkEnd(const Json& name, const absl::flat_hash_map<std::string, int>& devices) {
  if (!name.is_string()) return std::nullopt;
  const std::string& text = name.get_ref<const std::string&>();
  // The name as the file lists the device (the common case: no parse).
  if (auto it = devices.find(text); it != devices.end()) return LinkEnd{it->second, DeviceType::kUnconstrained};
  if (std::optional<DeviceType> type = DeviceTypeFromName(text); type && *type != DeviceType::kUnconstrained) {
    return LinkEnd{std::nullopt, *type};
  }
  absl::StatusOr<VirtualDevice> d = ParseVirtualDevice(text);
  if (!d.ok()) return std::nullopt;
  auto it = devices.find(d->ToString());
  if (it == devices.end()) return std::nullopt;
  return LinkEnd{it->second, d->device_type()};
}

// `links`: between two listed devices, or two device types (every such pair).
absl::Status ParseLinks(const Json& links, const absl::flat_hash_map<std::string, int>& devices, MachineBuilder* b) {
  for (const Json& l : links) {
    if (!l.is_object() || !l.contains("between") || !l["between"].is_array() || l["between"].size() != 2) {
      return absl::InvalidArgumentError("machine: each link needs \"between\": [two devices or two device types]");
    }
    std::optional<LinkEnd> a = ParseLinkEnd(l["between"][0], devices);
    std::optional<LinkEnd> c = ParseLinkEnd(l["between"][1], devices);
    if (!a || !c) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine: link ", l["between"].dump(), " names a device that is not listed"));
    }
    if (a->device.has_value() != c->device.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine: link ", l["between"].dump(), " must be between two devices or two device types"));
    }
    LinkSpec link;
    VDEV_RETURN_IF_ERROR(Number(l, "bandwidth_gbs", 1e9, &link.bandwidth));
    VDEV_RETURN_IF_ERROR(Number(l, "latency_us", 1e-6, &link.latency));
    if (l.contains("graph_latency_us")) {
      link.graph_latency = 0;
      VDEV_RETURN_IF_ERROR(Number(l, "graph_latency_us", 1e-6, &*link.graph_latency));
    }
    if (a->device) {
      b->AddLink(*a->device, *c->device, link);
    } else {
      b->AddTypeLink(a->type, c->type, link);
    }
  }
  return absl::OkStatus();
}

// The text as JSON, or an InvalidArgument error naming where it is not JSON.
absl::StatusOr<Json> ParseJsonText(absl::string_view text) {
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
    what = colon != std::string::npos     ? what.substr(colon + 2)
           : bracket != std::string::npos ? what.substr(bracket + 2)
                                          : what;
    return absl::InvalidArgumentError(absl::StrCat("machine: not JSON", where, ": ", what));
  }
  return j;
}

// `key`: {"matmul": µs, "norm": µs, "elementwise": µs}, any of them, where given.
absl::Status ParseKindTimes(const Json& d, const char* key, std::map<KernelKind, double>* out) {
  if (!d.contains(key)) return absl::OkStatus();
  if (!d[key].is_object()) return absl::InvalidArgumentError(absl::StrCat("machine: \"", key, "\" must be an object"));
  for (const auto& [name, us] : d[key].items()) {
    std::optional<KernelKind> kind = KernelKindFromName(name);
    if (!kind || !us.is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("machine: \"", key, "\": bad entry \"", name,
                                                     "\" (kinds: matmul, norm, elementwise; values in µs)"));
    }
    (*out)[*kind] = us.get<double>() * 1e-6;
  }
  return absl::OkStatus();
}

// "ramp_by_kind": {"matmul": {"bytes": B, "us": µs, "graph_us": µs}, ...}, where given.
absl::Status ParseKindRamps(const Json& d, std::map<KernelKind, KernelRamp>* out) {
  if (!d.contains("ramp_by_kind")) return absl::OkStatus();
  if (!d["ramp_by_kind"].is_object()) return absl::InvalidArgumentError("machine: \"ramp_by_kind\" must be an object");
  for (const auto& [name, ramp] : d["ramp_by_kind"].items()) {
    std::optional<KernelKind> kind = KernelKindFromName(name);
    if (!kind || !ramp.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine: \"ramp_by_kind\": bad entry \"", name,
                       "\" (kinds: matmul, norm, elementwise; each {bytes, us, graph_us})"));
    }
    KernelRamp& r = (*out)[*kind];
    VDEV_RETURN_IF_ERROR(Number(ramp, "bytes", 1, &r.bytes));
    VDEV_RETURN_IF_ERROR(Number(ramp, "us", 1e-6, &r.seconds));
    VDEV_RETURN_IF_ERROR(Number(ramp, "graph_us", 1e-6, &r.graph_seconds));
  }
  return absl::OkStatus();
}

// The "devices" array: each device and its spec added to `b`; returns the index of each by its name.
absl::StatusOr<absl::flat_hash_map<std::string, int>> ParseDevices(const Json& list, MachineBuilder* b) {
  absl::flat_hash_map<std::string, int> devices;  // by the name the file gives
  int listed = 0;
  for (const Json& d : list) {
    if (!d.is_object() || !d.contains("device") || !d["device"].is_string()) {
      return absl::InvalidArgumentError("machine: each device needs \"device\" (e.g. \"cuda:0\")");
    }
    absl::StatusOr<VirtualDevice> device = ParseVirtualDevice(d["device"].get<std::string>());
    if (!device.ok()) return absl::InvalidArgumentError(absl::StrCat("machine: ", device.status().message()));
    DeviceSpec spec;
    for (auto [key, scale, out] :
         {std::tuple{"memory_gb", 1e9, &spec.memory_bytes}, std::tuple{"bandwidth_gbs", 1e9, &spec.bandwidth},
          std::tuple{"default_tflops", 1e12, &spec.default_flops}}) {
      VDEV_RETURN_IF_ERROR(Number(d, key, scale, out));
    }
    VDEV_RETURN_IF_ERROR(OptionalNumber(d, "kernel_us", 1e-6, 0, &spec.kernel_seconds));
    VDEV_RETURN_IF_ERROR(OptionalNumber(d, "graph_kernel_us", 1e-6, spec.kernel_seconds, &spec.graph_kernel_seconds));
    VDEV_RETURN_IF_ERROR(OptionalNumber(d, "if_us", 1e-6, 0, &spec.if_seconds));
    VDEV_RETURN_IF_ERROR(OptionalNumber(d, "host_copy_us", 1e-6, 0, &spec.host_copy_seconds));
    VDEV_RETURN_IF_ERROR(ParseKindTimes(d, "kernel_us_by_kind", &spec.kind_kernel_seconds));
    VDEV_RETURN_IF_ERROR(ParseKindTimes(d, "graph_kernel_us_by_kind", &spec.kind_graph_kernel_seconds));
    VDEV_RETURN_IF_ERROR(ParseKindRamps(d, &spec.kind_ramp));
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
    devices.emplace(device->ToString(), listed++);
    b->AddDevice(*device, spec);
  }
  return devices;
}

// The "ops" object: the device types each listed op runs on.
absl::Status ParseOpSupport(const Json& ops, MachineBuilder* b) {
  if (!ops.is_object()) return absl::InvalidArgumentError("machine: \"ops\" must be an object");
  for (const auto& [op, types] : ops.items()) {
    std::set<DeviceType> set;
    if (!types.is_array())
      return absl::InvalidArgumentError(absl::StrCat("machine: \"ops\".", op, " must be an array"));
    for (const Json& t : types) {
      std::optional<DeviceType> type = t.is_string() ? DeviceTypeFromName(t.get<std::string>()) : std::nullopt;
      if (!type) return absl::InvalidArgumentError(absl::StrCat("machine: \"ops\".", op, ": unknown device type"));
      set.insert(*type);
    }
    b->SupportOnly(op, std::move(set));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Machine> ParseMachineJson(absl::string_view text) {
  if (text.size() > kMaxMachineJsonBytes) {
    return absl::InvalidArgumentError(absl::StrCat("machine: ", text.size(), " bytes of text, more than the ",
                                                   kMaxMachineJsonBytes, " a machine file may have"));
  }
  VDEV_ASSIGN_OR_RETURN(Json j, ParseJsonText(text));
  if (!j.is_object()) return absl::InvalidArgumentError("machine: not a JSON object");
  MachineBuilder b;
  if (!j.contains("devices") || !j["devices"].is_array()) {
    return absl::InvalidArgumentError("machine: \"devices\" must be an array");
  }
  if (j["devices"].size() > kMaxMachineDevices) {
    return absl::InvalidArgumentError(absl::StrCat("machine: ", j["devices"].size(), " devices, more than the ",
                                                   kMaxMachineDevices, " a machine may have"));
  }
  VDEV_ASSIGN_OR_RETURN(auto devices, ParseDevices(j["devices"], &b));
  if (j.contains("links")) {
    if (!j["links"].is_array()) return absl::InvalidArgumentError("machine: \"links\" must be an array");
    if (j["links"].size() > kMaxMachineLinks) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine: ", j["links"].size(), " links, more than the ", kMaxMachineLinks,
                       " a machine file may list (give a link per pair of device types instead)"));
    }
    VDEV_RETURN_IF_ERROR(ParseLinks(j["links"], devices, &b));
  }
  if (j.contains("ops")) VDEV_RETURN_IF_ERROR(ParseOpSupport(j["ops"], &b));
  double run_seconds = 0;
  VDEV_RETURN_IF_ERROR(OptionalNumber(j, "run_us", 1e-6, 0, &run_seconds));
  b.SetRunSeconds(run_seconds);
  if (j.contains("host_run_us")) {
    double host_run_seconds = 0;
    VDEV_RETURN_IF_ERROR(OptionalNumber(j, "host_run_us", 1e-6, 0, &host_run_seconds));
    b.SetHostRunSeconds(host_run_seconds);
  }
  double call_seconds = 0;
  VDEV_RETURN_IF_ERROR(OptionalNumber(j, "call_us", 1e-6, 0, &call_seconds));
  b.SetCallSeconds(call_seconds);
  return b.Build();
}

std::string MachineJson(const Machine& machine) {
  auto link_json = [](const Json& between, const LinkSpec& l) {
    Json link{{"between", between}, {"bandwidth_gbs", l.bandwidth / 1e9}, {"latency_us", l.latency / 1e-6}};
    if (l.graph_latency) link["graph_latency_us"] = *l.graph_latency / 1e-6;
    return link;
  };
  Json devices = Json::array(), links = Json::array(), ops = Json::object();
  for (size_t d = 0; d < machine.devices.size(); ++d) {
    const DeviceSpec& s = machine.specs[d];
    Json tflops = Json::object();
    for (const auto& [dtype, rate] : s.flops) tflops[std::string(ir::DTypeName(dtype))] = rate / 1e12;
    devices.push_back({{"device", machine.devices[d].ToString()},
                       {"memory_gb", s.memory_bytes / 1e9},
                       {"bandwidth_gbs", s.bandwidth / 1e9},
                       {"default_tflops", s.default_flops / 1e12},
                       {"tflops", tflops},
                       {"kernel_us", s.kernel_seconds / 1e-6},
                       {"graph_kernel_us", s.graph_kernel_seconds / 1e-6}});
    // The optional fixed times only where measured, so that a file without them reads back the same.
    for (const auto& [key, by_kind] : {std::pair{"kernel_us_by_kind", &s.kind_kernel_seconds},
                                       std::pair{"graph_kernel_us_by_kind", &s.kind_graph_kernel_seconds}}) {
      if (by_kind->empty()) continue;
      Json times = Json::object();
      for (const auto& [kind, seconds] : *by_kind) times[std::string(KernelKindName(kind))] = seconds / 1e-6;
      devices.back()[key] = times;
    }
    if (s.if_seconds > 0) devices.back()["if_us"] = s.if_seconds / 1e-6;
    if (s.host_copy_seconds > 0) devices.back()["host_copy_us"] = s.host_copy_seconds / 1e-6;
    for (const auto& [kind, r] : s.kind_ramp) {
      devices.back()["ramp_by_kind"][std::string(KernelKindName(kind))] = {
          {"bytes", r.bytes}, {"us", r.seconds / 1e-6}, {"graph_us", r.graph_seconds / 1e-6}};
    }
  }
  // In a stable order: the maps' is not.
  std::map<uint32_t, LinkSpec> type_links(machine.type_links.begin(), machine.type_links.end());
  for (const auto& [types, link] : type_links) {
    links.push_back(link_json({std::string(DeviceTypeName(static_cast<DeviceType>(types >> 16))),
                               std::string(DeviceTypeName(static_cast<DeviceType>(types & 0xffff)))},
                              link));
  }
  std::map<uint64_t, LinkSpec> pair_links(machine.pair_links.begin(), machine.pair_links.end());
  for (const auto& [key, link] : pair_links) {
    links.push_back(
        link_json({machine.devices[key >> 32].ToString(), machine.devices[key & 0xffffffffu].ToString()}, link));
  }
  for (const auto& [op, types] : machine.support) {
    Json names = Json::array();
    for (DeviceType t : types) names.push_back(std::string(DeviceTypeName(t)));
    ops[op] = names;
  }
  Json j{{"devices", devices}, {"links", links}, {"ops", ops}, {"run_us", machine.run_seconds / 1e-6}};
  // The optional ones only where given, so that a file without them reads back the same.
  if (machine.host_run_seconds) j["host_run_us"] = *machine.host_run_seconds / 1e-6;
  if (machine.call_seconds > 0) j["call_us"] = machine.call_seconds / 1e-6;
  return j.dump(2) + "\n";
}

}  // namespace vdev
