// Machine descriptions for cost-optimal placement (`vdev plan --optimize --machine FILE`): devices
// with memory capacity, compute rate per dtype, memory bandwidth and a fixed time per op; a link (bandwidth, latency) per
// device pair, given for the pair or for its two device types at once; per op, the device types that
// implement it. The file format is docs/machine.md's. A machine has at most kMaxMachineDevices
// devices and kMaxMachineLinks links given per pair; building one is linear in both.
//
// Example:
//   absl::StatusOr<Machine> m = MachineBuilder()
//       .AddDevice(*ParseVirtualDevice("cpu:0"), {.memory_bytes = 512e9, .bandwidth = 300e9,
//                                                .flops = {{ir::DType::kF32, 2e12}}, .default_flops = 1e12})
//       .AddDevice(*ParseVirtualDevice("cuda:0"), {.memory_bytes = 80e9, .bandwidth = 3.35e12,
//                                                 .flops = {{ir::DType::kF16, 989e12}}, .default_flops = 67e12})
//       .AddLink(0, 1, {.bandwidth = 64e9, .latency = 10e-6})     // or AddTypeLink(kCPU, kCUDA, …)
//       .SupportOnly("nn.topk", {DeviceType::kCPU})
//       .Build();
//   double s = OpSeconds(*m, 1, /*flops=*/2e9, /*bytes=*/4e6, ir::DType::kF16, LaunchMode::kEager,
//                        KernelKind::kMatmul);  // roofline + the matmul's fixed time
#ifndef VDEV_MACHINE_H_
#define VDEV_MACHINE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev {

// What an op's fixed time depends on most (the probe measures each through vdev's executor): a
// matmul-like op (a cuBLASLt call), a normalisation or reduction (a kernel that reduces a row), an
// elementwise op (one thread per element: activations, arithmetic, gathers, casts).
enum class KernelKind { kMatmul, kNorm, kElementwise };
inline constexpr KernelKind kKernelKinds[] = {KernelKind::kMatmul, KernelKind::kNorm, KernelKind::kElementwise};
absl::string_view KernelKindName(KernelKind kind);  // "matmul", "norm", "elementwise"
std::optional<KernelKind> KernelKindFromName(absl::string_view name);
// The kind of the op named `op` (an op vdev does not classify is elementwise).
KernelKind KernelKindOf(absl::string_view op);

// How much longer than its fixed time a kernel of one kind takes as it grows, before its roofline
// takes over: one of `bytes` (operands and result) took `seconds` op by op and `graph_seconds`
// replayed over the fixed time. A small kernel fills few of the GPU's cores, so it falls short of
// the roofline's bandwidth by far; a smaller one is taken to need proportionally less, a larger
// one at least as much (or its roofline, where longer: OpSeconds).
struct KernelRamp {
  double bytes = 0;
  double seconds = 0;
  double graph_seconds = 0;
  friend bool operator==(const KernelRamp&, const KernelRamp&) = default;
};

struct DeviceSpec {
  double memory_bytes = 0;            // capacity
  double bandwidth = 0;               // memory bandwidth, bytes/s
  std::map<ir::DType, double> flops;  // compute rate per dtype, flop/s
  double default_flops = 0;           // for dtypes not listed
  // The fixed time of one op call on the device, over its roofline, in seconds: what the executor
  // spends per op when it runs op by op (dispatch, launch, the smallest kernel), and per kernel of a
  // replayed CUDA graph. 0: the roofline alone (a machine file without them).
  double kernel_seconds = 0;
  double graph_kernel_seconds = 0;
  // The same per kind of op, where measured; a kind not listed takes kernel_seconds
  // (graph_kernel_seconds under replay).
  std::map<KernelKind, double> kind_kernel_seconds;
  std::map<KernelKind, double> kind_graph_kernel_seconds;
  // What a run op by op waits on the host, in seconds: at an `if` whose condition lives on this
  // device (its value read back: the device's queued work drained first), and, on a device other
  // than the CPU, at a copy between it and a CPU (waited for, since CPU kernels read host memory),
  // there over the link's latency and bandwidth. Under graph replay neither occurs.
  double if_seconds = 0;
  double host_copy_seconds = 0;
  // Per kind, where measured: how a kernel's time grows with its size (none: by the roofline alone).
  std::map<KernelKind, KernelRamp> kind_ramp;
  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// How the executor runs a program's ops: op by op, or (@main straight-line with every op on GPUs)
// as a captured CUDA graph, replayed (docs/executor.md, "CUDA graph capture rule").
enum class LaunchMode { kEager, kGraphReplay };

struct LinkSpec {
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // seconds per copy
  // Seconds per copy inside a replayed CUDA graph, where measured (else `latency`): a copy node
  // between two GPUs and the cross-GPU dependencies around it.
  std::optional<double> graph_latency;
  friend bool operator==(const LinkSpec&, const LinkSpec&) = default;
};

// The largest machine a description may give: the optimiser's set-up grows with the devices that
// the program can tell apart (identical devices count once, optimize_placement.h) and a file's size
// with its links. Beyond these, building or parsing a machine is an InvalidArgument error.
inline constexpr int kMaxMachineDevices = 8192;
inline constexpr int kMaxMachineLinks = 1 << 19;          // links given per device pair
inline constexpr size_t kMaxMachineJsonBytes = 64 << 20;  // the text of a machine file

struct Machine {
  std::vector<VirtualDevice> devices;  // each with a type and an id
  std::vector<DeviceSpec> specs;       // by device
  // The link of a device pair: its own (key PairKey(a, b)) where one is given, else the link of its
  // two device types (key TypePairKey). Every pair has one (Build checks).
  absl::flat_hash_map<uint64_t, LinkSpec> pair_links;
  absl::flat_hash_map<uint32_t, LinkSpec> type_links;
  // Ops implemented only on some device types; an op not listed runs everywhere.
  std::map<std::string, std::set<DeviceType>> support;
  // The fixed time of one run of a program, whatever it holds (enqueueing it, waiting for it to
  // finish), in seconds: no placement changes it, the predicted time of a run adds it.
  double run_seconds = 0;
  // The same for a run whose ops and copies all stay on CPUs, where measured (else run_seconds):
  // such a run waits for no GPU, and pays the host's own, smaller, fixed time.
  std::optional<double> host_run_seconds;
  // What the executor spends on one call of a global function when it runs a program op by op
  // (entering the function and leaving it), in seconds, over its ops; a replayed CUDA
  // graph has no calls. No placement changes it, so the optimiser leaves it out; a plan's cost
  // counts it once per call.
  double call_seconds = 0;
  // (device type, id) -> index into `devices`.
  absl::flat_hash_map<uint64_t, int> index;

