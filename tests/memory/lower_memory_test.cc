// Tests of LowerMemory: explicit allocation, the IPC all-reduce rewrite, static planning per
// (device, scope), IPC storage lowering and the reports (vdev/memory/lower_memory.h, vdev/memory/dot.h).
#include "vdev/memory/lower_memory.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/dot.h"
#include "vdev/planner/plan_devices.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const PoolKey kGpuGlobal{{DeviceType::kCUDA, 0}, "global"};
const PoolKey kGpuIpc{{DeviceType::kCUDA, 0}, "ipc_memory"};
const PoolKey kCpuGlobal{{DeviceType::kCPU, 0}, "global"};

// A program planned and lowered, with lookups by binding name (names are unique per function).
struct Lowered {
  PlanResult planned;
  MemoryPlan memory;

  const ir::Module& module() const { return planned.module; }
  const FunctionMemory& main() const { return memory.functions.at(0); }

  ir::BindingId Binding(absl::string_view name) const {
    for (ir::BindingId b = 0; b < module().bindings.size(); ++b) {
      if (module().Name(module().bindings[b].name) == name) return b;
    }
    ADD_FAILURE() << "no binding %" << name;
    return ir::kNoBinding;
  }
  // Index of the tensor written by %name in main().tensors, -1 when it has none.
  int Tensor(absl::string_view name) const {
    const ir::BindingId b = Binding(name);
    for (size_t k = 0; k < main().tensors.size(); ++k) {
      if (main().tensors[k].binding == b) return static_cast<int>(k);
    }
    return -1;
  }
  int StorageOf(absl::string_view name) const {
    const int k = Tensor(name);
    return k < 0 ? -1 : main().tensors[k].storage;
  }
  const PoolKey& PoolOf(absl::string_view name) const { return main().plan.storages.at(StorageOf(name)).pool; }
  std::string Text() const { return ir::PrintModule(module()); }
};

Lowered Lower(absl::string_view text, const LowerOptions& options = {}) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(text, &diag);
  EXPECT_TRUE(module.ok()) << diag.loc.line << ":" << diag.loc.col << ": " << diag.message;
  absl::Status verified = ir::VerifyModule(*module, &diag);
  EXPECT_TRUE(verified.ok()) << diag.loc.line << ":" << diag.loc.col << ": " << diag.message;
  absl::StatusOr<PlanResult> planned = PlanDevices(std::move(*module), PlanOptions{});
  EXPECT_TRUE(planned.ok()) << planned.status();
  Lowered out{std::move(*planned), {}};
  absl::StatusOr<MemoryPlan> memory = LowerMemory(out.planned.module, out.planned.binding_devices, options);
  EXPECT_TRUE(memory.ok()) << memory.status();
  out.memory = std::move(*memory);
  // The lowered program is a valid program of the IR.
  EXPECT_TRUE(ir::VerifyModule(out.planned.module, &diag).ok()) << diag.message << "\n" << out.Text();
  return out;
}

// The number of tensors of main whose storage is in `pool`.
int TensorsIn(const Lowered& l, const PoolKey& pool) {
  int n = 0;
  for (const PlannedTensor& t : l.main().tensors) n += l.main().plan.storages[t.storage].pool == pool;
  return n;
}

TEST(IpcAllReduceTest, InputFromAnOpMovesThatAllocationToIpcMemory) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4], %w: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = matmul(%x, %w)
  %1: f32[4,4] = allreduce(%0, op=sum)
  return %1
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  const AllReduceInfo& ar = l.main().allreduces[0];
  EXPECT_TRUE(ar.ipc);
  EXPECT_EQ(ar.input_producer, l.Binding("0"));
  EXPECT_EQ(ar.strategy, AllReduceStrategy::kAuto);
  EXPECT_EQ(l.PoolOf("0"), kGpuIpc);
  EXPECT_EQ(l.PoolOf("1"), kGpuGlobal);
  EXPECT_EQ(TensorsIn(l, kGpuIpc), 1);
  const std::string text = l.Text();
  EXPECT_THAT(text, HasSubstr("= vdev.ipc.alloc_storage(64, 256, device=cuda:0/ipc_memory)"));
  EXPECT_THAT(text, HasSubstr("= matmul(%x, %w, out=%t0)"));
  EXPECT_THAT(text, HasSubstr("= vdev.allreduce(%0, op=sum, strategy=\"auto\", out=%t1)"));
  EXPECT_THAT(text, Not(HasSubstr("device_copy")));
}

