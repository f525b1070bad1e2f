// PlanDevices behaviours, translated from what TVM's PlanDevices tests pin down, restated in the
// vdev IR: each test lists every parameter, result and binding device and the exact multiset of
// copies, and checks that planning the planned program changes nothing.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "vdev/ir/ir_text.h"

namespace vdev::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Plans `program`, checks the facts exactly, validates the report and replans the output.
void ExpectPlan(const std::string& program, const std::string& facts, size_t warnings = 0) {
  PlanOutcome outcome = PlanText(program);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(ValidateReport(outcome.report), "");
  EXPECT_EQ(CompareFacts(json::parse(facts), outcome.report, /*exact=*/true), "") << outcome.text;
  EXPECT_EQ(outcome.warnings.size(), warnings);
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

// For programs whose report or printed text would be too large to check (PlanText prints both).
absl::StatusOr<PlanResult> ParseVerifyAndPlan(const std::string& text) {
  absl::StatusOr<ir::Module> module = ir::ParseModule(text);
  if (!module.ok()) return module.status();
  if (absl::Status verified = ir::VerifyModule(*module); !verified.ok()) return verified;
  return PlanDevices(*std::move(module), PlanOptions{});
}

constexpr char kConfig[] = "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n";

TEST(PlanDevicesTest, PlainProgramDefaultsEverything) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = add(%c, %d)
  %2 = subtract(%0, %1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cuda:0", "b": "cuda:0", "c": "cuda:0", "d": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cuda:0", "1": "cuda:0", "2": "cuda:0"}, "copies": []}}})");
}

TEST(PlanDevicesTest, AnnotatedSubexpressionIsCopiedToItsConsumer) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%c, %d)
  %3 = subtract(%1, %2)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0", "c": "cuda:0", "d": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "2": "cuda:0", "3": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"}]}}})");
}

TEST(PlanDevicesTest, NestedAnnotationsMakeOneCopy) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = on_device(%1, cuda:0)
  %3 = negative(%2)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "3": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"}]}}})");
}

TEST(PlanDevicesTest, OneAnnotationUsedTwiceSharesItsCopy) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%1, %c)
  %3 = multiply(%1, %2)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0", "c": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "2": "cuda:0", "3": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "2"}]}}})");
}

TEST(PlanDevicesTest, TwoAnnotationsOfOneValueMakeTwoCopies) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = on_device(%0, cpu:0)
  %3 = add(%1, %2)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "3": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"},
                            {"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"}]}}})");
}

TEST(PlanDevicesTest, ExplicitCopyFixesBothSides) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) {
  %0 = device_copy(%x, src=cpu:0, dst=cuda:0)
  %k = const(f32[5,7])
  %1 = add(%0, %k)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cpu:0"}, "result": "cuda:0",
                 "bindings": {"0": "cuda:0", "k": "cuda:0", "1": "cuda:0"},
                 "copies": [{"of": "x", "src": "cpu:0", "dst": "cuda:0", "into": "0"}]}}})");
}

TEST(PlanDevicesTest, CopyToTheSameDeviceIsRemoved) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) {
  %0 = device_copy(%x, src=cuda:0, dst=cuda:0)
  %1 = negative(%0)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0"}, "result": "cuda:0", "bindings": {"1": "cuda:0"}, "copies": []}}})");
}

TEST(PlanDevicesTest, LetBoundValuesFollowTheirAnnotations) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) {
  %x = add(%a, %b)
  %y = %x
  %z = on_device(%y, cpu:0)
  %w = negative(%z)
  %v = on_device(%w, cpu:0)
  return %v
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cpu:0",
                 "bindings": {"x": "cpu:0", "y": "cpu:0", "w": "cpu:0"}, "copies": []}}})");
}

TEST(PlanDevicesTest, AnnotatedParameterIsCopiedInTheBody) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) {
  %0 = on_device(%a, cpu:0)
  %1 = add(%0, %b)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cuda:0"}, "result": "cuda:0", "bindings": {"1": "cuda:0"},
                 "copies": [{"of": "a", "src": "cpu:0", "dst": "cuda:0", "into": "1"}]}}})");
}

TEST(PlanDevicesTest, ReturnedAnnotationPinsTheResult) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"},
                 "copies": []}}})");
}

TEST(PlanDevicesTest, WrittenParameterAndResultDevicesHold) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7] on cpu:0, %b: f32[5,7]) -> f32[5,7] on cpu:0 {
  %0 = add(%a, %b)
  return %0
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"},
                 "copies": []}}})");
}

