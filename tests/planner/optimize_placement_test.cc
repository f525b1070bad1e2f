// OptimizePlacement: on random small programs (at most 12 classes, 2-4 devices, a CPU-only op),
// the optimiser's cost equals an exhaustive search's over the same classes, every annotation
// holds, and the optimised program replans to itself; plus the CLI and the machine format.
#include "vdev/planner/optimize_placement.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "planner/random_program.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"
#include "src/planner/internal/placement_model.h"
#include "vdev/ir/builtin_ops.h"
#include "vdev/ir/ir_text.h"

namespace vdev::testing {
namespace {

using planner_internal::Cost;
using planner_internal::PlacementClasses;
using planner_internal::PlacementCost;
using planner_internal::PlacementModel;

Cost Exhaustive(const PlacementModel& model) {
  std::vector<int> device(model.unary.size(), 0);
  Cost best = planner_internal::kForbidden;
  while (true) {
    best = std::min(best, PlacementCost(model, device));
    size_t k = 0;
    while (k < device.size() && ++device[k] == model.num_devices) device[k++] = 0;
    if (k == device.size()) return best;
  }
}

// Ops between free boundaries (each boundary may start a class), some annotated, `topk` CPU-only;
// at most 12 classes: the parameters' and 10 boundaries'.
std::string GenerateProgram() {
  return RandomProgram({.type = "f32[64,64]",
                        .binary_ops = {"matmul", "add"},
                        .unary_ops = {"topk"},
                        .devices = {"cpu:0", "cuda:0", "cuda:1", "cuda"},
                        .max_bindings = 15,
                        .max_boundaries = 10,
                        .boundary_weight = 3});
}

Machine TestMachine(int gpus) {
  MachineBuilder b;
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0),
              {.memory_bytes = 1e12, .bandwidth = 100e9, .flops = {}, .default_flops = 1e12});
  for (int g = 0; g < gpus; ++g) {
    // Unequal GPUs, so that the choice between them matters.
    b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, g),
                {.memory_bytes = 80e9, .bandwidth = 1e12 * (g + 1), .flops = {}, .default_flops = 20e12 * (g + 1)});
  }
  for (int a = 0; a <= gpus; ++a) {
    for (int c = a + 1; c <= gpus; ++c) b.AddLink(a, c, {.bandwidth = a == 0 ? 20e9 : 200e9, .latency = 5e-6});
  }
  b.SupportOnly("topk", {DeviceType::kCPU});
  return *b.Build();
}

