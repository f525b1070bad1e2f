// A local value named by an attribute (`foo(t=%1)`, which the grammar allows): a read that keeps its
// binding defined, and a consumer for the defaults, but never a constraint (docs/planner.md, "Where
// the spec is silent"). Each test checks the text, the JSON report and that the output replans to
// itself; the first is the plan fuzzer's finding (fuzz/corpus/attribute_value_use.vdev).
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "vdev/ir/ir_text.h"

namespace vdev::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kConfig[] = "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n";

// %0 on cpu:0 by its annotation %1, and a parameter %b that nothing places.
constexpr char kAnnotatedNegative[] = R"(
def @main(%a: f32[2], %b: f32[2]) {
  %0 = negative(%a)
  %1 = on_device(%0, cpu:0))";

// Plans `program`; checks the facts exactly, the report's shape, the warnings, every line in `text`
// and idempotence.
void ExpectPlan(const std::string& program, const std::string& facts, std::initializer_list<const char*> lines,
                size_t warnings = 0) {
  PlanOutcome outcome = PlanText(std::string(kConfig) + program);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(ValidateReport(outcome.report), "");
  EXPECT_EQ(CompareFacts(json::parse(facts), outcome.report, /*exact=*/true), "") << outcome.text;
  EXPECT_EQ(outcome.warnings.size(), warnings);
  for (const char* line : lines) EXPECT_THAT(outcome.text, HasSubstr(line));
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

TEST(PlanAttributeTest, AnnotationReadOnlyByAnAttributeIsNotDropped) {
  // The fuzzer's reproducer: the annotation is read (by foo's attribute), so it is live; foo, its
  // first consumer, runs on the default device, so the annotation becomes the copy there, and the
  // attribute names it. Planning the output keeps the copy (its src pins %a).
  ExpectPlan(R"(
def @main(%a: f32[2]) {
  %1 = on_device(%a, cpu:0)
  %2 = foo(t=%1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0"}, "result": "cuda:0", "bindings": {"2": "cuda:0"},
                 "copies": [{"of": "a", "src": "cpu:0", "dst": "cuda:0", "into": "2"}]}}})",
             {"%1 = device_copy(%a, src=cpu:0, dst=cuda:0)", "%2 = foo(t=%1)"});
}

TEST(PlanAttributeTest, AnnotatedValueTakesTheDeviceOfTheOpThatNamesIt) {
  // foo runs on cpu:0 (its operand's device): %1's result defaults there, as for an operand, so
  // the annotation moves nothing and goes.
  ExpectPlan(R"(
def @main(%a: f32[2]) {
  %0 = negative(%a)
  %1 = on_device(%0, cpu:0)
  %2 = foo(%a, t=%1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0"}, "result": "cpu:0", "bindings": {"0": "cpu:0", "2": "cpu:0"},
                 "copies": []}}})",
             {"%2 = foo(%a, t=%0)"});
}

TEST(PlanAttributeTest, AnnotationToAnotherDeviceBecomesACopyTheAttributeNames) {
  // foo runs on cuda:0 (%b's default): the annotated value is copied there, as for an operand, and
  // the copy keeps the annotation's name; planning the output keeps the copy (its src pins %0).
  ExpectPlan(std::string(kAnnotatedNegative) + R"(
  %2 = foo(%b, t=%1)
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "2": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "2"}]}}})",
             {"%1 = device_copy(%0, src=cpu:0, dst=cuda:0)", "%2 = foo(%b, t=%1)"});
}

TEST(PlanAttributeTest, AnAttributeConstrainsNothingAndIsNeverCopied) {
  // %0 lives on cpu:0; foo on cuda:0 names it in an attribute: no join, no copy, no warning (the
  // attribute is kept verbatim). Only the operand use of %1 is copied.
  ExpectPlan(std::string(kAnnotatedNegative) + R"(
  %2 = foo(%b, t=%0)
  %3 = multiply(%1, %2)
  return %3
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"0": "cpu:0", "2": "cuda:0", "3": "cuda:0"},
                 "copies": [{"of": "0", "src": "cpu:0", "dst": "cuda:0", "into": "3"}]}}})",
             {"%2 = foo(%b, t=%0)", "%3 = multiply(%1, %2)"});
}