TEST(PlanDevicesTest, LocalFunctionSignatureFlowsToItsCaller) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7], %y: f32[5,7]) -> f32[5,7] {
  %f = fn(%a: f32[5,7]) -> f32[5,7] {
    %0 = on_device(%a, cpu:0)
    %1 = negative(%0)
    return %1
  }
  %r = %f(%x)
  %s = add(%r, %y)
  return %s
}
)",
             R"({"functions": {
                 "main": {"params": {"x": "cpu:0", "y": "cuda:0"}, "result": "cuda:0",
                          "bindings": {"f": "cuda:0", "r": "cuda:0", "s": "cuda:0"}, "copies": []},
                 "main/f": {"params": {"a": "cpu:0"}, "result": "cuda:0", "bindings": {"1": "cuda:0"},
                            "copies": [{"of": "a", "src": "cpu:0", "dst": "cuda:0", "into": "1"}]}}})");
}

TEST(PlanDevicesTest, FunctionPassedAsArgumentUnifiesSignatures) {
  ExpectPlan(std::string(kConfig) + R"(
def @apply(%g: fn(f32[5,7]) -> f32[5,7], %z: f32[5,7]) -> f32[5,7] {
  %0 = %g(%z)
  return %0
}

def @main(%x: f32[5,7]) -> f32[5,7] {
  %h = fn(%a: f32[5,7]) -> f32[5,7] {
    %0 = negative(%a)
    %1 = on_device(%0, cpu:0)
    return %1
  }
  %r = @apply(%h, %x)
  return %r
}
)",
             R"({"functions": {
                 "apply": {"params": {"g": "cpu:0", "z": "cpu:0"}, "result": "cpu:0",
                           "bindings": {"0": "cpu:0"}, "copies": []},
                 "main": {"params": {"x": "cpu:0"}, "result": "cpu:0",
                          "bindings": {"h": "cpu:0", "r": "cpu:0"}, "copies": []},
                 "main/h": {"params": {"a": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"},
                            "copies": []}}})");
}

TEST(PlanDevicesTest, FunctionsInATupleCollapseOntoIt) {
  // Only %g is annotated; %f shares the tuple with it and so lands on the CPU too.
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> f32[5,7] {
  %f = fn(%a: f32[5,7]) -> f32[5,7] {
    %0 = negative(%a)
    return %0
  }
  %g = fn(%b: f32[5,7]) -> f32[5,7] {
    %0 = on_device(%b, cpu:0)
    %1 = exp(%0)
    return %1
  }
  %t = (%f, %g)
  %p = %t.0
  %r = %p(%x)
  return %r
}
)",
             R"({"functions": {
                 "main": {"params": {"x": "cpu:0"}, "result": "cpu:0",
                          "bindings": {"f": "cpu:0", "g": "cpu:0", "t": "cpu:0", "p": "cpu:0", "r": "cpu:0"},
                          "copies": []},
                 "main/f": {"params": {"a": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"}, "copies": []},
                 "main/g": {"params": {"b": "cpu:0"}, "result": "cpu:0", "bindings": {"1": "cpu:0"},
                            "copies": []}}})");
}

TEST(PlanDevicesTest, FunctionsThroughAnIfCollapseOntoIt) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7], %c: bool[]) -> f32[5,7] {
  %f = fn(%a: f32[5,7]) -> f32[5,7] {
    %0 = negative(%a)
    return %0
  }
  %g = fn(%b: f32[5,7]) -> f32[5,7] {
    %0 = exp(%b)
    return %0
  }
  %k = on_device(%c, cpu:0, constrain_result=true)
  %h = if %k {
    return %f
  } else {
    return %g
  }
  %r = %h(%x)
  return %r
}
)",
             R"({"functions": {
                 "main": {"params": {"x": "cpu:0", "c": "cpu:0"}, "result": "cpu:0",
                          "bindings": {"f": "cpu:0", "g": "cpu:0", "h": "cpu:0", "r": "cpu:0"}, "copies": []},
                 "main/f": {"params": {"a": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"}, "copies": []},
                 "main/g": {"params": {"b": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0"},
                            "copies": []}}})");
}