RC_GTEST_PROP(OptimizePlacementTest, CostEqualsAnExhaustiveSearchAndAnnotationsHold, ()) {
  const std::string program = GenerateProgram();
  RC_LOG() << program;
  const Machine machine = TestMachine(*rc::gen::inRange(1, 4));
  absl::StatusOr<ir::Module> module = ir::ParseModule(program);
  RC_ASSERT(module.ok());
  RC_ASSERT(ir::VerifyModule(*module).ok());
  // The optimiser's own classes, solved here both ways.
  bool infeasible = false;
  planner_internal::PlacementCallback check =
      [&](const ir::Module& m,
          const PlacementClasses& classes) -> absl::StatusOr<std::vector<std::optional<VirtualDevice>>> {
    absl::StatusOr<PlacementModel> model = planner_internal::BuildPlacementModel(m, classes, machine);
    if (!model.ok()) {
      infeasible = true;
      return model.status();
    }
    RC_ASSERT(model->unary.size() <= 12u);
    const Cost optimum = Exhaustive(*model);
    for (bool bound_first : {true, false}) {
      planner_internal::PlacementSolveOptions options;
      options.bound_first = bound_first;
      absl::StatusOr<planner_internal::PlacementSolution> solved = planner_internal::SolvePlacement(*model, options);
      RC_ASSERT(solved.ok());
      RC_ASSERT(solved->optimal);
      RC_ASSERT(solved->cost == optimum);
      RC_ASSERT(solved->lower_bound == optimum);
      RC_CLASSIFY(bound_first && solved->z3_variables > 0, "Z3 used after the bound");
    }
    return std::vector<std::optional<VirtualDevice>>(classes.device.size());
  };
  (void)planner_internal::PlanWithPlacement(module->Clone(), PlanOptions{}, check, nullptr);
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, machine, {});
  RC_CLASSIFY(infeasible, "infeasible");
  if (infeasible) {
    RC_ASSERT(!plan.ok());
    RC_ASSERT(absl::IsInvalidArgument(plan.status()));
    return;
  }
  RC_ASSERT(plan.ok());
  RC_ASSERT(plan->optimal);
  RC_ASSERT(plan->gap == 0);
  RC_ASSERT(plan->lower_bound == plan->model_cost);
  const ir::Module& out = plan->plan.module;
  // Every annotation holds (an unused one constrains nothing): an annotated op runs on a device its
  // annotation joins with.
  // (The programs are straight-line: a move read only by unused moves is unused too.)
  std::vector<bool> used(module->bindings.size(), false);
  for (const ir::Block& block : module->blocks) {
    if (block.result.is_local() && block.result.value.is_binding()) used[block.result.value.index] = true;
  }
  for (ir::BindingId b = module->bindings.size(); b-- > 0;) {
    const ir::Expr& e = module->bindings[b].expr;
    bool move = e.kind == ir::ExprKind::kOpCall && module->OpName(e) == "on_device";
    if (move && !used[b]) continue;
    for (const ir::Operand& o : module->Args(e)) {
      if (o.is_local() && o.value.is_binding()) used[o.value.index] = true;
    }
  }
  absl::flat_hash_set<ir::BindingId> first_annotation;
  for (ir::BindingId b = 0; b < module->bindings.size(); ++b) {
    if (!used[b]) continue;
    std::optional<ir::OnDeviceCall> on = ir::AsOnDevice(*module, module->bindings[b].expr);
    if (!on || !on->constrain_body || !on->value.is_local() || !on->value.value.is_binding()) continue;
    ir::BindingId x = on->value.value.index;
    const ir::Expr& annotated = module->bindings[x].expr;
    if (annotated.kind != ir::ExprKind::kOpCall || module->OpName(annotated) == "on_device") continue;
    // The first annotation of a computation places it; a later one gets a copy of its value.
    if (!first_annotation.insert(x).second) continue;
    RC_ASSERT(Join(out.Device(plan->plan.binding_devices[x]), module->Device(on->device)).has_value());
  }
  // CPU-only ops on the CPU, and the output is an ordinary plan.
  for (ir::BindingId b = 0; b < plan->plan.input_bindings; ++b) {
    const ir::Expr& e = out.bindings[b].expr;
    if (plan->plan.binding_replaced[b] || e.kind != ir::ExprKind::kOpCall || out.OpName(e) != "topk") continue;
    RC_ASSERT(out.Device(plan->plan.binding_devices[b]).device_type() == DeviceType::kCPU);
  }
  RC_ASSERT(CheckIdempotent(ir::PrintModule(out)).empty());
}

TEST(OptimizePlacementTest, CpuOnlyOpPullsItsNeighboursWhenCopiesCostMore) {
  // A small elementwise op next to a CPU-only one: copying to the GPU and back costs more than
  // running it on the CPU; the big matmul still goes to the GPU.
  absl::StatusOr<ir::Module> module =
      ir::ParseModule(R"(def @main(%x: f32[1024,1024], %w: f32[1024,1024]) -> f32[1024,1024] {
  %0 = matmul(%x, %w)
  %1 = on_device(%0, ?, constrain_body=false, constrain_result=false)
  %2 = topk(%1)
  %3 = on_device(%2, ?, constrain_body=false, constrain_result=false)
  %4 = negative(%3)
  return %4
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::VerifyModule(*module).ok());
  Machine machine = DefaultMachine(1);
  machine.support["topk"] = {DeviceType::kCPU};
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, machine, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->optimal);
  std::string text = ir::PrintModule(plan->plan.module);
  EXPECT_THAT(text, ::testing::HasSubstr("%x: f32[1024,1024] on cuda:0"));
  EXPECT_THAT(text, ::testing::HasSubstr("-> f32[1024,1024] on cpu:0"));  // negative stays on the CPU
  EXPECT_EQ(plan->plan.copies.size(), 1u);
  EXPECT_EQ(plan->cost.unsupported, 0);
  EXPECT_EQ(plan->default_cost.unsupported, 1);  // the default plan puts topk on cuda:0
}