TEST(IpcAllReduceTest, InputThroughAReshapeMovesTheProducersAllocation) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4], %w: f32[4,4]) -> f32[16] {
  %0: f32[4,4] = matmul(%x, %w)
  %1: f32[16] = reshape(%0, [16])
  %2: f32[16] = allreduce(%1, op=sum)
  return %2
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  EXPECT_TRUE(l.main().allreduces[0].ipc);
  EXPECT_EQ(l.main().allreduces[0].input_producer, l.Binding("0"));
  EXPECT_EQ(l.Tensor("1"), -1);  // a view allocates nothing
  EXPECT_EQ(l.PoolOf("0"), kGpuIpc);
  EXPECT_EQ(TensorsIn(l, kGpuIpc), 1);
}

TEST(IpcAllReduceTest, InputThroughAnAliasMovesTheProducersAllocation) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%x)
  %1 = %0
  %2: f32[4,4] = allreduce(%1, op=sum)
  return %2
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  EXPECT_TRUE(l.main().allreduces[0].ipc);
  EXPECT_EQ(l.main().allreduces[0].input_producer, l.Binding("0"));
  EXPECT_EQ(l.PoolOf("0"), kGpuIpc);
  EXPECT_EQ(TensorsIn(l, kGpuIpc), 1);
}

TEST(IpcAllReduceTest, InputFromAKernelCallMovesItsAllocationAndTheCallWritesIntoIt) {
  Lowered l = Lower(R"(
kernel @k(%a: f32[4,4]) -> f32[4,4]
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0 = @k(%x)
  %1: f32[4,4] = allreduce(%0, op=sum)
  return %1
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  EXPECT_TRUE(l.main().allreduces[0].ipc);
  EXPECT_EQ(l.PoolOf("0"), kGpuIpc);
  EXPECT_THAT(l.Text(), HasSubstr("%0: f32[4,4] = vdev.call_kernel(@k, %x, out=%t0)"));
}

TEST(IpcAllReduceTest, CallOfAFunctionStaysOnNccl) {
  Lowered l = Lower(R"(
def @f(%a: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%a)
  return %0
}
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0 = @f(%x)
  %1: f32[4,4] = allreduce(%0, op=sum)
  return %1
})");
  const FunctionMemory& main = l.memory.functions.at(1);
  ASSERT_EQ(main.allreduces.size(), 1u);
  EXPECT_FALSE(main.allreduces[0].ipc);
  EXPECT_THAT(main.allreduces[0].reason, HasSubstr("the result of a call"));
  ASSERT_EQ(main.unplanned.size(), 1u);
  EXPECT_THAT(main.unplanned[0].reason, HasSubstr("the callee allocates"));
}

TEST(IpcAllReduceTest, NonSumAllReduceStaysOnNccl) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%x)
  %1: f32[4,4] = allreduce(%0, op=max)
  return %1
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  const AllReduceInfo& ar = l.main().allreduces[0];
  EXPECT_FALSE(ar.ipc);
  EXPECT_EQ(ar.strategy, AllReduceStrategy::kNccl);
  EXPECT_THAT(ar.reason, HasSubstr("op=max"));
  EXPECT_EQ(TensorsIn(l, kGpuIpc), 0);
  EXPECT_THAT(l.Text(), HasSubstr("= allreduce(%0, op=max, out=%t1)"));
  EXPECT_THAT(l.Text(), Not(HasSubstr("ipc")));
}