TEST(PlanDevicesTest, IfSharesItsDeviceWithConditionAndArms) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7], %y: f32[5,7], %c: bool[]) -> f32[5,7] {
  %r = if %c {
    %0 = negative(%x)
    %1 = on_device(%0, cpu:0)
    return %1
  } else {
    %2 = exp(%y)
    return %2
  }
  return %r
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cpu:0", "y": "cuda:0", "c": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "2": "cuda:0", "r": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "r"}]}}})");
}

TEST(PlanDevicesTest, GlobalsCallingGlobalsShareSignatures) {
  ExpectPlan(std::string(kConfig) + R"(
def @g(%p: f32[5,7]) -> f32[5,7] {
  %0 = on_device(%p, cpu:0)
  %1 = negative(%0)
  return %1
}

def @f(%a: f32[5,7]) -> f32[5,7] {
  %0 = @g(%a)
  %1 = exp(%0)
  return %1
}

def @main(%x: f32[5,7]) -> f32[5,7] {
  %0 = @f(%x)
  return %0
}
)",
             R"({"functions": {
                 "g": {"params": {"p": "cpu:0"}, "result": "cuda:0", "bindings": {"1": "cuda:0"},
                       "copies": [{"of": "p", "src": "cpu:0", "dst": "cuda:0", "into": "1"}]},
                 "f": {"params": {"a": "cpu:0"}, "result": "cuda:0", "bindings": {"0": "cuda:0", "1": "cuda:0"},
                       "copies": []},
                 "main": {"params": {"x": "cpu:0"}, "result": "cuda:0", "bindings": {"0": "cuda:0"},
                          "copies": []}}})");
}

TEST(PlanDevicesTest, ShapesAndAllocationOperandsLiveOnTheHost) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> f32[5,7] {
  %size = const(i64[])
  %st = memory.alloc_storage(%size, 64, device=cuda:0)
  %shape = const(i64[2])
  %t = memory.alloc_tensor(%st, 0, %shape)
  %s = vm.shape_of(%x)
  %r = vm.reshape_tensor(%x, %s)
  %o = add(%r, %t)
  return %o
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"size": "cpu:0", "st": "cuda:0", "shape": "cpu:0", "t": "cuda:0", "s": "cpu:0",
                              "r": "cuda:0", "o": "cuda:0"},
                 "copies": []}}})");
}

TEST(PlanDevicesTest, HostOverrideMovesShapes) {
  PlanOptions options;
  options.host_device = *ParseVirtualDevice("cpu:1");
  PlanOutcome outcome = PlanText(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> i64[2] {
  %s = vm.shape_of(%x)
  return %s
}
)",
                                 options);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.report["functions"]["main"]["bindings"]["s"], "cpu:1");
  EXPECT_EQ(outcome.report["functions"]["main"]["result"], "cpu:1");
}

TEST(PlanDevicesTest, DefaultOverrideReplacesTheConfig) {
  PlanOptions options;
  options.default_device = *ParseVirtualDevice("cuda:2");
  PlanOutcome outcome = PlanText(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> f32[5,7] {
  %0 = negative(%x)
  return %0
}
)",
                                 options);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.report["functions"]["main"]["params"]["x"], "cuda:2");
  EXPECT_EQ(CheckIdempotent(outcome.text, options), "");
}

TEST(PlanDevicesTest, KernelScopesFlowIntoCallersAndBack) {
  ExpectPlan(std::string(kConfig) + R"(
kernel @mm(%a: f32[4,4] on /shared, %b: f32[4,4]) -> f32[4,4] on /global

def @main(%x: f32[4,4], %y: f32[4,4]) -> f32[4,4] {
  %0 = @mm(%x, %y)
  %1 = add(%0, %y)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0/shared", "y": "cuda:0/global"}, "result": "cuda:0/global",
                 "bindings": {"0": "cuda:0/global", "1": "cuda:0/global"}, "copies": []}},
                 "kernels": {"mm": {"params": ["/shared", "/global"], "result": "/global"}}})");
}

TEST(PlanDevicesTest, KernelBoundaryCopiesWhatCannotJoin) {
  ExpectPlan(std::string(kConfig) + R"(
kernel @mm(%a: f32[4,4] on /shared, %b: f32[4,4]) -> f32[4,4] on /global

def @main(%x: f32[4,4] on cuda:0/global, %y: f32[4,4]) -> f32[4,4] {
  %0 = @mm(%x, %y)
  return %0
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0/global", "y": "cuda:0/global"}, "result": "cuda:0/global",
                 "bindings": {"0": "cuda:0/global"},
                 "copies": [{"of": "x", "src": "cuda:0/global", "dst": "cuda:0/shared", "into": "0"}]}},
                 "kernels": {"mm": {"params": ["/shared", "/global"], "result": "/global"}}})");
}