// Every solve is "slow" at 0 s: the one progress line names the classes, the best plan so far,
// the lower bound and the gap (0: the bound proved it), and the result carries the same bound.
TEST(OptimizePlacementTest, TheProgressLineAndTheResultCarryTheBoundAndTheGap) {
  absl::StatusOr<ir::Module> module =
      ir::ParseModule(R"(def @main(%x: f32[1024,1024], %w: f32[1024,1024]) -> f32[1024,1024] {
  %0 = matmul(%x, %w)
  %1 = on_device(%0, ?, constrain_body=false, constrain_result=false)
  %2 = topk(%1)
  return %2
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  Machine machine = DefaultMachine(2);
  machine.support["topk"] = {DeviceType::kCPU};
  // The optimiser costs a straight-line @main as replayed, the plan (topk on the CPU) runs op by
  // op: with one per-op time for both, the model's cost is the plan's.
  for (DeviceSpec& spec : machine.specs) spec.graph_kernel_seconds = spec.kernel_seconds;
  std::vector<std::string> lines;
  OptimizeOptions options;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  options.progress_after_seconds = 0;
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, machine, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(lines[0], "optimising the placement of ")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], "best so far ")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], ", lower bound ")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], ", gap 0%")) << lines[0];
  EXPECT_TRUE(plan->optimal);
  EXPECT_EQ(plan->gap, 0);
  EXPECT_GT(plan->lower_bound, 0);
  EXPECT_EQ(plan->lower_bound, plan->model_cost);
  // One copy, no value copied twice: the model's cost is the program's, each term rounded to a ps.
  EXPECT_NEAR(plan->model_cost, plan->cost.total, 1e-11);
}

TEST(OptimizePlacementTest, CpuOnlyOpAgainstAGpuAnnotationIsAnErrorNamingBoth) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(R"(def @main(%x: f32[4]) -> f32[4] {
  %0 = topk(%x)
  %1 = on_device(%0, cuda:0)
  return %1
}
)");
  ASSERT_TRUE(module.ok() && ir::VerifyModule(*module).ok());
  Machine machine = DefaultMachine(1);
  machine.support["topk"] = {DeviceType::kCPU};
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, machine, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(plan.status()));
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("topk at 2:8"));
  EXPECT_THAT(plan.status().message(), ::testing::HasSubstr("on_device(%0, cuda:0) at 3:"));
}

TEST(OptimizePlacementTest, MachineJsonMatchesTheBuilder) {
  absl::StatusOr<Machine> parsed = ParseMachineJson(R"({
    "devices": [
      {"device": "cpu:0", "memory_gb": 1, "bandwidth_gbs": 100, "default_tflops": 1, "tflops": {"f32": 2}},
      {"device": "cuda:0", "memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 20}],
    "links": [{"between": ["cpu:0", "cuda:0"], "bandwidth_gbs": 20, "latency_us": 5}],
    "ops": {"topk": ["cpu"]}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<Machine> built =
      MachineBuilder()
          .AddDevice(
              VirtualDevice::ForDevice(DeviceType::kCPU, 0),
              {.memory_bytes = 1e9, .bandwidth = 100e9, .flops = {{ir::DType::kF32, 2e12}}, .default_flops = 1e12})
          .AddDevice(VirtualDevice::ForDevice(DeviceType::kCUDA, 0),
                     {.memory_bytes = 80e9, .bandwidth = 1000e9, .flops = {}, .default_flops = 20e12})
          .AddLink(0, 1, {.bandwidth = 20 * 1e9, .latency = 5 * 1e-6})  // the file's units
          .SupportOnly("topk", {DeviceType::kCPU})
          .Build();
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(*parsed, *built);
}

TEST(OptimizePlacementTest, MachineTextThatIsNotJsonIsPlacedByLineAndColumn) {
  absl::StatusOr<Machine> parsed = ParseMachineJson("{\"devices\": [\n  {\"device\": \"cpu:0\",}\n]}");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()),
              ::testing::HasSubstr("machine: not JSON at line 2, column 22: syntax error"));
  parsed = ParseMachineJson("{\"devices\": 3e333}");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(parsed.status().message()), "machine: not JSON: number overflow parsing '3e333'");
}

TEST(OptimizePlacementTest, BadMachineDescriptionsAreErrors) {
  EXPECT_FALSE(ParseMachineJson("[]").ok());
  EXPECT_FALSE(ParseMachineJson(R"({"devices": [{"device": "cuda", "memory_gb": 1, "bandwidth_gbs": 1,
                                   "default_tflops": 1}]})")
                   .ok());  // no id
  EXPECT_FALSE(ParseMachineJson(R"({"devices": [
      {"device": "cpu:0", "memory_gb": 1, "bandwidth_gbs": 1, "default_tflops": 1},
      {"device": "cuda:0", "memory_gb": 1, "bandwidth_gbs": 1, "default_tflops": 1}]})")
                   .ok());  // no link
  EXPECT_FALSE(ParseMachineJson(R"({"devices": [{"device": "cpu:0", "memory_gb": 1, "bandwidth_gbs": 0,
                                   "default_tflops": 1}]})")
                   .ok());
}

}  // namespace
}  // namespace vdev::testing
