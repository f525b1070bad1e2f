// The machine's optional fixed times per kind of op (`kernel_us_by_kind`, `graph_kernel_us_by_kind`)
// and its host waits (`if_us`, `host_copy_us`): read, written back, absent in an old file (which then
// costs as before), each added where the executor pays it; and an `if` costed by its larger arm.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "src/planner/internal/op_work.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::testing {
namespace {

// cpu:0 and cuda:0: 1000 GB/s and 50 TFLOP/s each (tiny ops cost picoseconds by the roofline), a
// CPU-GPU link of 10 µs; `cpu_fields` / `gpu_fields` are added to each device's entry.
std::string MachineText(const std::string& cpu_fields, const std::string& gpu_fields) {
  return absl::StrCat(R"({"devices": [
    {"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 1000, "default_tflops": 50)",
                      cpu_fields, R"(},
    {"device": "cuda:0", "memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 50)",
                      gpu_fields, R"(}],
    "links": [{"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10}]})");
}

constexpr char kKinds[] = R"(, "kernel_us": 6, "graph_kernel_us": 1.5,
    "kernel_us_by_kind": {"matmul": 9, "norm": 7},
    "graph_kernel_us_by_kind": {"matmul": 3, "norm": 2, "elementwise": 1.2},
    "if_us": 20, "host_copy_us": 8)";

constexpr char kConfig[] = "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n";
// Roofline time of the 4-element ops below: at most a few ps each.
constexpr double kRoofline = 1e-10;

TEST(KernelKindCostTest, OpsAreClassifiedByTheKernelTheyRun) {
  EXPECT_EQ(KernelKindOf("matmul"), KernelKind::kMatmul);
  EXPECT_EQ(KernelKindOf("attention"), KernelKind::kMatmul);
  EXPECT_EQ(KernelKindOf("rms_norm"), KernelKind::kNorm);
  EXPECT_EQ(KernelKindOf("softmax"), KernelKind::kNorm);
  EXPECT_EQ(KernelKindOf("add"), KernelKind::kElementwise);
  EXPECT_EQ(KernelKindOf("silu"), KernelKind::kElementwise);
  for (KernelKind kind : kKernelKinds) EXPECT_EQ(KernelKindFromName(KernelKindName(kind)), kind);
  EXPECT_EQ(KernelKindFromName("gemm"), std::nullopt);
}

// One table gives an op's kind and its flops: the ops counted by their contraction are the matmul
// kind, and ops the table does not list are elementwise and memory-bound.
TEST(KernelKindCostTest, TheOpTableGivesKindAndFlopsTogether) {
  using planner_internal::FlopRule;
  using planner_internal::OpWorkOf;
  for (const char* op : {"matmul", "nn.dense", "nn.matmul", "nn.batch_matmul"}) {
    EXPECT_EQ(OpWorkOf(op).kind, KernelKind::kMatmul) << op;
    EXPECT_EQ(OpWorkOf(op).flops, FlopRule::kContraction) << op;
  }
  EXPECT_EQ(OpWorkOf("attention").flops, FlopRule::kAttention);
  EXPECT_EQ(OpWorkOf("rms_norm").flops, FlopRule::kPerElement);
  EXPECT_EQ(OpWorkOf("silu_mul").kind, KernelKind::kElementwise);
  EXPECT_EQ(OpWorkOf("silu_mul").flops, FlopRule::kPerElement);
  EXPECT_EQ(OpWorkOf("sum").flops, FlopRule::kNone);
  EXPECT_EQ(OpWorkOf("add").kind, KernelKind::kElementwise);
  EXPECT_EQ(OpWorkOf("add").flops, FlopRule::kNone);
}

TEST(KernelKindCostTest, PerKindTimesAreReadWrittenBackAndFallBackToThePerOpTime) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText("", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  const DeviceSpec& gpu = m->specs[1];
  EXPECT_DOUBLE_EQ(gpu.if_seconds, 20e-6);
  EXPECT_DOUBLE_EQ(gpu.host_copy_seconds, 8e-6);
  // Op by op: matmul and norm their own; elementwise is not listed, so kernel_us.
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 0, ir::DType::kF32, LaunchMode::kEager, KernelKind::kMatmul), 9e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 0, ir::DType::kF32, LaunchMode::kEager, KernelKind::kNorm), 7e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 0, ir::DType::kF32, LaunchMode::kEager, KernelKind::kElementwise), 6e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 0, ir::DType::kF32, LaunchMode::kGraphReplay, KernelKind::kMatmul), 3e-6);
  EXPECT_DOUBLE_EQ(OpSeconds(*m, 1, 0, 0, ir::DType::kF32, LaunchMode::kGraphReplay, KernelKind::kElementwise), 1.2e-6);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  // A file without them writes none of them back.
  absl::StatusOr<Machine> old = ParseMachineJson(MachineText("", R"(, "kernel_us": 6)"));
  ASSERT_TRUE(old.ok()) << old.status();
  for (const char* key : {"by_kind", "if_us", "host_copy_us"}) {
    EXPECT_THAT(MachineJson(*old), ::testing::Not(::testing::HasSubstr(key)));
  }
  for (const char* bad : {R"(, "kernel_us_by_kind": {"gemm": 3})", R"(, "kernel_us_by_kind": {"matmul": -3})",
                          R"(, "graph_kernel_us_by_kind": [3])", R"(, "if_us": 2e6)", R"(, "host_copy_us": "8")"}) {
    absl::StatusOr<Machine> refused = ParseMachineJson(MachineText("", bad));
    EXPECT_FALSE(refused.ok()) << bad;
  }
}

