// OptimizePlacement under memory capacity: the liveness sweep, a program that fits only when split
// across two GPUs, programs that cannot fit (the fewest values named, with locations), and the
// optimiser's cost against an exhaustive search over every assignment of the classes whose plan
// fits (each swept for real).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/random_program.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"
#include "src/planner/internal/capacity.h"
#include "src/planner/internal/placement_model.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/optimize_placement.h"

namespace vdev::testing {
namespace {

using planner_internal::PlacementClasses;
using planner_internal::PlacementModel;
using ::testing::HasSubstr;

constexpr double kTensor = 1024.0 * 1024 * 4;  // f32[1024,1024]

// A CPU with room for everything and two GPUs with room for two 4 MiB tensors (not three); matmul
// runs only on the GPUs, and cuda:1 is the faster one.
Machine SmallGpus() {
  MachineBuilder b;
  b.AddDevice(VirtualDevice::ForDevice(DeviceType::kCPU, 0),
              {.memory_bytes = 1e12, .bandwidth = 100e9, .flops = {}, .default_flops = 1e12});
  for (int g = 0; g < 2; ++g) {
    b.AddDevice(
        VirtualDevice::ForDevice(DeviceType::kCUDA, g),
        {.memory_bytes = 2.5 * kTensor, .bandwidth = 1e12 * (g + 1), .flops = {}, .default_flops = 20e12 * (g + 1)});
  }
  b.AddLink(0, 1, {.bandwidth = 20e9, .latency = 5e-6});
  b.AddLink(0, 2, {.bandwidth = 20e9, .latency = 5e-6});
  b.AddLink(1, 2, {.bandwidth = 200e9, .latency = 5e-6});
  b.SupportOnly("matmul", {DeviceType::kCUDA});
  return *b.Build();
}

ir::Module Parse(const std::string& text) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(ir::VerifyModule(*module).ok());
  return *std::move(module);
}

// Two branches of two matmuls each, live at the same time: one GPU would need three tensors.
constexpr char kTwoBranches[] = R"(def @main(%x: f32[1024,1024], %y: f32[1024,1024]) -> f32[1024,1024] {
  %a = on_device(%x, ?, constrain_body=false, constrain_result=false)
  %a1 = matmul(%a, %a)
  %b = on_device(%y, ?, constrain_body=false, constrain_result=false)
  %b1 = matmul(%b, %b)
  %a2 = matmul(%a1, %a1)
  %b2 = matmul(%b1, %b1)
  %ra = on_device(%a2, ?, constrain_body=false, constrain_result=false)
  %rb = on_device(%b2, ?, constrain_body=false, constrain_result=false)
  %r = add(%ra, %rb)
  return %r
}
)";

TEST(OptimizeCapacityTest, LivenessCountsEachValueFromItsDefinitionToItsLastRead) {
  ir::Module module = Parse(kTwoBranches);
  std::vector<uint32_t> points = planner_internal::InputPoints(module);
  std::vector<planner_internal::LiveValue> values = planner_internal::LiveValues(module, points);
  auto find = [&](absl::string_view name) {
    for (const auto& v : values) {
      if (module.Name(module.ValueName(v.value)) == name) return v;
    }
    ADD_FAILURE() << name;
    return planner_internal::LiveValue{};
  };
  // %a1 is made at the 2nd binding (point 2) and last read by %a2 (the 5th, point 8).
  EXPECT_EQ(find("a1").begin, 2u);
  EXPECT_EQ(find("a1").end, 8u);
  EXPECT_EQ(find("a1").bytes, static_cast<int64_t>(kTensor));
  EXPECT_EQ(find("ra").source, ir::ValueRef::Binding(find("a2").value.index));  // a move reads its source
  EXPECT_EQ(find("r").end, 18u);                                                // returned: live to the end
  EXPECT_EQ(find("x").begin, 0u);
  EXPECT_EQ(find("x").end, 0u);  // read by %a only
}

TEST(OptimizeCapacityTest, AProgramThatFitsOnlyWhenSplitAcrossTwoGpus) {
  ir::Module module = Parse(kTwoBranches);
  Machine machine = SmallGpus();
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(module, machine, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->optimal);
  EXPECT_GE(plan->capacity_cuts, 1u);  // the first plan put both branches on cuda:1
  ASSERT_EQ(plan->peak_bytes.size(), 3u);
  for (int d = 0; d < 3; ++d) EXPECT_LE(plan->peak_bytes[d], machine.specs[d].memory_bytes) << d;
  const ir::Module& out = plan->plan.module;
  auto device_of = [&](absl::string_view name) {
    for (ir::BindingId b = 0; b < plan->plan.input_bindings; ++b) {
      if (out.Name(out.bindings[b].name) == name) return out.Device(plan->plan.binding_devices[b]).ToString();
    }
    return std::string("?");
  };
  EXPECT_NE(device_of("a2"), device_of("b2"));
  EXPECT_THAT(device_of("a2"), HasSubstr("cuda"));
  EXPECT_THAT(device_of("b2"), HasSubstr("cuda"));
  // With room for everything, both branches share the faster GPU and cost less.
  Machine roomy = machine;
  for (DeviceSpec& spec : roomy.specs) spec.memory_bytes = 1e12;
  absl::StatusOr<OptimizedPlan> unconstrained = OptimizePlacement(module, roomy, {});
  ASSERT_TRUE(unconstrained.ok()) << unconstrained.status();
  EXPECT_EQ(unconstrained->capacity_cuts, 0u);
  EXPECT_LT(unconstrained->cost.total, plan->cost.total);
}