TEST(PlanDevicesTest, FreeAnnotationJoinsWhereItCan) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7] on cpu:0) -> f32[5,7] {
  %0 = on_device(%x, ?, constrain_body=false, constrain_result=false)
  %1 = negative(%0)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cpu:0"}, "result": "cpu:0", "bindings": {"1": "cpu:0"}, "copies": []}}})");
}

TEST(PlanDevicesTest, FreeAnnotationCopiesWhereItCannotJoin) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7] on cpu:0) -> f32[5,7] on cuda:0 {
  %0 = on_device(%x, ?, constrain_body=false, constrain_result=false)
  %1 = negative(%0)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cpu:0"}, "result": "cuda:0", "bindings": {"1": "cuda:0"},
                 "copies": [{"of": "x", "src": "cpu:0", "dst": "cuda:0", "into": "1"}]}}})");
}

TEST(PlanDevicesTest, ScopeFlowsThroughAFreeAnnotation) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[4]) -> f32[4] on cuda:0 {
  %0 = on_device(%x, ?, constrain_body=false, constrain_result=false)
  %1 = on_device(%0, /shared, constrain_result=true)
  %2 = negative(%1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0/shared"}, "result": "cuda:0/shared",
                 "bindings": {"2": "cuda:0/shared"}, "copies": []}}})");
}

TEST(PlanDevicesTest, ScopeOnlyAnnotationKeepsTheDefaultDevice) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> f32[5,7] {
  %0 = negative(%x)
  %1 = on_device(%0, /global.texture, constrain_result=true)
  %2 = exp(%1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cuda:0/global.texture"}, "result": "cuda:0/global.texture",
                 "bindings": {"0": "cuda:0/global.texture", "2": "cuda:0/global.texture"}, "copies": []}}})");
}

constexpr char kConflictingUses[] = R"(config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%a: f32[5,7], %b: f32[5,7]) -> f32[5,7] {
  %0 = add(%a, %b)
  %1 = negative(%0)
  %2 = on_device(%1, cpu:0)
  %3 = exp(%0)
  %4 = on_device(%3, cuda:0)
  %5 = add(%2, %4)
  return %5
}
)";

TEST(PlanDevicesTest, ConflictingUsesCopyForTheLaterUseAndWarn) {
  ExpectPlan(kConflictingUses,
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "1": "cpu:0", "3": "cuda:0", "5": "cuda:0"},
                 "copies": [{"of": "1", "src": "cpu:0", "dst": "cuda:0", "into": "5"},
                            {"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"}]}}})",
             /*warnings=*/1);
  // The annotated exp runs on cuda:0; its shared input %0 is copied for it (the later use).
  PlanOutcome outcome = PlanText(kConflictingUses);
  ASSERT_EQ(outcome.warnings.size(), 1u);
  EXPECT_EQ(outcome.warnings[0].loc.line, 6);
  EXPECT_THAT(outcome.warnings[0].message, HasSubstr("%0 is needed on cpu:0 by the use at 4:"));
  EXPECT_THAT(outcome.warnings[0].message, HasSubstr("on cuda:0 by the use at 6:12"));
  EXPECT_THAT(outcome.warnings[0].message, HasSubstr("at 5:"));  // the annotation that put it on the CPU
}

TEST(PlanDevicesTest, StrictConflictListsTheTwoAnnotations) {
  PlanOptions options;
  options.strict = true;
  PlanOutcome outcome = PlanText(kConflictingUses, options);
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.error.loc.line, 6);  // %0 read by the exp that on_device pins to cuda:0
  ASSERT_EQ(outcome.error.conflicts.size(), 2u);
  EXPECT_EQ(outcome.error.conflicts[0].loc, (SourceLoc{5, 22}));
  EXPECT_EQ(outcome.error.conflicts[0].device.ToString(), "cpu:0");
  EXPECT_EQ(outcome.error.conflicts[1].loc, (SourceLoc{7, 22}));
  EXPECT_EQ(outcome.error.conflicts[1].device.ToString(), "cuda:0");
  EXPECT_EQ(ValidateErrorReport(json::parse(PlanErrorJson(outcome.error))), "");
}

