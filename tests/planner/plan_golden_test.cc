// Golden tests: an input program and the exact planned program.
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/plan_test_util.h"

namespace vdev::testing {
namespace {

void ExpectPlanned(const std::string& input, const std::string& planned) {
  PlanOutcome outcome = PlanText(input);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.text, planned);
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

// The text and the JSON report (its facts compared exactly) of one program.
void ExpectPlannedWithReport(const std::string& input, const std::string& planned, const std::string& facts) {
  ExpectPlanned(input, planned);
  PlanOutcome outcome = PlanText(input);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(ValidateReport(outcome.report), "");
  EXPECT_EQ(CompareFacts(nlohmann::json::parse(facts), outcome.report, /*exact=*/true), "");
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

// The add that on_device pins to cuda:0 runs there although %b, which it
// reads, is used first by an add pinned to cpu:0; %b is copied for it (the later use), with a
// warning, and the annotated computation never moves.
TEST(PlanGoldenTest, AnAnnotatedComputationIsNeverMoved) {
  ExpectPlannedWithReport(
      R"(def @main(%a: f32[2], %b: f32[2], %c: f32[2]) -> f32[2] {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%b, %c)
  %3 = on_device(%2, cuda:0)
  %4 = add(%1, %3)
  return %4
}
)",
      R"(def @main(%a: f32[2] on cpu:0, %b: f32[2] on cpu:0, %c: f32[2] on cuda:0) -> f32[2] on cuda:0 {
  %0 = add(%a, %b)
  %1 = device_copy(%0, src=cpu:0, dst=cuda:0)
  %b_copy = device_copy(%b, src=cpu:0, dst=cuda:0)
  %2 = add(%b_copy, %c)
  %4 = add(%1, %2)
  return %4
}
)",
      R"({"functions": {"main": {
     "params": {"a": "cpu:0", "b": "cpu:0", "c": "cuda:0"}, "result": "cuda:0",
     "bindings": {"0": "cpu:0", "2": "cuda:0", "4": "cuda:0"},
     "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "4"},
                {"of": "b", "src": "cpu:0", "dst": "cuda:0", "into": "2"}]}}})");
}

// Correction 2: one kernel called on two devices (each call where its first operand is); each call's
// operands and result are on the call's device with the kernel's scopes (an open one: the operand's
// own, here /global from both calls, so the printed signature has it); the signature lists scopes.
TEST(PlanGoldenTest, AKernelCallRunsOnOneDeviceWithTheSignaturesScopes) {
  ExpectPlannedWithReport(R"(kernel @k(%x: f32[2] on /shared, %y: f32[2]) -> f32[2] on /global
def @main(%a: f32[2] on cpu:0/global, %b: f32[2] on cuda:1/global) -> f32[2] on cuda:1/global {
  %0 = @k(%a, %b)
  %1 = @k(%b, %0)
  return %1
}
)",
                          R"(kernel @k(%x: f32[2] on /shared, %y: f32[2] on /global) -> f32[2] on /global

def @main(%a: f32[2] on cpu:0/global, %b: f32[2] on cuda:1/global) -> f32[2] on cuda:1/global {
  %a_copy = device_copy(%a, src=cpu:0/global, dst=cpu:0/shared)
  %b_copy = device_copy(%b, src=cuda:1/global, dst=cpu:0/global)
  %0 = @k(%a_copy, %b_copy)
  %b_copy_1 = device_copy(%b, src=cuda:1/global, dst=cuda:1/shared)
  %0_copy = device_copy(%0, src=cpu:0/global, dst=cuda:1/global)
  %1 = @k(%b_copy_1, %0_copy)
  return %1
}
)",
                          R"({"functions": {"main": {
     "params": {"a": "cpu:0/global", "b": "cuda:1/global"}, "result": "cuda:1/global",
     "bindings": {"0": "cpu:0/global", "1": "cuda:1/global"},
     "copies": [{"of": "a", "src": "cpu:0/global", "dst": "cpu:0/shared", "into": "0"},
                {"of": "b", "src": "cuda:1/global", "dst": "cpu:0/global", "into": "0"},
                {"of": "b", "src": "cuda:1/global", "dst": "cuda:1/shared", "into": "1"},
                {"of": "0", "src": "cpu:0/global", "dst": "cuda:1/global", "into": "1"}]}},
     "kernels": {"k": {"params": ["/shared", "/global"], "result": "/global"}}})");
}

TEST(PlanGoldenTest, AProjectionOfAnAnnotatedTupleKeepsItsNameOnTheTuplesDevice) {
  ExpectPlannedWithReport(R"(def @main(%a: f32[2], %b: f32[2]) -> f32[2] {
  %t = (%a, %b)
  %u = on_device(%t, cpu:0)
  %p = %u.0
  %q = negative(%p)
  return %q
}
)",
                          R"(def @main(%a: f32[2] on cpu:0, %b: f32[2] on cpu:0) -> f32[2] on cuda:0 {
  %t = (%a, %b)
  %p = %t.0
  %p_copy = device_copy(%p, src=cpu:0, dst=cuda:0)
  %q = negative(%p_copy)
  return %q
}
)",
                          R"({"functions": {"main": {
     "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cuda:0",
     "bindings": {"t": "cpu:0", "p": "cpu:0", "q": "cuda:0"},
     "copies": [{"of": "p", "src": "cpu:0", "dst": "cuda:0", "into": "q"}]}}})");
}

TEST(PlanGoldenTest, AKernelSignatureWithADeviceIsAnError) {
  PlanOutcome outcome = PlanText(R"(kernel @k(%x: f32[2] on cuda:0/shared) -> f32[2]
def @main(%a: f32[2]) -> f32[2] {
  %0 = @k(%a)
  return %0
}
)");
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.error.loc, (SourceLoc{1, 25}));
  EXPECT_NE(outcome.error.message.find("scopes only"), std::string::npos) << outcome.error.message;
}

}  // namespace
}  // namespace vdev::testing
