// The machine's optional ramp per kind of op (`ramp_by_kind`: how a small kernel's time grows with
// its size before its roofline takes over) and a link's latency inside a replayed graph
// (`graph_latency_us`): read, written back, absent in an old file (which then costs as before),
// costed where the executor pays them, averaged over alike probed devices and links.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/planner/machine.h"

namespace vdev::testing {
namespace {

// cpu:0, cuda:0 and cuda:1 (1000 GB/s, 50 TFLOP/s); `gpu_fields` added to both GPUs, `gpu_link` to
// their link.
std::string MachineText(const std::string& gpu_fields, const std::string& gpu_link) {
  const std::string gpu = absl::StrCat(R"("memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 50,
      "graph_kernel_us_by_kind": {"matmul": 2}, "kernel_us_by_kind": {"matmul": 7})",
                                       gpu_fields);
  return absl::StrCat(R"({"devices": [
    {"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 100, "default_tflops": 1},
    {"device": "cuda:0", )",
                      gpu, R"(}, {"device": "cuda:1", )", gpu, R"(}],
    "links": [{"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10},
              {"between": ["cuda", "cuda"], "bandwidth_gbs": 400, "latency_us": 3)",
                      gpu_link, "}]}");
}

constexpr char kRamp[] = R"(, "ramp_by_kind": {"matmul": {"bytes": 1e6, "us": 0.5, "graph_us": 3}})";

// A matmul moving 1 MB costs 1 µs by the roofline (1000 GB/s, flops 0), at the ramp's size 3 µs
// replayed: the ramp's 3 µs, over the fixed 2. Half the size, half the ramp; 4 MB (4 µs of
// roofline, more than the ramp), the roofline. Op by op the ramp is 0.5 µs, under the roofline.
TEST(KernelRampTest, ASmallKernelTakesItsRampAndALargeOneItsRoofline) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(kRamp, ""));
  ASSERT_TRUE(m.ok()) << m.status();
  auto replayed = [&](double bytes) {
    return OpSeconds(*m, 1, 0, bytes, ir::DType::kF32, LaunchMode::kGraphReplay, KernelKind::kMatmul);
  };
  EXPECT_NEAR(replayed(1e6), 2e-6 + 3e-6, 1e-15);
  EXPECT_NEAR(replayed(0.5e6), 2e-6 + 1.5e-6, 1e-15);
  EXPECT_NEAR(replayed(2e6), 2e-6 + 3e-6, 1e-15);  // at least the ramp's time
  EXPECT_NEAR(replayed(4e6), 2e-6 + 4e-6, 1e-15);  // the roofline, longer
  EXPECT_NEAR(OpSeconds(*m, 1, 0, 1e6, ir::DType::kF32, LaunchMode::kEager, KernelKind::kMatmul), 7e-6 + 1e-6, 1e-15);
  // A kind without a ramp, and a machine without any: the roofline plus the fixed time, as before.
  EXPECT_NEAR(OpSeconds(*m, 1, 0, 1e6, ir::DType::kF32, LaunchMode::kGraphReplay, KernelKind::kNorm), 1e-6, 1e-15);
  absl::StatusOr<Machine> old = ParseMachineJson(MachineText("", ""));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_NEAR(OpSeconds(*old, 1, 0, 1e6, ir::DType::kF32, LaunchMode::kGraphReplay, KernelKind::kMatmul), 3e-6, 1e-15);
  EXPECT_THAT(MachineJson(*old), ::testing::Not(::testing::HasSubstr("ramp_by_kind")));
  EXPECT_THAT(MachineJson(*old), ::testing::Not(::testing::HasSubstr("graph_latency_us")));
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  for (const char* bad : {R"(, "ramp_by_kind": {"gemm": {"bytes": 1, "us": 1, "graph_us": 1}})",
                          R"(, "ramp_by_kind": {"matmul": {"bytes": 0, "us": 1, "graph_us": 1}})",
                          R"(, "ramp_by_kind": {"matmul": {"bytes": 1, "us": -1, "graph_us": 1}})",
                          R"(, "ramp_by_kind": {"matmul": {"bytes": 1, "us": 1}})", R"(, "ramp_by_kind": [1])"}) {
    EXPECT_FALSE(ParseMachineJson(MachineText(bad, "")).ok()) << bad;
  }
}

// A copy of 400 bytes between the GPUs: 1 ns over the link's bandwidth, plus its latency: 3 µs op
// by op, the graph's 12 µs replayed (3 µs where the file gives none). The GPU pair's link, given
// by types, keeps its graph latency when written back as pair links fold into it.
TEST(KernelRampTest, ACopyBetweenGpusInAReplayedGraphTakesItsGraphLatency) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText("", R"(, "graph_latency_us": 12)"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NEAR(CopySeconds(*m, 1, 2, 400, LaunchMode::kEager), 3e-6 + 1e-9, 1e-15);
  EXPECT_NEAR(CopySeconds(*m, 1, 2, 400, LaunchMode::kGraphReplay), 12e-6 + 1e-9, 1e-15);
  absl::StatusOr<Machine> old = ParseMachineJson(MachineText("", ""));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_NEAR(CopySeconds(*old, 1, 2, 400, LaunchMode::kGraphReplay), 3e-6 + 1e-9, 1e-15);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  // Given per pair, alike pairs fold into their types' link, graph latency and all.
  MachineBuilder b;
  for (int d = 0; d < 3; ++d) b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, d), m->specs[1]);
  const LinkSpec pair{.bandwidth = 400e9, .latency = 3e-6, .graph_latency = 12e-6};
  b.AddLink(0, 1, pair).AddLink(0, 2, pair).AddLink(1, 2, pair);
  absl::StatusOr<Machine> folded = b.Build();
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_TRUE(folded->pair_links.empty());
  EXPECT_EQ(folded->Link(0, 2), pair);
  EXPECT_FALSE(ParseMachineJson(MachineText("", R"(, "graph_latency_us": -1)")).ok());
}