TEST(PlanDevicesTest, StrictConflictLeavesOutAgreeingAnnotations) {
  // Five annotations reach %2's class; only a CPU one and the CUDA one are needed for the conflict.
  PlanOptions options;
  options.strict = true;
  PlanOutcome outcome = PlanText(R"(def @main(%a: f32[2], %b: f32[2]) -> f32[2] {
  %0 = add(%a, %b)
  %1 = on_device(%0, /global)
  %2 = negative(%0)
  %3 = on_device(%2, cpu)
  %4 = on_device(%2, *:0)
  %5 = exp(%2)
  %6 = on_device(%5, cuda:0)
  %7 = add(%3, %4)
  %8 = add(%7, %6)
  %9 = add(%8, %1)
  return %9
}
)",
                                 options);
  ASSERT_FALSE(outcome.status.ok());
  ASSERT_EQ(outcome.error.conflicts.size(), 2u);
  EXPECT_EQ(outcome.error.conflicts[0].loc.line, 5);  // cpu
  EXPECT_EQ(outcome.error.conflicts[1].loc.line, 8);  // cuda:0
  // The exp is pinned to cuda:0 before it reads %2: %2 is what would have to move.
  EXPECT_THAT(outcome.error.message, HasSubstr("%2 is needed on cpu:0/global and on cuda:0"));
}

TEST(PlanDevicesTest, AnnotationAgainstWrittenParameterIsAnErrorInBothModes) {
  constexpr char kProgram[] = R"(def @main(%x: f32[5,7] on cuda:0) -> f32[5,7] {
  %0 = on_device(%x, cpu:0)
  %1 = negative(%0)
  return %1
}
)";
  for (bool strict : {false, true}) {
    PlanOptions options;
    options.strict = strict;
    PlanOutcome outcome = PlanText(kProgram, options);
    ASSERT_FALSE(outcome.status.ok());
    ASSERT_EQ(outcome.error.conflicts.size(), 2u);
    EXPECT_EQ(outcome.error.conflicts[0].loc, (SourceLoc{1, 27}));
    EXPECT_THAT(outcome.error.conflicts[0].what, HasSubstr("parameter %x"));
    EXPECT_EQ(outcome.error.conflicts[1].loc, (SourceLoc{2, 22}));
  }
}

TEST(PlanDevicesTest, OperandAgainstWrittenParameterIsAnErrorInBothModes) {
  constexpr char kProgram[] = R"(def @main(%x: f32[2] on cpu:0, %y: f32[2]) -> f32[2] {
  %0 = negative(%y)
  %1 = on_device(%0, cuda:0, constrain_result=true)
  %2 = add(%x, %1)
  return %2
}
)";
  for (bool strict : {false, true}) {
    PlanOptions options;
    options.strict = strict;
    PlanOutcome outcome = PlanText(kProgram, options);
    ASSERT_FALSE(outcome.status.ok());
    EXPECT_EQ(outcome.error.loc.line, 4);
    ASSERT_EQ(outcome.error.conflicts.size(), 2u);
    EXPECT_EQ(outcome.error.conflicts[0].loc.line, 1);
    EXPECT_EQ(outcome.error.conflicts[1].loc.line, 3);
  }
}

TEST(PlanDevicesTest, ArgumentAgainstCalleeSignatureIsAnError) {
  PlanOutcome outcome = PlanText(R"(def @f(%a: f32[2] on cpu:0) -> f32[2] {
  return %a
}

def @main(%x: f32[2] on cuda:0) -> f32[2] {
  %0 = @f(%x)
  return %0
}
)");
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.error.loc.line, 6);
  ASSERT_EQ(outcome.error.conflicts.size(), 2u);
  EXPECT_EQ(outcome.error.conflicts[0].loc.line, 1);
  EXPECT_EQ(outcome.error.conflicts[1].loc.line, 5);
}

TEST(PlanDevicesTest, ConflictCopyIsSharedWithEnclosedBlocks) {
  // %0 is on the CPU; two uses need it on cuda:0, the second inside an if arm: one copy serves both.
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[2], %b: f32[2], %c: bool[]) -> f32[2] {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0, constrain_result=true)
  %2 = on_device(%0, cuda:0, constrain_result=true)
  %3 = if %c {
    %4 = on_device(%0, cuda:0, constrain_result=true)
    %5 = negative(%4)
    return %5
  } else {
    return %2
  }
  %6 = negative(%1)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0", "c": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "3": "cuda:0", "5": "cuda:0", "6": "cpu:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "5"}]}}})",
             /*warnings=*/2);
}

