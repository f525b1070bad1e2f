// The machine's fixed time per op (`kernel_us`, `graph_kernel_us`) and per run (`run_us`): optional
// in a machine file (an old file loads and costs by the roofline alone), written back by MachineJson, counted once per op
// that runs in the plan's launch mode (replayed for a straight-line @main on GPUs, op by op
// otherwise, nothing for a view), and seen by the optimiser.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::testing {
namespace {

// cpu:0 and cuda:0..gpus-1, rates alike; `gpu_fields` is added to each GPU's entry.
std::string MachineText(int gpus, const std::string& gpu_fields) {
  std::string devices = R"({"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 1000, "default_tflops": 50})";
  for (int g = 0; g < gpus; ++g) {
    absl::StrAppend(&devices, R"(, {"device": "cuda:)", g,
                    R"(", "memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 50)", gpu_fields, "}");
  }
  return absl::StrCat(R"({"devices": [)", devices, R"(], "links": [
    {"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10},
    {"between": ["cuda", "cuda"], "bandwidth_gbs": 400, "latency_us": 3}]})");
}

TEST(PerOpTimeTest, AMachineFileWithoutPerOpTimesCostsByTheRooflineAlone) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(1, ""));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->specs[1].kernel_seconds, 0);
  EXPECT_EQ(m->specs[1].graph_kernel_seconds, 0);
  EXPECT_EQ(m->run_seconds, 0);
  // 4 MB at 1000 GB/s: 4 µs, in either mode.
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 4e6, ir::DType::kF32), 4e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 4e6, ir::DType::kF32, LaunchMode::kGraphReplay), 4e-6);
}

TEST(PerOpTimeTest, PerOpTimesAreReadWrittenBackAndAddedInTheirMode) {
  absl::StatusOr<Machine> only_eager = ParseMachineJson(MachineText(1, R"(, "kernel_us": 7)"));
  ASSERT_TRUE(only_eager.ok()) << only_eager.status();
  EXPECT_DOUBLE_EQ(only_eager->specs[1].graph_kernel_seconds, 7e-6);  // absent: the same as kernel_us
  std::string text = MachineText(2, R"(, "kernel_us": 7, "graph_kernel_us": 1.5)");
  text.insert(text.size() - 1, R"(, "run_us": 12)");
  absl::StatusOr<Machine> m = ParseMachineJson(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->run_seconds, 12e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 4e6, ir::DType::kF32), 4e-6 + 7e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 4e6, ir::DType::kF32, LaunchMode::kGraphReplay), 4e-6 + 1.5e-6);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  for (const char* bad : {R"(, "kernel_us": -1)", R"(, "graph_kernel_us": 2e6)", R"(, "kernel_us": "7")"}) {
    absl::StatusOr<Machine> refused = ParseMachineJson(MachineText(1, bad));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("kernel_us")) << bad;
  }
}

// `ops` adds of one element on cuda:0, and a reshape (a view) after them; `branch` puts them in
// both arms of an if (one runs, and one is counted).
std::string Chain(int ops, bool branch) {
  auto chain = [ops](const char* name) {
    std::string text;
    for (int i = 0; i < ops; ++i) {
      absl::StrAppend(&text, "  %", name, i, " = add(", i ? absl::StrCat("%", name, i - 1) : "%a", ", %a)\n");
    }
    return absl::StrCat(text, "  %", name, "v = reshape(%", name, ops - 1, ", [1, 1])\n  return %", name, "v\n");
  };
  const std::string head = absl::StrCat("config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n",
                                        "def @main(%a: f32[1]", branch ? ", %c: bool[]" : "", ") -> f32[1,1] {\n");
  if (!branch) return absl::StrCat(head, chain("x"), "}\n");
  return absl::StrCat(head, "  %r = if %c {\n", chain("x"), "  } else {\n", chain("y"), "  }\n  return %r\n}\n");
}

TEST(PerOpTimeTest, ACostCountsEachOpThatRunsInThePlansLaunchMode) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(1, R"(, "kernel_us": 7, "graph_kernel_us": 1.5)"));
  ASSERT_TRUE(m.ok()) << m.status();
  // 12 bytes per add at 1000 GB/s is 12 ps: the per-op times are nearly all of it.
  absl::StatusOr<PlanCost> replayed = CostOf(Chain(40, false), *m);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(replayed->launch, LaunchMode::kGraphReplay);
  EXPECT_NEAR(replayed->compute, 40 * 1.5e-6, 40 * 20e-12);
  absl::StatusOr<PlanCost> op_by_op = CostOf(Chain(40, true), *m);
  ASSERT_TRUE(op_by_op.ok()) << op_by_op.status();
  EXPECT_EQ(op_by_op->launch, LaunchMode::kEager);
  EXPECT_NEAR(op_by_op->compute, 40 * 7e-6, 40 * 20e-12);
}