TEST(IpcAllReduceTest, ParameterInputStaysOnNccl) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = allreduce(%x, op=sum)
  return %0
})");
  ASSERT_EQ(l.main().allreduces.size(), 1u);
  EXPECT_FALSE(l.main().allreduces[0].ipc);
  EXPECT_THAT(l.main().allreduces[0].reason, HasSubstr("parameter %x"));
  EXPECT_EQ(TensorsIn(l, kGpuIpc), 0);
}

TEST(IpcAllReduceTest, RewriteCanBeTurnedOffAndStrategyChosen) {
  const char* program = R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%x)
  %1: f32[4,4] = allreduce(%0, op=sum)
  return %1
})";
  LowerOptions off;
  off.ipc_allreduce = false;
  EXPECT_FALSE(Lower(program, off).main().allreduces[0].ipc);
  LowerOptions two_shot;
  two_shot.strategy = AllReduceStrategy::kTwoShot;
  EXPECT_THAT(Lower(program, two_shot).Text(), HasSubstr("strategy=\"two-shot\""));
  LowerOptions plan;
  plan.strategy = AllReduceStrategy::Plan("two_shot");
  Lowered lowered = Lower(program, plan);
  EXPECT_EQ(lowered.main().allreduces[0].strategy, AllReduceStrategy::Plan("two_shot"));
  EXPECT_THAT(lowered.Text(), HasSubstr("strategy=\"plan:two_shot\""));
}

TEST(IpcAllReduceTest, StrategyNamesParseIncludingChannelPlans) {
  EXPECT_EQ(AllReduceStrategyFromName("one-shot"), AllReduceStrategy(AllReduceStrategy::kOneShot));
  EXPECT_EQ(AllReduceStrategyFromName("plan:one_shot_ll"), AllReduceStrategy::Plan("one_shot_ll"));
  EXPECT_EQ(AllReduceStrategyName(AllReduceStrategy::Plan("x-1")), "plan:x-1");
  EXPECT_EQ(AllReduceStrategyFromName("plan:"), std::nullopt);
  EXPECT_EQ(AllReduceStrategyFromName("plan:Two Shot"), std::nullopt);
  EXPECT_EQ(AllReduceStrategyFromName("plan"), std::nullopt);
}

TEST(IpcAllReduceTest, TheOtherSpellingOfAStrategyIsAcceptedWithANote) {
  std::string note = "stale";
  EXPECT_EQ(AllReduceStrategyFromName("two-shot", &note), AllReduceStrategy(AllReduceStrategy::kTwoShot));
  EXPECT_EQ(note, "");
  EXPECT_EQ(AllReduceStrategyFromName("one_shot", &note), AllReduceStrategy(AllReduceStrategy::kOneShot));
  EXPECT_EQ(note, "note: all-reduce strategy 'one_shot' is spelled 'one-shot'");
  EXPECT_EQ(AllReduceStrategyFromName("plan:one-shot-ll", &note), AllReduceStrategy::Plan("one_shot_ll"));
  EXPECT_EQ(note, "note: all-reduce strategy 'plan:one-shot-ll' is spelled 'plan:one_shot_ll'");
  EXPECT_EQ(AllReduceStrategyFromName("one_shot_x", &note), std::nullopt);
}

TEST(StaticPlanTest, DisjointLifetimesInOnePoolShareStorage) {
  Lowered l = Lower(R"(
def @main(%x: f32[8,8]) -> f32[8,8] {
  %0: f32[8,8] = exp(%x)
  %1: f32[8,8] = exp(%0)
  %2: f32[8,8] = exp(%1)
  %3: f32[8,8] = exp(%2)
  return %3
})");
  EXPECT_EQ(l.StorageOf("0"), l.StorageOf("2"));
  EXPECT_NE(l.StorageOf("0"), l.StorageOf("1"));
  EXPECT_NE(l.StorageOf("3"), l.StorageOf("1"));  // %3 is the result: never reused
  EXPECT_EQ(l.main().plan.storages.size(), 3u);
}