TEST(PlanDevicesTest, ProjectionOfAnnotatedTupleCopiesOnlyTheField) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%a: f32[5,7], %b: f32[5,7]) -> f32[5,7] {
  %t = (%a, %b)
  %u = on_device(%t, cpu:0)
  %p = %u.0
  %q = negative(%p)
  return %q
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0"}, "result": "cuda:0",
                 "bindings": {"t": "cpu:0", "p": "cpu:0", "q": "cuda:0"},
                 "copies": [{"of": "p", "src": "cpu:0", "dst": "cuda:0", "into": "q"}]}}})");
}

// The argument takes the written cpu:0 and, like every parameter, the rest (the scope) from its
// function's result.
TEST(PlanDevicesTest, PrimitiveFunctionSignatureConstrainsCallers) {
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[5,7]) -> f32[5,7] {
  %k = fn[primitive](%a: f32[5,7] on cpu:0) -> f32[5,7] on /global {
    %0 = negative(%a)
    return %0
  }
  %r = %k(%x)
  return %r
}
)",
             R"({"functions": {"main": {
                 "params": {"x": "cpu:0/global"}, "result": "cuda:0/global",
                 "bindings": {"k": "cuda:0/global", "r": "cuda:0/global"}, "copies": []}}})");
}

TEST(PlanDevicesTest, PlanningACopyEqualsPlanningInPlace) {
  std::string text = std::string(kConfig) + kConflictingUses + R"(
kernel @k(%x: f32[5,7] on /shared) -> f32[5,7]

def @other(%x: f32[5,7]) -> f32[5,7] {
  %0 = @k(%x)
  return %0
}
)";
  text = text.substr(text.find("def @main"));  // kConflictingUses brings its own config
  absl::StatusOr<ir::Module> module = ir::ParseModule(std::string(kConfig) + text);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::VerifyModule(*module).ok());
  std::string before = ir::PrintModule(*module);
  absl::StatusOr<PlanResult> copied = PlanDevices(*module, PlanOptions{});
  EXPECT_EQ(ir::PrintModule(*module), before);  // the input is left alone
  absl::StatusOr<PlanResult> in_place = PlanDevices(*std::move(module), PlanOptions{});
  ASSERT_TRUE(copied.ok() && in_place.ok());
  EXPECT_EQ(ir::PrintModule(copied->module), ir::PrintModule(in_place->module));
  EXPECT_NE(ir::PrintModule(copied->module), before);
  EXPECT_EQ(PlanReportJson(*copied), PlanReportJson(*in_place));
}

// A chain of `n` adds, `%i = add(%i-1, %i-2)`, over two parameters.
std::string Chain(int n) {
  std::string text = "def @main(%p: f32[4], %q: f32[4]) -> f32[4] {\n  %0 = add(%p, %q)\n  %1 = add(%0, %p)\n";
  for (int i = 2; i < n; ++i) absl::StrAppend(&text, "  %", i, " = add(%", i - 1, ", %", i - 2, ")\n");
  absl::StrAppend(&text, "  return %", n - 1, "\n}\n");
  return text;
}

TEST(PlanDevicesTest, LongChainPlansWithoutRecursion) {
  constexpr int kN = 200'000;
  PlanOutcome outcome = PlanText(Chain(kN));
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  const json& main = outcome.report["functions"]["main"];
  EXPECT_EQ(main["bindings"].size(), static_cast<size_t>(kN));
  EXPECT_EQ(main["bindings"]["199999"], "cuda:0");
  EXPECT_EQ(main["params"]["p"], "cuda:0");
}

