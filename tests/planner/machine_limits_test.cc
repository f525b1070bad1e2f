// Machine descriptions at scale and the optimiser at the limits of its arithmetic: links given per
// pair of device types, the stated limits on devices, links and text, identical devices searched
// once (the optimum equals the one found with every device kept), costs and byte counts that
// saturate or are refused, never negative.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/random_program.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"
#include "src/planner/internal/capacity_rounds.h"
#include "src/planner/internal/identical_devices.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"

namespace vdev::testing {
namespace {

std::string DeviceJson(const std::string& name, double memory_gb = 80) {
  return absl::StrCat(R"({"device": ")", name, R"(", "memory_gb": )", memory_gb,
                      R"(, "bandwidth_gbs": 1000, "default_tflops": 50})");
}

std::string MachineText(int gpus, const std::string& links) {
  std::string devices = DeviceJson("cpu:0", 1000);
  for (int g = 0; g < gpus; ++g) absl::StrAppend(&devices, ", ", DeviceJson(absl::StrCat("cuda:", g)));
  return absl::StrCat(R"({"devices": [)", devices, R"(], "links": [)", links, "]}");
}

constexpr char kTypeLinks[] =
    R"({"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10},
       {"between": ["cuda", "cuda"], "bandwidth_gbs": 400, "latency_us": 3})";

TEST(MachineLimitsTest, LinksGivenPerPairOfDeviceTypesCoverEveryPair) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(
      3, absl::StrCat(kTypeLinks, R"(, {"between": ["cuda:0", "cuda:2"], "bandwidth_gbs": 100, "latency_us": 1})")));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->Link(0, 3).bandwidth, 50e9);   // cpu:0 - cuda:2, by type
  EXPECT_EQ(m->Link(2, 3).bandwidth, 400e9);  // cuda:1 - cuda:2, by type
  EXPECT_EQ(m->Link(3, 1).bandwidth, 100e9);  // cuda:2 - cuda:0, its own link first
  EXPECT_EQ(m->Link(3, 1).latency, 1e-6);
  // Without the GPUs' type link, a pair of them is unlinked and named.
  absl::StatusOr<Machine> unlinked =
      ParseMachineJson(MachineText(3, R"({"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10},
            {"between": ["cuda:0", "cuda:2"], "bandwidth_gbs": 100, "latency_us": 1})"));
  ASSERT_FALSE(unlinked.ok());
  EXPECT_EQ(unlinked.status().message(), "machine: no link between cuda:0 and cuda:1");
  absl::StatusOr<Machine> mixed =
      ParseMachineJson(MachineText(1, R"({"between": ["cpu:0", "cuda"], "bandwidth_gbs": 50, "latency_us": 10})"));
  ASSERT_FALSE(mixed.ok());
  EXPECT_TRUE(absl::StrContains(mixed.status().message(), "between two devices or two device types"));
}

TEST(MachineLimitsTest, PairLinksAlikeBecomeTheirTypesLink) {
  // Every GPU pair listed, all alike but one: the types' link is the common one, and only the
  // pair that differs stays a pair link (so only its two GPUs are told apart).
  std::string links = R"({"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10})";
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      absl::StrAppend(&links, R"(, {"between": ["cuda:)", a, R"(", "cuda:)", b, R"("], "bandwidth_gbs": )",
                      a == 0 && b == 1 ? 900 : 400, R"(, "latency_us": 3})");
    }
  }
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(4, links));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->pair_links.size(), 1u);
  EXPECT_EQ(m->Link(1, 2).bandwidth, 900e9);  // cuda:0 - cuda:1
  EXPECT_EQ(m->Link(3, 4).bandwidth, 400e9);  // cuda:2 - cuda:3
  EXPECT_EQ(m->Link(0, 4).bandwidth, 50e9);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();  // written and read back: scaled by 1e9 and 1e-6 twice
  EXPECT_EQ(again->devices, m->devices);
  EXPECT_EQ(again->pair_links.size(), 1u);
  EXPECT_NEAR(again->Link(1, 2).bandwidth, 900e9, 1e-3);
  EXPECT_NEAR(again->Link(0, 4).latency, 10e-6, 1e-18);
}