// An op of a function called twice runs twice; a gather reads the rows it returns, not its table
// (16 MB here: 16 µs at 1000 GB/s, where the rows take picoseconds).
TEST(PerOpTimeTest, CallsCountEachTimeAndAGatherReadsItsRows) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(1, R"(, "kernel_us": 7, "graph_kernel_us": 1.5)"));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<PlanCost> called = CostOf(
      "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
      "def @f(%x: f32[1]) -> f32[1] {\n  %y = add(%x, %x)\n  return %y\n}\n"
      "def @main(%a: f32[1]) -> f32[1] {\n  %b = @f(%a)\n  %c = @f(%b)\n  return %c\n}\n",
      *m);
  ASSERT_TRUE(called.ok()) << called.status();
  EXPECT_EQ(called->launch, LaunchMode::kEager);
  EXPECT_NEAR(called->compute, 2 * 7e-6, 1e-9);
  absl::StatusOr<PlanCost> gather = CostOf(
      "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
      "def @main(%t: f32[1000000,4], %i: i32[2]) -> f32[2,4] {\n  %r = take(%t, %i, axis=0)\n  return %r\n}\n",
      *m);
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_NEAR(gather->compute, 1.5e-6, 1e-9);
}

// Twenty tiny adds between two free boundaries: with equal per-op times they stay with their
// operand on cuda:0 (a move costs two copies; the CPU is slower per op); when cuda:1 runs an op 5 µs
// faster, moving them there saves 100 µs for 6 µs of copies, and the optimiser's proven cost is the
// plan's.
TEST(PerOpTimeTest, TheOptimiserMovesManySmallOpsToTheDeviceThatRunsThemSooner) {
  std::string text =
      "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
      "def @main(%a: f32[1] on cuda:0) -> f32[1] {\n"
      "  %m = on_device(%a, ?, constrain_body=false, constrain_result=false)\n";
  for (int i = 0; i < 20; ++i)
    absl::StrAppend(&text, "  %", i, " = add(", i ? absl::StrCat("%", i - 1) : "%m", ", %m)\n");
  absl::StrAppend(&text,
                  "  %r = on_device(%19, ?, constrain_body=false, constrain_result=false)\n"
                  "  %s = add(%r, %a)\n  return %s\n}\n");
  absl::StatusOr<ir::Module> module = ir::ParseModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::VerifyModule(*module).ok());
  for (bool faster : {false, true}) {
    std::string machine_text = MachineText(2, R"(, "kernel_us": 6)");
    const std::string cpu = R"("default_tflops": 50})";  // the CPU's entry ends first: slower per op
    machine_text.replace(machine_text.find(cpu), cpu.size(), R"("default_tflops": 50, "kernel_us": 50})");
    if (faster) {
      const std::string second =
          R"("cuda:1", "memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 50, "kernel_us": 6)";
      machine_text.replace(machine_text.find(second), second.size(), absl::StrCat(second, R"(, "graph_kernel_us": 1)"));
    }
    absl::StatusOr<Machine> machine = ParseMachineJson(machine_text);
    ASSERT_TRUE(machine.ok()) << machine.status();
    absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, *machine, {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_TRUE(plan->optimal);
    EXPECT_EQ(plan->cost.launch, LaunchMode::kGraphReplay);
    EXPECT_NEAR(plan->model_cost, plan->cost.total, 1e-11);
    const std::string planned = ir::PrintModule(plan->plan.module);
    EXPECT_EQ(planned.find("cuda:1") != std::string::npos, faster) << planned;
    EXPECT_EQ(plan->plan.copies.size(), faster ? 2u : 0u) << planned;
  }
}

// Two probes of one GPU model: 2% apart in bandwidth, 20% in the per-op time, are one kind (their
// mean); 40% apart in the replayed per-op time, or with a dtype the other lacks, are not; the
// per-op time op by op (the host's dispatch as much as the device's) is averaged however far apart.
TEST(PerOpTimeTest, AlikeMeasuredDevicesAndLinksAverageOthersDoNot) {
  const DeviceSpec a{.memory_bytes = 80e9,
                     .bandwidth = 2900e9,
                     .flops = {{ir::DType::kBF16, 812e12}},
                     .default_flops = 51e12,
                     .kernel_seconds = 5e-6,
                     .graph_kernel_seconds = 1.5e-6};
  DeviceSpec b = a;
  b.bandwidth = 2842e9;
  b.kernel_seconds = 6e-6;
  std::optional<DeviceSpec> mean = AverageIfAlike({a, b}, 0.25);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(mean->bandwidth, 2871e9);
  EXPECT_DOUBLE_EQ(mean->kernel_seconds, 5.5e-6);
  EXPECT_DOUBLE_EQ(mean->flops.at(ir::DType::kBF16), 812e12);
  b.graph_kernel_seconds = 2.1e-6;
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  b.graph_kernel_seconds = a.graph_kernel_seconds;
  b.kernel_seconds = 8.4e-6;
  mean = AverageIfAlike({a, b}, 0.25);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(mean->kernel_seconds, 6.7e-6);
  b = a;
  b.flops[ir::DType::kF16] = 812e12;
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  std::optional<LinkSpec> link = AverageIfAlike(std::vector<LinkSpec>{{55e9, 4.7e-6}, {55e9, 5.5e-6}}, 0.25);
  ASSERT_TRUE(link.has_value());
  EXPECT_DOUBLE_EQ(link->latency, 5.1e-6);
  EXPECT_FALSE(AverageIfAlike(std::vector<LinkSpec>{{55e9, 4e-6}, {25e9, 4e-6}}, 0.25).has_value());
}

}  // namespace
}  // namespace vdev::testing
