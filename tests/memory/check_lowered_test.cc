// Tests of the independent lowered-program checker and a property: LowerMemory's output on random
// programs always passes it (vdev/memory/lower_memory.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidcheck/gtest.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/plan_devices.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;

absl::Status CheckText(absl::string_view text) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> m = ir::ParseModule(text, &diag);
  if (!m.ok()) return m.status();
  if (absl::Status s = ir::VerifyModule(*m, &diag); !s.ok()) return s;
  return CheckLoweredMemory(*m);
}

constexpr absl::string_view kHeader = R"(def @main(%x: f32[4,4] on cuda:0) -> f32[4,4] on cuda:0 {
  %s0: storage = memory.alloc_storage(64, 256, device=cuda:0/global)
  %s1: storage = vdev.ipc.alloc_storage(64, 256, device=cuda:0/ipc_memory)
)";

TEST(CheckLoweredMemoryTest, AcceptsAValidPlan) {
  EXPECT_TRUE(CheckText(absl::StrCat(kHeader, R"(  %t0: f32[4,4] = memory.alloc_tensor(%s1, 0, [4, 4])
  %0: f32[4,4] = exp(%x, out=%t0)
  %t1: f32[4,4] = memory.alloc_tensor(%s0, 0, [4, 4])
  %1: f32[4,4] = vdev.allreduce(%0, op=sum, strategy="auto", out=%t1)
  return %1
})"))
                  .ok());
}

TEST(CheckLoweredMemoryTest, RejectsAReadAfterTheStorageWasHandedOn) {
  absl::Status s = CheckText(absl::StrCat(kHeader, R"(  %t0: f32[4,4] = memory.alloc_tensor(%s0, 0, [4, 4])
  %0: f32[4,4] = exp(%x, out=%t0)
  %1: f32[16] = reshape(%0, [16])
  %t1: f32[4,4] = memory.alloc_tensor(%s0, 0, [4, 4])
  %2: f32[4,4] = exp(%x, out=%t1)
  %3: f32[16] = exp(%1)
  return %2
})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("%s0 now holds %t1"));
}

TEST(CheckLoweredMemoryTest, RejectsAnAllReduceInputOutsideIpcMemory) {
  absl::Status s = CheckText(absl::StrCat(kHeader, R"(  %t0: f32[4,4] = memory.alloc_tensor(%s0, 0, [4, 4])
  %0: f32[4,4] = exp(%x, out=%t0)
  %t1: f32[4,4] = memory.alloc_tensor(%s1, 0, [4, 4])
  %1: f32[4,4] = vdev.allreduce(%0, op=sum, strategy="auto", out=%t1)
  return %1
})"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("not in ipc_memory"));
}

TEST(CheckLoweredMemoryTest, RejectsATensorLargerThanItsStorage) {
  absl::Status s = CheckText(absl::StrCat(kHeader, R"(  %t0: f32[4,8] = memory.alloc_tensor(%s0, 0, [4, 8])
  return %x
})"));
  EXPECT_THAT(s.message(), HasSubstr("does not fit"));
}

TEST(CheckLoweredMemoryTest, RejectsIpcScopeWithThePlainAllocator) {
  absl::Status s = CheckText(R"(def @main(%x: f32[4,4] on cuda:0) -> f32[4,4] on cuda:0 {
  %s0: storage = memory.alloc_storage(64, 256, device=cuda:0/ipc_memory)
  return %x
})");
  EXPECT_THAT(s.message(), HasSubstr("allocator does not match"));
}

// A random straight-line program over f32[4,4] values: ops, views, aliases, tuples and projections,
// sum and max all-reduces, returning one value or a pair.
std::string RandomProgram() {
  const int n = *rc::gen::inRange(1, 30);
  std::string text = "def @main(%p: f32[4,4]) {\n";
  std::vector<std::string> values = {"%p"};
  std::vector<std::string> tuples;
  auto pick = [&] { return values[*rc::gen::inRange<size_t>(0, values.size())]; };
  for (int i = 0; i < n; ++i) {
    const std::string name = absl::StrCat("%v", i);
    switch (*rc::gen::inRange(0, 8)) {
      case 0: absl::StrAppend(&text, "  ", name, ": f32[4,4] = exp(", pick(), ")\n"); break;
      case 1: absl::StrAppend(&text, "  ", name, ": f32[4,4] = add(", pick(), ", ", pick(), ")\n"); break;
      case 2: absl::StrAppend(&text, "  ", name, ": f32[4,4] = reshape(", pick(), ", [4, 4])\n"); break;
      case 3: absl::StrAppend(&text, "  ", name, " = ", pick(), "\n"); break;
      case 4: absl::StrAppend(&text, "  ", name, ": f32[4,4] = allreduce(", pick(), ", op=sum)\n"); break;
      case 5: absl::StrAppend(&text, "  ", name, ": f32[4,4] = allreduce(", pick(), ", op=max)\n"); break;
      case 6:
        absl::StrAppend(&text, "  ", name, " = (", pick(), ", ", pick(), ")\n");
        tuples.push_back(name);
        continue;
      default:
        if (tuples.empty()) {
          absl::StrAppend(&text, "  ", name, ": f32[4,4] = multiply(", pick(), ", ", pick(), ")\n");
        } else {
          absl::StrAppend(&text, "  ", name, " = ", tuples[*rc::gen::inRange<size_t>(0, tuples.size())], ".",
                          *rc::gen::inRange(0, 2), "\n");
        }
    }
    values.push_back(name);
  }
  if (*rc::gen::inRange(0, 3) == 0) {
    absl::StrAppend(&text, "  %r = (", pick(), ", ", pick(), ")\n  return %r\n}\n");
  } else {
    absl::StrAppend(&text, "  return ", pick(), "\n}\n");
  }
  return text;
}

RC_GTEST_PROP(LowerMemoryProperty, RandomProgramsLowerToCheckedPlansThatRoundTrip, ()) {
  const std::string text = RandomProgram();
  absl::StatusOr<ir::Module> m = ir::ParseModule(text);
  RC_ASSERT(m.ok());
  RC_ASSERT(ir::VerifyModule(*m).ok());
  absl::StatusOr<PlanResult> planned = PlanDevices(std::move(*m), PlanOptions{});
  RC_ASSERT(planned.ok());
  // LowerMemory re-checks its own output with CheckLoweredMemory.
  absl::StatusOr<MemoryPlan> memory = LowerMemory(planned->module, planned->binding_devices);
  RC_ASSERT(memory.ok());
  const FunctionMemory& fm = memory->functions.at(0);
  // Exactly the producers of rewritten all-reduce inputs are in ipc_memory.
  std::vector<ir::BindingId> ipc_producers;
  for (const AllReduceInfo& a : fm.allreduces) {
    RC_ASSERT(a.ipc == (a.op == "sum" && a.reason.empty()));
    if (a.ipc) ipc_producers.push_back(a.input_producer);
  }
  for (const PlannedTensor& t : fm.tensors) {
    const bool in_ipc = fm.plan.storages[t.storage].pool.scope == "ipc_memory";
    RC_ASSERT(in_ipc == (std::find(ipc_producers.begin(), ipc_producers.end(), t.binding) != ipc_producers.end()));
  }
  const std::string lowered = ir::PrintModule(planned->module);
  absl::StatusOr<ir::Module> again = ir::ParseModule(lowered);
  RC_ASSERT(again.ok());
  RC_ASSERT(ir::VerifyModule(*again).ok());
  RC_ASSERT(ir::PrintModule(*again) == lowered);
  RC_ASSERT(CheckLoweredMemory(*again).ok());
}

}  // namespace
}  // namespace vdev