  // The device matching `device`'s type and id, or nullopt.
  std::optional<int> Find(const VirtualDevice& device) const;
  bool Supports(absl::string_view op, int device) const;
  const LinkSpec& Link(int a, int b) const;
  static uint64_t PairKey(int a, int b);
  static uint32_t TypePairKey(DeviceType a, DeviceType b);
  friend bool operator==(const Machine&, const Machine&) = default;
};

class MachineBuilder {
 public:
  MachineBuilder& AddDevice(const VirtualDevice& device, const DeviceSpec& spec);
  // Both directions; a later link of the same pair replaces an earlier one.
  MachineBuilder& AddLink(int a, int b, const LinkSpec& link);
  // Every pair of a device of type `a` and one of type `b` (a pair's own link takes precedence).
  MachineBuilder& AddTypeLink(DeviceType a, DeviceType b, const LinkSpec& link);
  MachineBuilder& SupportOnly(const std::string& op, std::set<DeviceType> types);
  MachineBuilder& SetRunSeconds(double seconds);
  MachineBuilder& SetHostRunSeconds(double seconds);
  MachineBuilder& SetCallSeconds(double seconds);
  // InvalidArgument: more than kMaxMachineDevices devices or kMaxMachineLinks pair links, a device
  // without a type or id, a duplicate, a rate or bandwidth <= 0, a device pair without a link.
  absl::StatusOr<Machine> Build() const;

 private:
  Machine machine_;
  std::vector<std::pair<int, int>> pending_;
  std::vector<LinkSpec> pending_links_;
  std::vector<std::pair<uint32_t, LinkSpec>> pending_type_links_;
};

enum class GpuKind { kH100, kH200 };

// "1 CPU + N H100/H200 GPUs": cpu:0 and cuda:0..N-1 (datasheet rates: dense f16/bf16 tensor-core
// and f32 flops, HBM bandwidth and capacity), PCIe Gen5 between the CPU and each GPU, NVLink 4
// between GPUs. Ops are supported everywhere.
Machine DefaultMachine(int gpus, GpuKind kind = GpuKind::kH100);

// Measured devices (or links) whose every number lies within `tolerance` (relative) of each
// other's are one kind measured with noise: their mean, which a probe gives each of them so that
// the optimiser finds them identical (and moves no program between them for noise). nullopt when
// some differ more, or the specs list different dtypes or kinds. What a run op by op pays per op
// (kernel_seconds, kind_kernel_seconds) and waits (if_seconds, host_copy_seconds) is averaged but
// not compared: it measures the host (dispatch, the driver) as much as the device.
std::optional<DeviceSpec> AverageIfAlike(const std::vector<DeviceSpec>& specs, double tolerance);
std::optional<LinkSpec> AverageIfAlike(const std::vector<LinkSpec>& links, double tolerance);

// Parses docs/machine.md's JSON; errors carry the offending key, or for text that is not JSON
// the line and column.
absl::StatusOr<Machine> ParseMachineJson(absl::string_view text);

// docs/machine.md's JSON of `machine` (ParseMachineJson reads it back): every device, the
// links per pair of device types and per pair, the ops' support.
std::string MachineJson(const Machine& machine);

// An op call: the device's fixed time per op of `kind` in `mode` (kernel_seconds, or
// graph_kernel_seconds under replay, where the kind has none of its own) plus the longer of
// flops / rate(dtype) + bytes / bandwidth (the roofline's two limits, which real kernels overlap
// only in part: their sum is right where one dominates, at most 2x the max where they balance) and
// the kind's ramp (KernelRamp: its time scaled by bytes / its bytes, at most 1), in seconds.
double OpSeconds(const Machine& machine, int device, double flops, double bytes, ir::DType dtype,
                 LaunchMode mode = LaunchMode::kEager, KernelKind kind = KernelKind::kElementwise);
// A copy between two devices: latency (graph_latency under replay, where given) + bytes / link
// bandwidth, and op by op, where one is a CPU, the other's host_copy_seconds; 0 on the same device.
double CopySeconds(const Machine& machine, int from, int to, double bytes, LaunchMode mode = LaunchMode::kEager);
// An `if` whose condition is on `device`: its if_seconds op by op, 0 under replay.
double IfSeconds(const Machine& machine, int device, LaunchMode mode);
// The fixed time of one run: run_seconds, or where every op and copy stays on CPUs
// (`uses_gpu` false) host_run_seconds, where the machine has one.
double RunSeconds(const Machine& machine, bool uses_gpu);
// A call of a global function: call_seconds op by op, 0 under replay.
double CallSeconds(const Machine& machine, LaunchMode mode);

}  // namespace vdev

#endif  // VDEV_MACHINE_H_