TEST(StaticPlanTest, DisjointLifetimesInDifferentScopesNeverShare) {
  // %0 (ipc_memory) is dead when %2 (global) is written, and no global storage is free then: %2
  // must get a new storage rather than %0's.
  Lowered l = Lower(R"(
def @main(%x: f32[8,8]) -> f32[8,8] {
  %0: f32[8,8] = exp(%x)
  %1: f32[8,8] = allreduce(%0, op=sum)
  %2: f32[8,8] = exp(%1)
  %3: f32[8,8] = exp(%2)
  return %3
})");
  EXPECT_EQ(l.PoolOf("0"), kGpuIpc);
  EXPECT_EQ(l.PoolOf("2"), kGpuGlobal);
  EXPECT_NE(l.StorageOf("2"), l.StorageOf("0"));
  EXPECT_EQ(l.main().plan.PoolBytes(kGpuIpc), 256);
}

TEST(StaticPlanTest, ViewsKeepTheirSourceAlive) {
  // %1 views %0 and is read by %3, so %0's storage is not free for %2.
  Lowered l = Lower(R"(
def @main(%x: f32[8,8]) -> f32[64] {
  %0: f32[8,8] = exp(%x)
  %1: f32[64] = reshape(%0, [64])
  %2: f32[8,8] = exp(%x)
  %3: f32[64] = reshape(%2, [64])
  %4: f32[64] = add(%1, %3)
  return %4
})");
  EXPECT_NE(l.StorageOf("0"), l.StorageOf("2"));
}

TEST(StaticPlanTest, UsesInsideAnIfKeepOuterTensorsAliveAndItsResultsAreResults) {
  Lowered l = Lower(R"(
def @main(%c: bool[], %x: f32[8,8]) -> f32[8,8] {
  %0: f32[8,8] = exp(%x)
  %1: f32[8,8] = exp(%x)
  %2: f32[8,8] = exp(%0)
  %3: f32[8,8] = exp(%2)
  %4 = if %c {
    return %3
  } else {
    %9: f32[8,8] = exp(%1)
    return %9
  }
  return %4
})");
  // %1 is read inside the else arm, so %3 cannot take its storage; %3 may be returned, so it is a
  // result and shares with nothing.
  EXPECT_NE(l.StorageOf("3"), l.StorageOf("1"));
  EXPECT_EQ(l.main().plan.storages[l.StorageOf("3")].tensors.size(), 1u);
  ASSERT_EQ(l.main().unplanned.size(), 1u);
  EXPECT_EQ(l.main().unplanned[0].binding, l.Binding("4"));
}

TEST(StaticPlanTest, ResultsAreNeverReusedAndParametersNotAllocated) {
  Lowered l = Lower(R"(
def @main(%x: f32[8,8]) -> (f32[8,8], f32[8,8]) {
  %0: f32[8,8] = exp(%x)
  %1: f32[8,8] = exp(%x)
  %2: f32[8,8] = exp(%1)
  %3 = (%0, %2)
  return %3
})");
  // %1 dies at %2, but the results %0 and %2 never share with it or each other.
  EXPECT_EQ(l.main().plan.storages.size(), 3u);
  EXPECT_EQ(l.main().tensors.size(), 3u);  // %x is the caller's
}

TEST(StaticPlanTest, HandCheckedPoolSizes) {
  // cuda:0: %0 f32[16,16] (1024 B) live [0,1], %1 f16[10] (20 B) [1,3], %2 (1024 B) [2,3],
  // %3 (20 B) [3,4]; cpu:0: %4, the copy and the result (20 B).
  Lowered l = Lower(R"(
def @main(%x: f32[16,16] on cuda:0) -> f16[10] {
  %0: f32[16,16] = exp(%x)
  %1: f16[10] = summarize(%0)
  %2: f32[16,16] = exp(%x)
  %3: f16[10] = summarize2(%1, %2)
  %4: f16[10] = device_copy(%3, src=cuda:0, dst=cpu:0)
  return %4
})");
  // Storages on cuda:0/global in creation order: %0's (1024 B at 0), %1's (20 B at 1024),
  // %3's (20 B at 1280: 1044 rounded up to 256); %2 reuses %0's. cpu:0/global: the copy (20 B).
  EXPECT_EQ(l.StorageOf("2"), l.StorageOf("0"));
  const int64_t gpu_expected = 1280 + 2 * 10;
  EXPECT_EQ(l.main().plan.PoolBytes(kGpuGlobal), gpu_expected);
  EXPECT_EQ(l.main().plan.PoolBytes(kCpuGlobal), 2 * 10);
  EXPECT_EQ(l.main().plan.tensor_bytes, 1024 + 20 + 1024 + 20 + 20);
  EXPECT_EQ(l.memory.pool_bytes, gpu_expected + 20);
}