// A pipeline of `layers` matmuls, each with its own f32[256,256] weight, behind free annotations.
std::string Pipeline(int layers) {
  std::string params = "%x: f32[256,256]";
  std::string body = "  %h0 = on_device(%x, ?, constrain_body=false, constrain_result=false)\n";
  for (int l = 0; l < layers; ++l) {
    absl::StrAppend(&params, ", %w", l, ": f32[256,256]");
    absl::StrAppend(&body, "  %m", l, " = matmul(%h", l, ", %w", l, ")\n  %h", l + 1, " = on_device(%m", l,
                    ", ?, constrain_body=false, constrain_result=false)\n");
  }
  return absl::StrCat("def @main(", params, ") -> f32[256,256] {\n", body, "  return %h", layers, "\n}\n");
}

// Twelve layers' weights on GPUs that hold eight tensors each: the layers split over both GPUs; the
// capacity search proves it optimal without Z3, at the cost Z3 alone proves.
TEST(OptimizeCapacityTest, APipelineSplitOverTwoGpusIsProvenOptimalByTheCapacitySearch) {
  ir::Module module = Parse(Pipeline(12));
  Machine machine = SmallGpus();
  for (int g = 1; g <= 2; ++g) machine.specs[g].memory_bytes = 8 * 256 * 256 * 4;
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(module, machine, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->optimal);
  EXPECT_EQ(plan->gap, 0);
  EXPECT_GE(plan->capacity_cuts, 1u);
  EXPECT_EQ(plan->z3_variables, 0u);
  for (int d = 0; d < 3; ++d) EXPECT_LE(plan->peak_bytes[d], machine.specs[d].memory_bytes) << d;
  EXPECT_GT(plan->peak_bytes[1], 0);
  EXPECT_GT(plan->peak_bytes[2], 0);
  OptimizeOptions z3_only;
  z3_only.capacity_search = false;
  absl::StatusOr<OptimizedPlan> by_z3 = OptimizePlacement(module, machine, z3_only);
  ASSERT_TRUE(by_z3.ok()) << by_z3.status();
  EXPECT_TRUE(by_z3->optimal);
  EXPECT_GT(by_z3->z3_variables, 0u);
  EXPECT_EQ(plan->model_cost, by_z3->model_cost);
}

TEST(OptimizeCapacityTest, AValueLargerThanEveryGpuIsAnErrorNamingIt) {
  ir::Module module = Parse(R"(def @main(%x: f32[2048,2048]) -> f32[2048,2048] {
  %0 = matmul(%x, %x)
  return %0
}
)");
  PlanError error;
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(module, SmallGpus(), {}, &error);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(plan.status())) << plan.status();
  EXPECT_THAT(error.message, HasSubstr("needs 16777216 bytes, more than any device"));
  EXPECT_TRUE(error.loc.valid());
  EXPECT_THAT(plan.status().message(), HasSubstr(absl::StrCat(error.loc.line, ":", error.loc.col, ": ")));
  // The fewest values that overflow: %x or %0 alone (16 MiB) exceeds 10 MiB.
  ASSERT_EQ(error.conflicts.size(), 1u);
  EXPECT_THAT(error.conflicts[0].what, HasSubstr("16777216 bytes"));
}

TEST(OptimizeCapacityTest, TwoAnnotatedValuesThatOverflowTogetherAreTheConflictingSet) {
  // Any two fit on cuda:0; three live at once (%x, %0 and %2 while exp runs) do not, and the
  // annotations keep them all there.
  ir::Module module = Parse(R"(def @main(%x: f32[1024,1024]) -> f32[1024,1024] {
  %0 = negative(%x)
  %1 = on_device(%0, cuda:0)
  %2 = exp(%x)
  %3 = on_device(%2, cuda:0)
  %4 = add(%1, %3)
  %5 = on_device(%4, cuda:0)
  return %5
}
)");
  Machine machine = SmallGpus();
  machine.specs[1].memory_bytes = 2.5 * kTensor;
  PlanError error;
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(module, machine, {}, &error);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(plan.status())) << plan.status();
  ASSERT_EQ(error.conflicts.size(), 3u) << error.message;
  std::vector<std::string> what;
  for (const ConflictAnnotation& c : error.conflicts) {
    what.push_back(c.what);
    EXPECT_EQ(c.device.ToString(), "cuda:0");
    EXPECT_TRUE(c.loc.valid());
  }
  EXPECT_THAT(what, ::testing::Each(HasSubstr("on_device(")));
}