TEST(PlanDevicesTest, DeeplyNestedFunctionsPlanWithoutRecursion) {
  constexpr int kDepth = 10'000;
  std::string text = "def @main(%x0: f32[2]) -> f32[2] {\n";
  for (int i = 0; i < kDepth; ++i) absl::StrAppend(&text, "%f", i, " = fn(%x", i + 1, ": f32[2]) -> f32[2] {\n");
  absl::StrAppend(&text, "%in = on_device(%x", kDepth, ", cpu:0)\n%out = negative(%in)\nreturn %out\n");
  for (int i = kDepth; i-- > 0;) absl::StrAppend(&text, "}\n%r", i, " = %f", i, "(%x", i, ")\nreturn %r", i, "\n");
  absl::StrAppend(&text, "}\n");
  // Planned directly: the JSON report would name 10,000 nested paths (hundreds of megabytes).
  absl::StatusOr<PlanResult> plan = ParseVerifyAndPlan(text);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const ir::Module& m = plan->module;
  // The innermost parameter is pinned to the CPU and every signature passes it outwards.
  EXPECT_EQ(m.Device(m.params[m.functions[m.items[0]].params.begin].device).ToString(), "cpu:0");
  EXPECT_EQ(m.Device(m.functions[m.items[0]].result_device).ToString(), "cuda:0");
  EXPECT_EQ(m.functions.size(), static_cast<size_t>(kDepth + 1));
  ASSERT_EQ(plan->copies.size(), 1u);
  EXPECT_EQ(m.Device(plan->copies[0].src).ToString(), "cpu:0");
  EXPECT_EQ(m.Device(plan->copies[0].dst).ToString(), "cuda:0");
  EXPECT_EQ(CheckIdempotent(ir::PrintModule(m)), "");
}

TEST(PlanDevicesTest, AnnotationReachesIntoAClosureThroughTheClosureThatReturnsIt) {
  // %mk returns %g: %mk's result is %g's signature, so pinning what %h(%x) returns pins %g's body.
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[2], %y: f32[2]) {
  %mk = fn(%a: f32[2]) {
    %g = fn(%b: f32[2]) {
      %s = add(%a, %b)
      return %s
    }
    return %g
  }
  %h = %mk(%x)
  %r = %h(%x)
  %q = on_device(%r, cpu:0)
  %n = negative(%y)
  %t = (%q, %n)
  return %t
}
)",
             R"({"functions": {
                 "main": {"params": {"x": "cpu:0", "y": "cuda:0"}, "result": "cuda:0",
                          "bindings": {"mk": "cpu:0", "h": "cpu:0", "r": "cpu:0", "n": "cuda:0", "t": "cuda:0"},
                          "copies": [{"of": "r", "src": "cpu:0", "dst": "cuda:0", "into": "t"}]},
                 "main/mk": {"params": {"a": "cpu:0"}, "result": "cpu:0", "bindings": {"g": "cpu:0"}, "copies": []},
                 "main/mk/g": {"params": {"b": "cpu:0"}, "result": "cpu:0", "bindings": {"s": "cpu:0"},
                               "copies": []}}})");
}

TEST(PlanDevicesTest, ClosureReturnedThroughAnIfSharesTheArmsDevice) {
  // The `if` collapses both closures to one device; the closure returning it returns that device.
  ExpectPlan(std::string(kConfig) + R"(
def @main(%x: f32[2], %c: bool[]) {
  %mk = fn(%a: f32[2]) {
    %g = fn(%b: f32[2]) {
      %s = add(%a, %b)
      return %s
    }
    %k = fn(%b: f32[2]) {
      %t = on_device(%b, cpu:0)
      %u = negative(%t)
      return %u
    }
    %p = if %c {
      return %g
    } else {
      return %k
    }
    return %p
  }
  %h = %mk(%x)
  %r = %h(%x)
  return %r
}
)",
             R"({"functions": {
                 "main": {"params": {"x": "cpu:0", "c": "cpu:0"}, "result": "cpu:0",
                          "bindings": {"mk": "cpu:0", "h": "cpu:0", "r": "cpu:0"}, "copies": []},
                 "main/mk": {"params": {"a": "cpu:0"}, "result": "cpu:0",
                             "bindings": {"g": "cpu:0", "k": "cpu:0", "p": "cpu:0"}, "copies": []},
                 "main/mk/g": {"params": {"b": "cpu:0"}, "result": "cpu:0", "bindings": {"s": "cpu:0"},
                               "copies": []},
                 "main/mk/k": {"params": {"b": "cpu:0"}, "result": "cpu:0", "bindings": {"u": "cpu:0"},
                               "copies": []}}})");
}