TEST(LowerMemoryTest, LoweredTextParsesAndPrintsTheSame) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4], %w: f32[4,4]) -> f32[16] {
  %0: f32[4,4] = matmul(%x, %w)
  %1: f32[16] = reshape(%0, [16])
  %2: f32[16] = allreduce(%1, op=sum)
  return %2
})");
  const std::string text = l.Text();
  Diagnostic diag;
  absl::StatusOr<ir::Module> again = ir::ParseModule(text, &diag);
  ASSERT_TRUE(again.ok()) << diag.message << "\n" << text;
  ASSERT_TRUE(ir::VerifyModule(*again, &diag).ok()) << diag.message;
  EXPECT_EQ(ir::PrintModule(*again), text);
}

TEST(LowerMemoryTest, NewNamesDoNotCollideWithTheProgramsNames) {
  Lowered l = Lower(R"(
def @main(%s0: f32[4,4]) -> f32[4,4] {
  %t0: f32[4,4] = exp(%s0)
  %t1: f32[4,4] = exp(%t0)
  return %t1
})");
  EXPECT_THAT(l.Text(), HasSubstr("%s0_1: storage = memory.alloc_storage(64, 256, device=cuda:0/global)"));
  EXPECT_THAT(l.Text(), HasSubstr("%t0: f32[4,4] = exp(%s0, out=%t0_1)"));
}

TEST(LowerMemoryTest, UnknownAndDynamicShapesAreReportedNotPlanned) {
  Lowered l = Lower(R"(
def @main(%x: f32[?,4]) -> f32[?,4] {
  %0: f32[?,4] = exp(%x)
  return %0
})");
  EXPECT_TRUE(l.main().tensors.empty());
  ASSERT_EQ(l.main().unplanned.size(), 1u);
  EXPECT_THAT(l.main().unplanned[0].reason, HasSubstr("dynamic"));
}

TEST(LowerMemoryTest, AlreadyLoweredInputIsRejected) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%x)
  return %0
})");
  absl::StatusOr<MemoryPlan> again = LowerMemory(l.planned.module, l.planned.binding_devices);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LowerIpcAllocStorageTest, KeepsTheExactSizeAndTheDevice) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> m = ir::ParseModule(R"(
def @main() -> storage {
  %s0: storage = memory.alloc_storage(100, 64, device=cuda:1/ipc_memory)
  %s1: storage = memory.alloc_storage(100, 64, device=cuda:1/global)
  return %s0
})",
                                                 &diag);
  ASSERT_TRUE(m.ok()) << diag.message;
  absl::StatusOr<int> n = LowerIpcAllocStorage(*m);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1);
  const std::string text = ir::PrintModule(*m);
  EXPECT_THAT(text, HasSubstr("%s0: storage = vdev.ipc.alloc_storage(100, 64, device=cuda:1/ipc_memory)"));
  EXPECT_THAT(text, HasSubstr("%s1: storage = memory.alloc_storage(100, 64, device=cuda:1/global)"));
}