// Two probes of one GPU model: their ramps and graph latencies (a few µs each, as noisy as a time
// op by op) are averaged however far apart; a ramp or graph latency only one of them has, or ramps
// of different sizes, make them different devices or links.
TEST(KernelRampTest, AlikeProbesAverageTheirRampsAndGraphLatencies) {
  DeviceSpec a{.memory_bytes = 80e9, .bandwidth = 2900e9, .default_flops = 51e12};
  a.kind_ramp[KernelKind::kMatmul] = {.bytes = 1e6, .seconds = 1e-6, .graph_seconds = 2e-6};
  DeviceSpec b = a;
  b.kind_ramp[KernelKind::kMatmul] = {.bytes = 1e6, .seconds = 2e-6, .graph_seconds = 4e-6};
  std::optional<DeviceSpec> mean = AverageIfAlike({a, b}, 0.25);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(mean->kind_ramp.at(KernelKind::kMatmul).seconds, 1.5e-6);
  EXPECT_DOUBLE_EQ(mean->kind_ramp.at(KernelKind::kMatmul).graph_seconds, 3e-6);
  b.kind_ramp[KernelKind::kMatmul].bytes = 2e6;
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  b.kind_ramp.clear();
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  const LinkSpec x{.bandwidth = 400e9, .latency = 9e-6, .graph_latency = 10e-6};
  LinkSpec y = x;
  y.graph_latency = 20e-6;
  std::optional<LinkSpec> link = AverageIfAlike(std::vector<LinkSpec>{x, y}, 0.25);
  ASSERT_TRUE(link.has_value());
  EXPECT_DOUBLE_EQ(*link->graph_latency, 15e-6);
  y.graph_latency.reset();
  EXPECT_FALSE(AverageIfAlike(std::vector<LinkSpec>{x, y}, 0.25).has_value());
}

}  // namespace
}  // namespace vdev::testing