TEST(MachineLimitsTest, DevicesLinksAndTextBeyondTheLimitsAreRefused) {
  // At the limit: a CPU and 8,191 GPUs build (linear in devices, so this is quick).
  absl::StatusOr<Machine> at_limit = ParseMachineJson(MachineText(kMaxMachineDevices - 1, kTypeLinks));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->devices.size(), static_cast<size_t>(kMaxMachineDevices));
  absl::StatusOr<Machine> over = ParseMachineJson(MachineText(kMaxMachineDevices, kTypeLinks));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "machine: 8193 devices, more than the 8192 a machine may have");
  MachineBuilder b;
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0), {.memory_bytes = 1, .bandwidth = 1, .default_flops = 1});
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, 0), {.memory_bytes = 1, .bandwidth = 1, .default_flops = 1});
  for (int k = 0; k <= kMaxMachineLinks; ++k) b.AddLink(0, 1, {.bandwidth = 1, .latency = 0});
  absl::StatusOr<Machine> too_many_links = b.Build();
  ASSERT_FALSE(too_many_links.ok());
  EXPECT_TRUE(absl::StrContains(too_many_links.status().message(), "524289 links given per device pair, more than"));
  std::string text(kMaxMachineJsonBytes + 1, ' ');
  absl::StatusOr<Machine> too_long = ParseMachineJson(text);
  ASSERT_FALSE(too_long.ok());
  EXPECT_TRUE(absl::StrContains(too_long.status().message(), "bytes of text, more than the 67108864"));
}

TEST(MachineLimitsTest, IdenticalDevicesThatNothingNamesAreKeptOnce) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(R"(def @main(%x: f32[8]) -> f32[8] {
  %0 = on_device(%x, cuda:5)
  %1 = negative(%0)
  return %1
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  const Machine machine = DefaultMachine(8);
  planner_internal::DeviceSubset one = planner_internal::KeepIdenticalDevices(*module, {}, machine, 1);
  EXPECT_FALSE(one.complete);
  // cpu:0 and cuda:0 (id 0: the default device's), cuda:5 (named), and cuda:1 for the other six.
  EXPECT_EQ(one.full_index, (std::vector<int>{0, 1, 2, 6}));
  EXPECT_EQ(one.machine.Link(2, 3), machine.Link(2, 6));
  planner_internal::DeviceSubset all = planner_internal::KeepIdenticalDevices(*module, {}, machine, 8);
  EXPECT_TRUE(all.complete);
  EXPECT_EQ(all.machine, machine);
}

// 1 CPU and `gpus` identical GPUs, their links given per type or per pair (the same machine).
Machine GpusLinked(int gpus, bool per_pair) {
  MachineBuilder b;
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0),
              {.memory_bytes = 1e12, .bandwidth = 100e9, .flops = {}, .default_flops = 1e12});
  for (int g = 0; g < gpus; ++g) {
    b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g),
                {.memory_bytes = 80e9, .bandwidth = 1e12, .flops = {}, .default_flops = 20e12});
  }
  const LinkSpec pcie{.bandwidth = 20e9, .latency = 5e-6}, nvlink{.bandwidth = 200e9, .latency = 2e-6};
  if (per_pair) {
    for (int a = 0; a <= gpus; ++a) {
      for (int c = a + 1; c <= gpus; ++c) b.AddLink(a, c, a == 0 ? pcie : nvlink);
    }
  } else {
    b.AddTypeLink(DeviceType::kCPU, DeviceType::kCUDA, pcie);
    b.AddTypeLink(DeviceType::kCUDA, DeviceType::kCUDA, nvlink);
  }
  b.SupportOnly("topk", {DeviceType::kCPU});
  return *b.Build();
}

