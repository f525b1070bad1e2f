// The machine's time per call of a global function (`call_us`) and per run of a plan whose ops and
// copies all stay on CPUs (`host_run_us`): optional in a machine file (an old file loads and costs
// as before), written back by MachineJson, a call counted once per time it runs op by op (never
// under replay), and a plan's `run` the host's where it uses no GPU.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"

namespace vdev::testing {
namespace {

// cpu:0 and cuda:0, with `top_fields` added to the file's top-level object.
std::string MachineText(const std::string& top_fields) {
  return absl::StrCat(R"({"devices": [
    {"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 1000, "default_tflops": 50, "kernel_us": 2},
    {"device": "cuda:0", "memory_gb": 80, "bandwidth_gbs": 1000, "default_tflops": 50, "kernel_us": 7}],
    "links": [{"between": ["cpu", "cuda"], "bandwidth_gbs": 50, "latency_us": 10}], "run_us": 18)",
                      top_fields, "}");
}

// @main calls @f twice, @f calls @g once: three ops and four calls per run; `device` is the default.
std::string NestedCalls(const std::string& device) {
  return absl::StrCat("config { targets = [llvm, cuda], default = ", device, ", host = cpu:0 }\n",
                      "def @g(%x: f32[1]) -> f32[1] {\n  %y = add(%x, %x)\n  return %y\n}\n"
                      "def @f(%x: f32[1]) -> f32[1] {\n  %y = @g(%x)\n  return %y\n}\n"
                      "def @main(%a: f32[1]) -> f32[1] {\n  %b = @f(%a)\n  %c = @f(%b)\n"
                      "  %d = add(%c, %a)\n  return %d\n}\n");
}

TEST(CallRunTimeTest, AMachineFileWithoutThemCostsAsBefore) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(""));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->call_seconds, 0);
  EXPECT_FALSE(m->host_run_seconds.has_value());
  EXPECT_DOUBLE_EQ(RunSeconds(*m, false), 18e-6);
  EXPECT_DOUBLE_EQ(RunSeconds(*m, true), 18e-6);
  absl::StatusOr<PlanCost> cost = CostOf(NestedCalls("cpu:0"), *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->calls, 0);
  EXPECT_DOUBLE_EQ(cost->run, 18e-6);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  EXPECT_EQ(MachineJson(*m).find("call_us"), std::string::npos);
  EXPECT_EQ(MachineJson(*m).find("host_run_us"), std::string::npos);
}

TEST(CallRunTimeTest, TheyAreReadWrittenBackAndRangeChecked) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "call_us": 3, "host_run_us": 4)"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->call_seconds, 3e-6);
  EXPECT_DOUBLE_EQ(m->host_run_seconds.value_or(-1), 4e-6);
  EXPECT_DOUBLE_EQ(RunSeconds(*m, false), 4e-6);
  EXPECT_DOUBLE_EQ(RunSeconds(*m, true), 18e-6);
  EXPECT_DOUBLE_EQ(CallSeconds(*m, LaunchMode::kEager), 3e-6);
  EXPECT_EQ(CallSeconds(*m, LaunchMode::kGraphReplay), 0);
  absl::StatusOr<Machine> again = ParseMachineJson(MachineJson(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *m);
  for (const char* key : {"call_us", "host_run_us"}) {
    for (const char* value : {"-1", "2e6", "\"3\""}) {
      absl::StatusOr<Machine> refused = ParseMachineJson(MachineText(absl::StrCat(", \"", key, "\": ", value)));
      ASSERT_FALSE(refused.ok()) << key << " " << value;
      EXPECT_THAT(refused.status().message(), ::testing::HasSubstr(key)) << value;
    }
  }
}

// Each call counts each time it runs, through the call graph (@g runs twice, inside @f); the ops
// count as before. The same program on the CPU alone pays the host's run time, on the GPU the GPU's.
TEST(CallRunTimeTest, APlanCountsEveryCallOpByOpAndTheRunTimeOfWhatItUses) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "call_us": 3, "host_run_us": 4)"));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<PlanCost> on_gpu = CostOf(NestedCalls("cuda:0"), *m);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
  EXPECT_EQ(on_gpu->launch, LaunchMode::kEager);
  EXPECT_NEAR(on_gpu->calls, 4 * 3e-6, 1e-12);
  EXPECT_NEAR(on_gpu->compute, 3 * 7e-6, 1e-9);  // 12 bytes per add: picoseconds over its fixed time
  EXPECT_DOUBLE_EQ(on_gpu->total, on_gpu->compute + on_gpu->copy + on_gpu->calls);
  EXPECT_DOUBLE_EQ(on_gpu->run, 18e-6);
  absl::StatusOr<PlanCost> on_cpu = CostOf(NestedCalls("cpu:0"), *m);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
  EXPECT_NEAR(on_cpu->calls, 4 * 3e-6, 1e-12);
  EXPECT_NEAR(on_cpu->compute, 3 * 2e-6, 1e-9);
  EXPECT_DOUBLE_EQ(on_cpu->run, 4e-6);
}

// Every op on the CPU, but its input copied from a GPU: the run pays the GPU's run time (it waits for
// the copy).
TEST(CallRunTimeTest, ACopyFromAGpuMakesItAGpuRun) {
  absl::StatusOr<Machine> m = ParseMachineJson(MachineText(R"(, "host_run_us": 4)"));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<PlanCost> cost = CostOf(
      "config { targets = [llvm, cuda], default = cpu:0, host = cpu:0 }\n"
      "def @main(%a: f32[1] on cuda:0) -> f32[1] {\n  %c = on_device(%a, cpu:0, constrain_body=false, "
      "constrain_result=true)\n  %b = add(%c, %c)\n  return %b\n}\n",
      *m);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_GT(cost->copy, 0);
  EXPECT_DOUBLE_EQ(cost->run, 18e-6);
}

}  // namespace
}  // namespace vdev::testing
