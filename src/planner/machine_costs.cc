// What a machine's numbers cost (OpSeconds, CopySeconds, IfSeconds, RunSeconds, CallSeconds: docs/machine.md, "Costs"), and
// measured devices and links made identical where they are alike (AverageIfAlike).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "vdev/planner/machine.h"

namespace vdev {

namespace {

// Every value of `field` within `tolerance` of the others (relative to the largest); `mean` gets
// their mean.
template <typename T, typename Field>
bool AlikeMean(const std::vector<T>& items, double tolerance, Field field, double* mean) {
  double lo = field(items[0]), hi = lo, sum = 0;
  for (const T& item : items) {
    const double v = field(item);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  *mean = sum / static_cast<double>(items.size());
  return hi - lo <= tolerance * std::abs(hi);
}

}  // namespace

std::optional<DeviceSpec> AverageIfAlike(const std::vector<DeviceSpec>& specs, double tolerance) {
  if (specs.empty()) return std::nullopt;
  DeviceSpec mean = specs[0];
  for (const DeviceSpec& s : specs) {
    if (s.flops.size() != mean.flops.size() || s.kind_kernel_seconds.size() != mean.kind_kernel_seconds.size() ||
        s.kind_graph_kernel_seconds.size() != mean.kind_graph_kernel_seconds.size() ||
        s.kind_ramp.size() != mean.kind_ramp.size())
      return std::nullopt;
  }
  bool alike = true;
  auto average = [&](auto field, double* out) { alike = AlikeMean(specs, tolerance, field, out) && alike; };
  average([](const DeviceSpec& s) { return s.memory_bytes; }, &mean.memory_bytes);
  average([](const DeviceSpec& s) { return s.bandwidth; }, &mean.bandwidth);
  average([](const DeviceSpec& s) { return s.default_flops; }, &mean.default_flops);
  average([](const DeviceSpec& s) { return s.graph_kernel_seconds; }, &mean.graph_kernel_seconds);
  // What a run op by op pays per op, and its waits, measure the host (dispatch, the driver) as much
  // as the device: averaged, not compared.
  auto host_side = [&](auto field, double* out) { AlikeMean(specs, tolerance, field, out); };
  host_side([](const DeviceSpec& s) { return s.kernel_seconds; }, &mean.kernel_seconds);
  host_side([](const DeviceSpec& s) { return s.if_seconds; }, &mean.if_seconds);
  host_side([](const DeviceSpec& s) { return s.host_copy_seconds; }, &mean.host_copy_seconds);
  // Each keyed number (rate per dtype, fixed time per kind) in every spec, and alike where compared.
  auto average_map = [&](auto member, bool compared) {
    for (auto& entry : mean.*member) {
      const auto key = entry.first;  // a structured binding cannot be captured before C++20's P1091 (clang 16)
      for (const DeviceSpec& s : specs) alike = alike && (s.*member).contains(key);
      if (!alike) return;
      auto field = [&](const DeviceSpec& s) { return (s.*member).at(key); };
      compared ? average(field, &entry.second) : host_side(field, &entry.second);
    }
  };
  average_map(&DeviceSpec::flops, true);
  average_map(&DeviceSpec::kind_kernel_seconds, false);
  average_map(&DeviceSpec::kind_graph_kernel_seconds, true);
  // A ramp (a few µs, measured at one size) is as noisy as a time op by op: averaged, not compared.
  for (auto& [kind, ramp] : mean.kind_ramp) {
    const KernelKind k = kind;
    for (const DeviceSpec& s : specs) alike = alike && s.kind_ramp.contains(k) && s.kind_ramp.at(k).bytes == ramp.bytes;
    if (!alike) break;
    host_side([k](const DeviceSpec& s) { return s.kind_ramp.at(k).graph_seconds; }, &ramp.graph_seconds);
    host_side([k](const DeviceSpec& s) { return s.kind_ramp.at(k).seconds; }, &ramp.seconds);
  }
  if (!alike) return std::nullopt;
  return mean;
}

std::optional<LinkSpec> AverageIfAlike(const std::vector<LinkSpec>& links, double tolerance) {
  if (links.empty()) return std::nullopt;
  LinkSpec mean;
  bool alike = AlikeMean(
                   links, tolerance, [](const LinkSpec& l) { return l.bandwidth; }, &mean.bandwidth) &&
               AlikeMean(
                   links, tolerance, [](const LinkSpec& l) { return l.latency; }, &mean.latency);
  // The latency inside a graph, like the time of a small copy, is averaged where all have one.
  const auto has_graph_latency = [](const LinkSpec& l) { return l.graph_latency.has_value(); };
  if (std::any_of(links.begin(), links.end(), has_graph_latency)) {
    alike = alike && std::all_of(links.begin(), links.end(), has_graph_latency);
    mean.graph_latency = 0;
    AlikeMean(
        links, tolerance, [](const LinkSpec& l) { return l.graph_latency.value_or(0); }, &*mean.graph_latency);
  }
  if (!alike) return std::nullopt;
  return mean;
}

double OpSeconds(const Machine& machine, int device, double flops, double bytes, ir::DType dtype, LaunchMode mode,
                 KernelKind kind) {
  const DeviceSpec& s = machine.specs[device];
  auto it = s.flops.find(dtype);
  double rate = it != s.flops.end() ? it->second : s.default_flops;
  const bool replay = mode == LaunchMode::kGraphReplay;
  const std::map<KernelKind, double>& by_kind = replay ? s.kind_graph_kernel_seconds : s.kind_kernel_seconds;
  auto fixed = by_kind.find(kind);
  double ramp = 0;
  if (auto r = s.kind_ramp.find(kind); r != s.kind_ramp.end() && r->second.bytes > 0) {
    ramp = (replay ? r->second.graph_seconds : r->second.seconds) * std::min(1.0, bytes / r->second.bytes);
  }
  return std::max(flops / rate + bytes / s.bandwidth, ramp) + (fixed != by_kind.end() ? fixed->second
                                                               : replay               ? s.graph_kernel_seconds
                                                                                      : s.kernel_seconds);
}

double CopySeconds(const Machine& machine, int from, int to, double bytes, LaunchMode mode) {
  if (from == to) return 0;
  const LinkSpec& l = machine.Link(from, to);
  double host_wait = 0;
  if (mode == LaunchMode::kEager) {
    const bool from_cpu = machine.devices[from].device_type() == DeviceType::kCPU;
    const bool to_cpu = machine.devices[to].device_type() == DeviceType::kCPU;
    if (from_cpu != to_cpu) host_wait = machine.specs[from_cpu ? to : from].host_copy_seconds;
  }
  const double latency = mode == LaunchMode::kGraphReplay ? l.graph_latency.value_or(l.latency) : l.latency;
  return latency + bytes / l.bandwidth + host_wait;
}

double IfSeconds(const Machine& machine, int device, LaunchMode mode) {
  return mode == LaunchMode::kEager ? machine.specs[device].if_seconds : 0;
}

double RunSeconds(const Machine& machine, bool uses_gpu) {
  return uses_gpu ? machine.run_seconds : machine.host_run_seconds.value_or(machine.run_seconds);
}

double CallSeconds(const Machine& machine, LaunchMode mode) {
  return mode == LaunchMode::kEager ? machine.call_seconds : 0;
}

}  // namespace vdev