RC_GTEST_PROP(MachineLimitsTest, IdenticalDevicesSearchedOnceFindTheSameOptimum, ()) {
  const std::string program = RandomProgram({.type = "f32[64,64]",
                                             .binary_ops = {"matmul", "add"},
                                             .unary_ops = {"topk"},
                                             .devices = {"cpu:0", "cuda:1", "cuda:3", "cuda"},
                                             .max_bindings = 15,
                                             .max_boundaries = 10,
                                             .boundary_weight = 3});
  RC_LOG() << program;
  absl::StatusOr<ir::Module> module = ir::ParseModule(program);
  RC_ASSERT(module.ok());
  RC_ASSERT(ir::VerifyModule(*module).ok());
  const int gpus = *rc::gen::inRange(4, 7);
  const Machine machine = GpusLinked(gpus, *rc::gen::arbitrary<bool>());
  absl::StatusOr<OptimizedPlan> once = OptimizePlacement(*module, machine, {});
  // The rounds on the whole machine: every GPU searched.
  PlanError error;
  absl::StatusOr<planner_internal::RoundsResult> whole =
      planner_internal::SolveWithCapacity(*module, machine, {}, &error, nullptr);
  RC_ASSERT(once.ok() == whole.ok());
  if (!once.ok()) return;
  RC_ASSERT(once->optimal && whole->optimized.optimal);
  RC_ASSERT(once->model_cost == whole->optimized.model_cost);
  RC_ASSERT(once->peak_bytes.size() == static_cast<size_t>(gpus + 1));
}

Machine CpuOnly(double bandwidth, double memory_bytes) {
  return *MachineBuilder()
              .AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0),
                         {.memory_bytes = memory_bytes, .bandwidth = bandwidth, .flops = {}, .default_flops = 1e12})
              .Build();
}

absl::StatusOr<OptimizedPlan> OptimizeText(const std::string& text, const Machine& machine) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(text);
  if (!module.ok()) return module.status();
  OptimizeOptions options;
  options.plan.default_device = VirtualDevice::ForDevice(DeviceType::kCPU, 0);
  return OptimizePlacement(*module, machine, options);
}

TEST(MachineLimitsTest, CostsNearTheRangeAreExactAndBeyondItRefused) {
  // 2^40 bytes or more at 1 GB/s: over 1,000 s, far below the cap of 2^61 ps / 3 terms (7.7e5 s).
  const std::string add = R"(def @main(%x: f32[274877906944]) -> f32[274877906944] {
  %0 = add(%x, %x)
  return %0
}
)";
  absl::StatusOr<OptimizedPlan> near = OptimizeText(add, CpuOnly(1e9, 1e13));
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_TRUE(near->optimal);
  EXPECT_GT(near->model_cost, 1000);
  // The model's whole picoseconds and the plan's cost in doubles agree (one op: within 1 ps).
  EXPECT_NEAR(near->model_cost, near->cost.total, 1e-12);
  EXPECT_EQ(near->lower_bound, near->model_cost);
  EXPECT_GE(near->cost.total, 0);
  // At 1 byte/s the same add takes 3.3e12 s: past the cap, refused, never a negative cost.
  absl::StatusOr<OptimizedPlan> beyond = OptimizeText(add, CpuOnly(1, 1e13));
  ASSERT_FALSE(beyond.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(beyond.status()));
  EXPECT_TRUE(absl::StrContains(beyond.status().message(), "beyond the times the optimiser counts exactly"))
      << beyond.status();
}

TEST(MachineLimitsTest, ValuesLargerThanAnyDeviceAreNamedNotCountedNegative) {
  // 2^62 bytes: counted as 2^61 (the capacity model's largest value), more than any device holds.
  const std::string huge = R"(def @main(%x: f32[1152921504606846976]) -> f32[1152921504606846976] {
  %0 = negative(%x)
  return %0
}
)";
  absl::StatusOr<OptimizedPlan> plan = OptimizeText(huge, CpuOnly(1e18, 1e30));
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(plan.status()));
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "2305843009213693952 bytes")) << plan.status();
}

}  // namespace
}  // namespace vdev::testing
