// Golden tests: an input program and the exact planned program.
#include <string>

#include "gtest/gtest.h"
#include "planner/plan_test_util.h"

namespace vdev::testing {
namespace {

void ExpectPlanned(const std::string& input, const std::string& planned) {
  PlanOutcome outcome = PlanText(input);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.text, planned);
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

TEST(PlanGoldenTest, SpecExample) {
  ExpectPlanned(R"(config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) -> f32[5,7] {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%c, %d)
  %3 = subtract(%1, %2)
  return %3
}
)",
                R"(config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%a: f32[5,7] on cpu:0, %b: f32[5,7] on cpu:0, %c: f32[5,7] on cuda:0, %d: f32[5,7] on cuda:0) -> f32[5,7] on cuda:0 {
  %0 = add(%a, %b)
  %1 = device_copy(%0, src=cpu:0, dst=cuda:0)
  %2 = add(%c, %d)
  %3 = subtract(%1, %2)
  return %3
}
)");
}

TEST(PlanGoldenTest, ConflictCopyIsAnExplicitBinding) {
  ExpectPlanned(R"(def @main(%a: f32[2], %b: f32[2]) -> f32[2] {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = on_device(%0, cuda:0)
  %3 = add(%1, %2)
  return %3
}
)",
                R"(def @main(%a: f32[2] on cpu:0, %b: f32[2] on cpu:0) -> f32[2] on cuda:0 {
  %0 = add(%a, %b)
  %1 = device_copy(%0, src=cpu:0, dst=cuda:0)
  %0_copy = device_copy(%0, src=cpu:0, dst=cuda:0)
  %3 = add(%1, %0_copy)
  return %3
}
)");
}

TEST(PlanGoldenTest, UninterpretedAttributesOfCopiesAreKept) {
  ExpectPlanned(R"(def @main(%a: f32[2] on cpu:0) -> f32[2] on cuda:0 {
  %s = memory.alloc_storage(8, 64, device=cuda:0)
  %t = memory.alloc_tensor(%s, 0, [2])
  %1 = device_copy(%a, src=cpu:0, dst=cuda:0, out=%t, note="kept")
  return %1
}
)",
                R"(def @main(%a: f32[2] on cpu:0) -> f32[2] on cuda:0 {
  %s = memory.alloc_storage(8, 64, device=cuda:0)
  %t = memory.alloc_tensor(%s, 0, [2])
  %1 = device_copy(%a, src=cpu:0, dst=cuda:0, out=%t, note="kept")
  return %1
}
)");
}

TEST(PlanGoldenTest, UselessAnnotationsDisappear) {
  ExpectPlanned(R"(def @main(%a: f32[2]) -> f32[2] {
  %0 = on_device(%a, cuda:0)
  %1 = negative(%0)
  %2 = on_device(%1, cuda:0)
  return %2
}
)",
                R"(def @main(%a: f32[2] on cuda:0) -> f32[2] on cuda:0 {
  %1 = negative(%a)
  return %1
}
)");
}

}  // namespace
}  // namespace vdev::testing