TEST(PlanDevicesTest, CurriedClosuresPlanWithDomainsLinearInDepth) {
  // 20,000 closures, each returning the next: level i's result type is the whole chain below it, so
  // domains built from result types would number 2·10^8 (and took 29 s and 2.2 GB at 10^4 levels).
  constexpr int kDepth = 20'000;
  std::string text = "def @main(%x: f32[2]) {\n";
  for (int i = 0; i < kDepth; ++i) absl::StrAppend(&text, "%f", i, " = fn(%y", i, ": f32[2]) {\n");
  absl::StrAppend(&text, "%z = add(%y", kDepth - 1, ", %x)\n%w = on_device(%z, cpu:0)\nreturn %w\n");
  for (int i = kDepth; i-- > 0;) absl::StrAppend(&text, "}\nreturn %f", i, "\n");
  absl::StrAppend(&text, "}\n");
  absl::StatusOr<PlanResult> plan = ParseVerifyAndPlan(text);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_LT(plan->stats.domains, 10u * kDepth);
  // Not printed: the planned text writes each level's inferred type (quadratic in depth).
  const ir::Module& m = plan->module;
  const ir::Function& main = m.functions[m.items[0]];
  EXPECT_EQ(m.Device(main.result_device).ToString(), "cpu:0");
  EXPECT_EQ(m.Device(m.params[main.params.begin].device).ToString(), "cpu:0");
  EXPECT_EQ(m.Device(m.params[m.functions.back().params.begin].device).ToString(), "cpu:0");
  EXPECT_TRUE(plan->copies.empty());
}

TEST(PlanDevicesTest, CopiesBetweenTheSameDevicesShareOneAttributePair) {
  // 40 annotated values, each copied cpu:0 → cuda:0 or cuda:0 → cpu:0: two distinct pairs of devices.
  std::string program = std::string(kConfig) + "def @main(%a: f32[4], %b: f32[4]) -> f32[4] {\n";
  std::string last = "%a";
  for (int i = 0; i < 40; ++i) {
    const std::string device = i % 2 == 0 ? "cpu:0" : "cuda:0";
    absl::StrAppend(&program, "  %s", i, " = add(", last, ", %b)\n", "  %n", i, " = on_device(%s", i, ", ", device,
                    ")\n");
    last = absl::StrCat("%n", i);
  }
  absl::StrAppend(&program, "  return ", last, "\n}\n");
  absl::StatusOr<ir::Module> module = ir::ParseModule(program);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(ir::VerifyModule(*module).ok());
  const size_t attrs_before = module->attrs.size();
  absl::StatusOr<PlanResult> plan = PlanDevices(*std::move(module), PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GE(plan->copies.size(), 39u);
  // One src/dst pair per pair of devices, not two attributes per copy.
  EXPECT_LE(plan->module.attrs.size(), attrs_before + 4);
  // Each copy still prints its own devices, and the output plans to itself.
  const std::string text = ir::PrintModule(plan->module);
  EXPECT_THAT(text, HasSubstr("%n0 = device_copy(%s0, src=cpu:0, dst=cuda:0)"));
  EXPECT_THAT(text, HasSubstr("%n1 = device_copy(%s1, src=cuda:0, dst=cpu:0)"));
  EXPECT_EQ(CheckIdempotent(text), "");
}

TEST(PlanDevicesTest, ConflictsNameWhereDeviceCopiesAndAllocationsAreWritten) {
  // Pins keep no locations of their own: the conflict's locations are recomputed from the annotated
  // binding, so they must still point at the src=/dst= and device= values.
  PlanOptions options;
  options.strict = true;
  PlanOutcome copies = PlanText(R"(def @main(%x: f32[2]) -> f32[2] {
  %0 = device_copy(%x, src=cpu:0, dst=cuda:0)
  %1 = device_copy(%x, src=cuda:1, dst=cuda:0)
  %2 = add(%0, %1)
  return %2
}
)",
                                options);
  ASSERT_FALSE(copies.status.ok());
  ASSERT_EQ(copies.error.conflicts.size(), 2u);
  EXPECT_EQ(copies.error.conflicts[0].loc, (SourceLoc{2, 28}));
  EXPECT_EQ(copies.error.conflicts[1].loc, (SourceLoc{3, 28}));
  PlanOutcome alloc = PlanText(R"(def @main(%y: f32[2] on cpu:0) -> f32[2] {
  %0 = memory.alloc_storage(64, 64, device=cuda:0)
  %1 = memory.alloc_tensor(%0, 0, [2])
  %2 = add(%1, %y)
  return %2
}
)",
                               options);
  ASSERT_FALSE(alloc.status.ok());
  ASSERT_EQ(alloc.error.conflicts.size(), 2u);
  EXPECT_EQ(alloc.error.conflicts[0].loc, (SourceLoc{1, 25}));  // the parameter's `on cpu:0`
  EXPECT_EQ(alloc.error.conflicts[1].loc, (SourceLoc{2, 44}));  // device=cuda:0
}

}  // namespace
}  // namespace vdev::testing