// Elementwise ops and matmuls (GPU-only) over 256 KiB tensors between free boundaries, some
// annotated; at most 5 classes, so that every assignment can be planned.
std::string CapacityProgram() {
  return RandomProgram({.type = "f32[256,256]",
                        .binary_ops = {"matmul", "add"},
                        .unary_ops = {},
                        .devices = {"cpu:0", "cuda:0", "cuda:1"},
                        .max_bindings = 8,
                        .max_boundaries = 3,
                        .boundary_weight = 2});
}

RC_GTEST_PROP(OptimizeCapacityTest, CostEqualsAnExhaustiveSearchOverPlansThatFit, ()) {
  const std::string program = CapacityProgram();
  RC_LOG() << program;
  absl::StatusOr<ir::Module> module = ir::ParseModule(program);
  RC_ASSERT(module.ok());
  RC_ASSERT(ir::VerifyModule(*module).ok());
  Machine machine = SmallGpus();
  for (int g = 1; g <= 2; ++g) machine.specs[g].memory_bytes = *rc::gen::inRange(2, 7) * 256.0 * 1024;
  // The optimiser's classes and base model (no cuts).
  std::optional<PlacementModel> model;
  planner_internal::PlacementCallback record =
      [&](const ir::Module& m,
          const PlacementClasses& classes) -> absl::StatusOr<std::vector<std::optional<VirtualDevice>>> {
    absl::StatusOr<PlacementModel> built = planner_internal::BuildPlacementModel(m, classes, machine);
    if (built.ok()) model = *built;
    return std::vector<std::optional<VirtualDevice>>(classes.device.size());
  };
  (void)planner_internal::PlanWithPlacement(module->Clone(), PlanOptions{}, record, nullptr);
  absl::StatusOr<OptimizedPlan> plan = OptimizePlacement(*module, machine, {});
  if (!model) {  // op support against an annotation
    RC_ASSERT(absl::IsInvalidArgument(plan.status()));
    return;
  }
  // Every allowed assignment planned and swept for real.
  const std::vector<uint32_t> points = planner_internal::InputPoints(*module);
  const size_t n = model->unary.size();
  std::vector<int> device(n, 0);
  planner_internal::Cost best = planner_internal::kForbidden;
  while (true) {
    planner_internal::Cost cost = planner_internal::PlacementCost(*model, device);
    if (cost < best) {
      planner_internal::PlacementCallback force =
          [&](const ir::Module&,
              const PlacementClasses& classes) -> absl::StatusOr<std::vector<std::optional<VirtualDevice>>> {
        std::vector<std::optional<VirtualDevice>> chosen(classes.device.size());
        for (size_t c = 0; c < chosen.size(); ++c) chosen[c] = machine.devices[device[c]];
        return chosen;
      };
      absl::StatusOr<PlanResult> forced =
          planner_internal::PlanWithPlacement(module->Clone(), PlanOptions{}, force, nullptr);
      RC_ASSERT(forced.ok());
      std::vector<planner_internal::DevicePeak> peaks = planner_internal::PeakBytes(*forced, points, machine);
      bool fits = true;
      for (size_t d = 0; d < peaks.size(); ++d) fits &= peaks[d].bytes <= machine.specs[d].memory_bytes;
      if (fits) best = cost;
    }
    size_t k = 0;
    while (k < n && ++device[k] == model->num_devices) device[k++] = 0;
    if (k == n) break;
  }
  RC_CLASSIFY(best == planner_internal::kForbidden, "nothing fits");
  if (best == planner_internal::kForbidden) {
    RC_ASSERT(!plan.ok());
    RC_ASSERT(absl::IsInvalidArgument(plan.status()) || absl::IsUnimplemented(plan.status()));
    return;
  }
  // A known limit (optimize_placement.h): where copies the planner adds for a conflict overflow a
  // device, the cuts do not count them and the optimiser says so instead of returning a plan.
  RC_CLASSIFY(absl::IsUnimplemented(plan.status()), "overflow through uncounted conflict copies");
  if (absl::IsUnimplemented(plan.status())) return;
  if (!plan.ok()) RC_FAIL(absl::StrCat("best fitting cost ", best, " but ", plan.status().ToString()));
  RC_CLASSIFY(plan->capacity_cuts > 0, "re-solved with cuts");
  for (size_t d = 0; d < plan->peak_bytes.size(); ++d) RC_ASSERT(plan->peak_bytes[d] <= machine.specs[d].memory_bytes);
  planner_internal::Cost chosen = planner_internal::PlacementCost(*model, plan->class_devices);
  if (plan->optimal) {
    RC_ASSERT(chosen == best);
  } else {
    RC_ASSERT(chosen >= best);
  }
  // The reported bound is proven against the true capacity optimum, the gap 0 exactly when optimal.
  RC_ASSERT(plan->model_cost == static_cast<double>(chosen) * 1e-12);
  RC_ASSERT(plan->lower_bound <= static_cast<double>(best) * 1e-12);
  RC_ASSERT(plan->optimal == (plan->gap == 0));
}

}  // namespace
}  // namespace vdev::testing