// A matmul, a norm and an add on cuda:0, straight-line: replayed, each at its kind's time.
TEST(KernelKindCostTest, AReplayedPlanCostsEachOpAtItsKindsTime) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText("", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<PlanCost> cost = CostOf(absl::StrCat(kConfig,
                                                      "def @main(%a: f32[2,2], %g: f32[2]) -> f32[2,2] {\n"
                                                      "  %0 = matmul(%a, %a)\n  %1 = rms_norm(%0, %g)\n"
                                                      "  %2 = add(%1, %a)\n  return %2\n}\n"),
                                         *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->launch, LaunchMode::kGraphReplay);
  EXPECT_NEAR(cost->compute, 3e-6 + 2e-6 + 1.2e-6, 3 * kRoofline);
  EXPECT_EQ(cost->copy, 0);
}

// An `if` on cuda:0's condition: its larger arm (three adds, not the other's one) and the wait for
// the condition; with the condition on the CPU (the `if` and its arms then run there: one device
// for an `if` and its condition), the CPU's wait (none given: 0) and its per-op time, the GPU's.
TEST(KernelKindCostTest, AnIfCountsItsLargerArmAndTheWaitForItsCondition) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "kernel_us": 6)", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  for (const bool condition_on_cpu : {false, true}) {
    for (const bool larger_first : {true, false}) {
      const std::string three = "    %x = add(%a, %a)\n    %y = add(%x, %a)\n    %z = add(%y, %a)\n    return %z\n";
      const std::string one = "    %w = add(%a, %a)\n    return %w\n";
      const std::string text =
          absl::StrCat(kConfig, "def @main(%a: f32[4], %c: bool[]", condition_on_cpu ? " on cpu:0" : "",
                       ") -> f32[4] {\n  %r = if %c {\n", larger_first ? three : one, "  } else {\n",
                       larger_first ? one : three, "  }\n  return %r\n}\n");
      absl::StatusOr<PlanCost> cost = CostOf(text, *m);
      ASSERT_TRUE(cost.ok()) << cost.status();
      EXPECT_EQ(cost->launch, LaunchMode::kEager);
      const double wait = condition_on_cpu ? 0 : 20e-6;
      EXPECT_NEAR(cost->compute, 3 * 6e-6 + wait, 4 * kRoofline) << text;
    }
  }
}

// The optimiser sees the wait: three adds cost 18 µs on cuda:0 and 21 on the CPU, but an `if` on
// cuda:0 also waits 20 µs for its condition, so the `if` (its condition, arms and all) goes to the
// CPU, and the optimiser's cost is the plan's.
TEST(KernelKindCostTest, TheOptimiserMovesAnIfWhoseWaitCostsMoreThanItsOpsSave) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "kernel_us": 7)", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ir::Module> module =
      ir::ParseModule(absl::StrCat(kConfig, "def @main(%a: f32[4], %c: bool[]) -> f32[4] {\n  %r = if %c {\n",
                                   "    %x = add(%a, %a)\n    %y = add(%x, %a)\n    %z = add(%y, %a)\n    return %z\n",
                                   "  } else {\n    return %a\n  }\n  return %r\n}\n"));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::VerifyModule(*module).ok());
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, *m, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(ir::PrintModule(plan->plan.module), ::testing::HasSubstr("%c: bool[] on cpu:0"));
  EXPECT_NEAR(plan->cost.compute, 3 * 7e-6, 4 * kRoofline);
  EXPECT_NEAR(plan->model_cost, plan->cost.total, 1e-11);
}