TEST(PlanAttributeTest, ConflictWithAnAttributeReadIsNoConflict) {
  // %0 is named on cuda:0 (by foo's attribute) and used on cpu:0: only the use counts, --strict
  // passes.
  PlanOptions strict;
  strict.strict = true;
  PlanOutcome outcome = PlanText(std::string(kConfig) + R"(
def @main(%a: f32[2], %b: f32[2]) {
  %0 = negative(%a)
  %1 = foo(%b, t=%0)
  %2 = on_device(%1, cuda:0)
  %3 = exp(%0)
  %4 = on_device(%3, cpu:0)
  %5 = (%2, %4)
  return %5
}
)",
                                 strict);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_TRUE(outcome.warnings.empty());
  EXPECT_EQ(CompareFacts(json::parse(R"({"functions": {"main": {"bindings": {"0": "cpu:0", "1": "cuda:0"}}}})"),
                         outcome.report, /*exact=*/false),
            "");
}

TEST(PlanAttributeTest, AttributeReadsTheCopyOfAProjectedField) {
  // %p projects the annotated tuple and is copied to foo's device; the attribute reads the copy,
  // which therefore stays (a copy nothing reads would go), and the annotation goes.
  ExpectPlan(R"(
def @main(%a: f32[2], %b: f32[2], %c: f32[2]) {
  %t = (%a, %b)
  %u = on_device(%t, cpu:0)
  %p = %u.0
  %q = foo(%c, t=%p)
  return %q
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cpu:0", "c": "cuda:0"}, "result": "cuda:0",
                 "bindings": {"t": "cpu:0", "p": "cpu:0", "q": "cuda:0"},
                 "copies": [{"of": "p", "src": "cpu:0", "dst": "cuda:0", "into": "q"}]}}})",
             {"%p = %t.0", "%p_copy = device_copy(%p, src=cpu:0, dst=cuda:0)", "%q = foo(%c, t=%p_copy)"});
}

TEST(PlanAttributeTest, ExplicitCopyReadOnlyByAnAttributeStays) {
  ExpectPlan(R"(
def @main(%a: f32[2], %b: f32[2]) {
  %0 = device_copy(%a, src=cpu:0, dst=cuda:0)
  %1 = foo(%b, t=%0)
  return %1
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "b": "cuda:0"}, "result": "cuda:0", "bindings": {"0": "cuda:0", "1": "cuda:0"},
                 "copies": [{"of": "a", "src": "cpu:0", "dst": "cuda:0", "into": "0"}]}}})",
             {"%0 = device_copy(%a, src=cpu:0, dst=cuda:0)", "%1 = foo(%b, t=%0)"});
}

TEST(PlanAttributeTest, AttributeInANestedBlockReadsAnOuterAnnotation) {
  ExpectPlan(R"(
def @main(%a: f32[2], %c: bool[]) {
  %0 = negative(%a)
  %1 = on_device(%0, cpu:0)
  %2 = if %c {
    %3 = foo(%a, t=%1)
    return %3
  } else {
    return %a
  }
  return %2
}
)",
             R"({"functions": {"main": {
                 "params": {"a": "cpu:0", "c": "cpu:0"}, "result": "cpu:0",
                 "bindings": {"0": "cpu:0", "2": "cpu:0", "3": "cpu:0"}, "copies": []}}})",
             {"%3 = foo(%a, t=%0)"});
}

TEST(PlanAttributeTest, LongChainOfAttributeReadsPlansWithoutRecursion) {
  // 200,000 annotations each read only through the next one's attribute.
  std::string program = "def @main(%a: f32[2]) {\n  %v0 = negative(%a)\n";
  constexpr int kN = 200'000;
  for (int i = 1; i <= kN; ++i) {
    program += "  %n" + std::to_string(i) + " = on_device(%v" + std::to_string(i - 1) + ", cpu:0)\n";
    program += "  %v" + std::to_string(i) + " = foo(%a, t=%n" + std::to_string(i) + ")\n";
  }
  program += "  return %v" + std::to_string(kN) + "\n}\n";
  PlanOutcome outcome = PlanText(program, PlanOptions{}, /*report=*/false);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_THAT(outcome.text, HasSubstr("%v200000 = foo(%a, t=%v199999)"));
  EXPECT_THAT(outcome.text, Not(HasSubstr("on_device")));
}

}  // namespace
}  // namespace vdev::testing