TEST(LowerIpcAllocStorageTest, RejectsIpcMemoryOffCuda) {
  absl::StatusOr<ir::Module> m = ir::ParseModule(R"(
def @main() -> storage {
  %s0: storage = memory.alloc_storage(100, 64, device=cpu:0/ipc_memory)
  return %s0
})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(LowerIpcAllocStorage(*m).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MemoryReportTest, ListsPoolsTensorsAndAllReduces) {
  Lowered l = Lower(R"(
def @main(%x: f32[4,4]) -> f32[4,4] {
  %0: f32[4,4] = exp(%x)
  %1: f32[4,4] = allreduce(%0, op=sum)
  %2: f32[4,4] = allreduce(%1, op=max)
  return %2
})");
  nlohmann::json report = nlohmann::json::parse(MemoryReportJson(l.module(), l.memory));
  const nlohmann::json& main = report["functions"]["main"];
  EXPECT_EQ(main["pools"]["cuda:0/ipc_memory"]["bytes"], 64);
  EXPECT_EQ(main["pools"]["cuda:0/global"]["bytes"], 256 + 64);
  const std::string storage = main["tensors"]["0"]["storage"];
  EXPECT_EQ(main["storages"][storage]["allocator"], "vdev.ipc.alloc_storage");
  EXPECT_EQ(main["tensors"]["0"]["offset"], 0);
  EXPECT_EQ(main["allreduces"][0]["strategy"], "auto");
  EXPECT_EQ(main["allreduces"][0]["input"], "0");
  EXPECT_EQ(main["allreduces"][1]["strategy"], "nccl");
  EXPECT_THAT(main["allreduces"][1]["reason"].get<std::string>(), HasSubstr("op=max"));
  EXPECT_EQ(report["pool_bytes"], 64 + 256 + 64);
}

TEST(PlannedProgramGraphTest, CopiesAreRedEdgesBetweenDevices) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> m = ir::ParseModule(R"(
def @main(%a: f32[2], %b: f32[2]) -> f32[2] {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = exp(%1)
  return %2
})",
                                                 &diag);
  ASSERT_TRUE(m.ok()) << diag.message;
  ASSERT_TRUE(ir::VerifyModule(*m, &diag).ok()) << diag.message;
  absl::StatusOr<PlanResult> planned = PlanDevices(std::move(*m), PlanOptions{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  DotGraph g = PlannedProgramGraph(planned->module, planned->binding_devices);
  int copies = 0;
  for (const DotEdge& e : g.edges) {
    if (!e.is_copy) continue;
    ++copies;
    EXPECT_EQ(e.from, "main/%0");
    EXPECT_EQ(e.label, "cpu:0 -> cuda:0");
  }
  EXPECT_EQ(copies, 1);
  EXPECT_THAT(WriteDot(g), HasSubstr("color=red"));
}

TEST(LowerMemoryTest, DeeplyNestedIfsLowerWithoutRecursion) {
  // 10,000 nested ifs whose innermost arm returns the outer tensor %0.
  constexpr int kDepth = 10000;
  std::string text = "def @main(%c: bool[], %x: f32[2]) -> f32[2] {\n  %0: f32[2] = exp(%x)\n";
  for (int i = 1; i <= kDepth; ++i) text += "%r" + std::to_string(i) + " = if %c {\n";
  text += "return %0\n";
  for (int i = kDepth; i >= 1; --i) {
    text += "} else {\nreturn %x\n}\n";
    text += (i == 1 ? "  %2: f32[2] = exp(%x)\n  return %r1\n}\n" : "return %r" + std::to_string(i) + "\n");
  }
  Lowered l = Lower(text);
  // %0 is not read after the if, but the if may return it: it is a result, so %2 cannot reuse it.
  EXPECT_NE(l.StorageOf("2"), l.StorageOf("0"));
  EXPECT_EQ(l.main().plan.storages[l.StorageOf("0")].tensors.size(), 1u);
}

TEST(LowerMemoryTest, LongChainLowersWithoutRecursionIntoTwoStorages) {
  std::string text = "def @main(%x: f32[64]) -> f32[64] {\n  %v0: f32[64] = exp(%x)\n";
  constexpr int kChain = 200000;
  for (int i = 1; i < kChain; ++i) {
    text += "  %v" + std::to_string(i) + ": f32[64] = exp(%v" + std::to_string(i - 1) + ")\n";
  }
  text += "  return %v" + std::to_string(kChain - 1) + "\n}\n";
  Lowered l = Lower(text);
  // Two storages alternate along the chain; the result has its own.
  EXPECT_EQ(l.main().plan.storages.size(), 3u);
}

}  // namespace
}  // namespace vdev