// Arms inside arms: the outer `then` holds an `if` whose larger arm has two adds; the outer `else`
// one add. Outer then = its `if`'s wait + 2 adds, larger than the else's 1 add.
TEST(KernelKindCostTest, NestedIfsCountTheLargerArmAtEachLevel) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText("", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<PlanCost> cost = CostOf(absl::StrCat(kConfig,
                                                      "def @main(%a: f32[4], %c: bool[]) -> f32[4] {\n"
                                                      "  %r = if %c {\n"
                                                      "    %s = if %c {\n      %p = add(%a, %a)\n      return %p\n"
                                                      "    } else {\n      %q = add(%a, %a)\n"
                                                      "      %q2 = add(%q, %a)\n      return %q2\n    }\n"
                                                      "    return %s\n"
                                                      "  } else {\n    %w = add(%a, %a)\n    return %w\n  }\n"
                                                      "  return %r\n}\n"),
                                         *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_NEAR(cost->compute, 20e-6 + (20e-6 + 2 * 6e-6), 3 * kRoofline);
}

// 20,000 `if`s, each in the `then` arm of the one before, an add in every `else`: each `then` (a
// wait and what it holds) is the larger, so the run waits 20,000 times and adds once. The arms'
// costs are summed innermost first, iteratively (arms may nest as deep as a program has bindings).
TEST(KernelKindCostTest, TwentyThousandNestedArmsAreCosted) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText("", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  constexpr int kDepth = 20000;
  std::string text = absl::StrCat(kConfig, "def @main(%a: f32[4], %c: bool[]) -> f32[4] {\n");
  for (int i = 0; i < kDepth; ++i) absl::StrAppend(&text, "%r", i, " = if %c {\n");
  absl::StrAppend(&text, "%z = add(%a, %a)\nreturn %z\n");
  for (int i = kDepth - 1; i >= 0; --i) {
    absl::StrAppend(&text, "} else {\n%w", i, " = add(%a, %a)\nreturn %w", i, "\n}\nreturn %r", i, "\n");
  }
  absl::StrAppend(&text, "}\n");
  absl::StatusOr<PlanCost> cost = CostOf(text, *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_NEAR(cost->compute, kDepth * 20e-6 + 6e-6, 1e-9);
}

// A copy between the CPU and a GPU: its link, and op by op the GPU's host wait; between devices of
// one kind or under replay, no wait.
TEST(KernelKindCostTest, AHostCopyOpByOpAddsTheWait) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "host_copy_us": 100)", kKinds));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(CopySeconds(*m, 0, 1, 0), 10e-6 + 8e-6);  // the GPU's wait, not the CPU's
  EXPECT_DOUBLE_EQ(CopySeconds(*m, 1, 0, 0), 10e-6 + 8e-6);
  EXPECT_DOUBLE_EQ(CopySeconds(*m, 0, 1, 0, LaunchMode::kGraphReplay), 10e-6);
  absl::StatusOr<PlanCost> cost = CostOf(absl::StrCat(kConfig,
                                                      "def @main(%a: f32[4], %b: f32[4]) -> f32[4] {\n"
                                                      "  %0 = add(%a, %b)\n  %1 = on_device(%0, cpu:0)\n"
                                                      "  %2 = add(%1, %b)\n  %3 = on_device(%2, cuda:0)\n"
                                                      "  return %3\n}\n"),
                                         *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  ASSERT_EQ(cost->launch, LaunchMode::kEager);
  // Each copy 10 µs of link and 8 µs of wait, 16 bytes at 50 GB/s (0.32 ns); one or two copies by
  // where the planner put %a and %b, but each counted alike.
  const double per_copy = 10e-6 + 8e-6 + 16 / 50e9;
  const double copies = cost->copy / per_copy;
  EXPECT_NEAR(copies, std::round(copies), 1e-6) << cost->copy;
  EXPECT_GE(copies, 1);
}

// Two probes of one GPU: their per-kind times and waits average like the rest; a kind one lacks, or
// replayed times far apart, make them unlike; op by op times and waits (the host's) are only averaged.
TEST(KernelKindCostTest, AlikeDevicesAverageTheirPerKindTimes) {
  DeviceSpec a{.memory_bytes = 80e9, .bandwidth = 2900e9, .default_flops = 51e12, .kernel_seconds = 5e-6};
  a.kind_graph_kernel_seconds = {{KernelKind::kMatmul, 8e-6}, {KernelKind::kNorm, 5e-6}};
  a.kind_kernel_seconds = a.kind_graph_kernel_seconds;
  a.if_seconds = 20e-6;
  DeviceSpec b = a;
  b.kind_graph_kernel_seconds[KernelKind::kMatmul] = 9e-6;
  b.if_seconds = 22e-6;
  std::optional<DeviceSpec> mean = AverageIfAlike({a, b}, 0.25);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(mean->kind_graph_kernel_seconds.at(KernelKind::kMatmul), 8.5e-6);
  EXPECT_DOUBLE_EQ(mean->if_seconds, 21e-6);
  b.kind_graph_kernel_seconds.erase(KernelKind::kNorm);
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  b = a;
  b.kind_graph_kernel_seconds[KernelKind::kNorm] = 9e-6;  // 44% apart
  EXPECT_FALSE(AverageIfAlike({a, b}, 0.25).has_value());
  b = a;
  b.kind_kernel_seconds[KernelKind::kNorm] = 9e-6;  // op by op: the host's, averaged whatever the spread
  b.host_copy_seconds = 3 * a.host_copy_seconds + 4e-6;
  mean = AverageIfAlike({a, b}, 0.25);
  ASSERT_TRUE(mean.has_value());
  EXPECT_DOUBLE_EQ(mean->kind_kernel_seconds.at(KernelKind::kNorm), 7e-6);
  EXPECT_DOUBLE_EQ(mean->host_copy_seconds, (a.host_copy_seconds + b.host_copy_seconds) / 2);
}

}  // namespace
}  // namespace vdev::testing
