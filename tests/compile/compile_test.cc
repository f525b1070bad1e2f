// The pipeline of compile.h: stages, errors by stage, and the copies the planner adds for a
// conflict running through lowering like every other binding.
#include "vdev/compile/compile.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;

// %0 is needed on cpu:0 (through %1) and on cuda:0 (%3): the planner copies it for the later use
// and warns.
constexpr char kConflict[] = R"(def @main(%a: f32[2,3]) {
  %0 = exp(%a)
  %1 = on_device(%0, cpu:0)
  %2 = negative(%1)
  %3 = on_device(%0, cuda:0)
  %4 = multiply(%2, %3)
  return %4
}
)";
TEST(CompileTest, PlannerAddedCopiesAreTypedAndGetStorage) {
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(kConflict, CompileOptions{}, &error);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << " at stage " << CompileStageName(error.stage);
  ASSERT_TRUE(compiled->memory.has_value());
  EXPECT_EQ(compiled->plan.stats.conflict_copies, 1u);
  EXPECT_EQ(compiled->diagnostics.size(), 1u);
  // Two copies: %1 (the on_device, now a copy to negative's device) and %0_copy, added.
  ASSERT_EQ(compiled->plan.copies.size(), 2u);
  for (const PlannedCopy& copy : compiled->plan.copies) {
    const ir::Module& m = compiled->module();
    EXPECT_NE(m.bindings[copy.binding].type, ir::kNoType) << m.Name(m.bindings[copy.binding].name);
    int tensors = 0;
    for (const FunctionMemory& f : compiled->memory->functions) {
      for (const PlannedTensor& t : f.tensors) tensors += t.binding == copy.binding && t.bytes == 24;
    }
    EXPECT_EQ(tensors, 1) << "the added copy has no planned 24-byte tensor";
  }
  std::string text = ir::PrintModule(compiled->module());
  EXPECT_THAT(text, HasSubstr("%0_copy: f32[2,3] = device_copy(%0, src=cpu:0, dst=cuda:0, out=%t"));
  EXPECT_TRUE(CheckLoweredMemory(compiled->module()).ok());
}

TEST(CompileTest, StopAfterTypesPlansWithoutLowering) {
  CompileOptions options;
  options.stop_after = CompileStage::kTypes;
  absl::StatusOr<CompileResult> compiled = Compile(kConflict, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_FALSE(compiled->memory.has_value());
  EXPECT_THAT(ir::PrintModule(compiled->module()), HasSubstr("%0_copy = device_copy(%0, src=cpu:0, dst=cuda:0)"));
  for (const PlannedCopy& copy : compiled->plan.copies) {
    EXPECT_NE(compiled->module().bindings[copy.binding].type, ir::kNoType);
  }
}

// A tuple annotated as a whole and one of its fields used elsewhere: the planner projects and
// copies. Together with kConflict, the kinds of binding planning adds.
constexpr char kTupleConflict[] = R"(def @main(%a: f32[2,3], %b: f32[4]) {
  %t = (%a, %b)
  %u = on_device(%t, cpu:0)
  %f = %u.1
  %g = negative(%f)
  %h = %t.0
  %k = on_device(%h, cuda:1)
  %m = exp(%k)
  %r = (%g, %m)
  return %r
}
)";

TEST(CompileTest, TheTypesStageTypesAddedBindingsAsVerificationDoes) {
  CompileOptions options;
  options.stop_after = CompileStage::kTypes;
  for (const char* text : {kConflict, kTupleConflict}) {
    SCOPED_TRACE(text);
    absl::StatusOr<CompileResult> compiled = Compile(text, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const ir::Module& typed = compiled->module();
    EXPECT_GT(typed.bindings.size(), compiled->plan.input_bindings) << "planning added no binding";
    ir::Module verified = typed.Clone();
    for (ir::Binding& b : verified.bindings) b.type = ir::kNoType;
    ASSERT_TRUE(ir::VerifyModule(verified).ok());
    for (const ir::Block& block : typed.blocks) {  // the planned program: what its blocks list
      for (ir::BindingId b : block.bindings) {
        EXPECT_EQ(typed.types.ToString(typed.bindings[b].type), verified.types.ToString(verified.bindings[b].type))
            << typed.Name(typed.bindings[b].name);
      }
    }
  }
}

TEST(CompileTest, ParseErrorIsLocatedAtTheParseStage) {
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile("def @main() {\n  %0 = (\n}\n", CompileOptions{}, &error);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(error.stage, CompileStage::kParse);
  EXPECT_EQ(error.diagnostic.loc, (SourceLoc{3, 1}));  // the `}` where an operand belongs
}

TEST(CompileTest, VerifyErrorStopsBeforePlanning) {
  CompileError error;
  absl::StatusOr<CompileResult> compiled =
      Compile("def @main(%a: f32[2]) {\n  %0 = add(%a)\n  return %0\n}\n", CompileOptions{}, &error);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(error.stage, CompileStage::kVerify);
  EXPECT_EQ(error.diagnostic.loc.line, 2);
}

TEST(CompileTest, StrictConflictFailsAtThePlanStageWithItsAnnotations) {
  CompileOptions options;
  options.plan.strict = true;
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(kConflict, options, &error);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(error.stage, CompileStage::kPlan);
  EXPECT_EQ(error.diagnostic.loc.line, 5);
  EXPECT_EQ(error.plan.conflicts.size(), 2u);
}

TEST(CompileTest, UnverifiedModuleIsVerifiedThenCompiled) {
  absl::StatusOr<ir::Module> parsed = ir::ParseModule(kConflict);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->bindings[0].type, ir::kNoType);  // parsing alone infers nothing
  absl::StatusOr<CompileResult> compiled = Compile(*std::move(parsed), CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GT(compiled->memory->pool_bytes, 0);
}

// CompilePlanned on a plan made outside the pipeline gives what Compile gives from the text.
TEST(CompileTest, CompilePlannedContinuesFromAPlanMadeElsewhere) {
  absl::StatusOr<CompileResult> whole = Compile(kConflict, CompileOptions{});
  ASSERT_TRUE(whole.ok()) << whole.status();
  absl::StatusOr<CompileResult> verified = Compile(kConflict, CompileOptions{.stop_after = CompileStage::kVerify});
  ASSERT_TRUE(verified.ok()) << verified.status();
  absl::StatusOr<PlanResult> plan = PlanDevices(verified->module(), PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<CompileResult> rest = CompilePlanned(*std::move(plan), CompileOptions{});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(ir::PrintModule(rest->module()), ir::PrintModule(whole->module()));
  EXPECT_EQ(MemoryReportJson(rest->module(), *rest->memory), MemoryReportJson(whole->module(), *whole->memory));
  EXPECT_EQ(rest->diagnostics.size(), 1u);  // the plan's conflict warning

  absl::StatusOr<PlanResult> again = PlanDevices(verified->module(), PlanOptions{});
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<CompileResult> typed =
      CompilePlanned(*std::move(again), CompileOptions{.stop_after = CompileStage::kTypes});
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_FALSE(typed->memory.has_value());
}

TEST(CompileTest, OptimizedPlanRunsThroughTheWholePipeline) {
  CompileOptions options;
  options.optimize_for = DefaultMachine(2);
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(kConflict, options, &error);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << " at stage " << CompileStageName(error.stage);
  ASSERT_TRUE(compiled->optimization.has_value());
  EXPECT_TRUE(compiled->optimization->optimal);
  EXPECT_LE(compiled->optimization->cost.total, compiled->optimization->default_cost.total);
  EXPECT_GT(compiled->memory->pool_bytes, 0);                          // lowered and checked
  EXPECT_TRUE(compiled->optimization->plan.module.functions.empty());  // moved into `plan`
  std::string report = OptimizedReportJson(compiled->plan, *compiled->optimization, *options.optimize_for);
  EXPECT_THAT(report, HasSubstr("\"peak_bytes\""));
  EXPECT_THAT(report, HasSubstr("\"default_cost\""));
}

TEST(CompileTest, CapacityFailureIsAPlanStageErrorWithItsValues) {
  CompileOptions options;
  options.optimize_for = DefaultMachine(1);
  for (DeviceSpec& spec : options.optimize_for->specs) spec.memory_bytes = 16;  // 4 floats
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(kConflict, options, &error);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(error.stage, CompileStage::kPlan);
  EXPECT_TRUE(error.diagnostic.loc.valid());
  EXPECT_FALSE(error.plan.conflicts.empty());  // the values that do not fit, located
}

// An annotation read only through an attribute (the plan fuzzer's finding): planned into the copy
// the attribute names, typed, given storage, and kept alive up to the op that names it.
TEST(CompileTest, AttributeNamingAValueIsARead) {
  constexpr char kProgram[] = R"(def @main(%a: f32[2,3], %b: f32[2,3]) {
  %0 = negative(%a)
  %1 = on_device(%0, cpu:0)
  %2 = add(%b, %b, t=%1)
  return %2
}
)";
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(kProgram, CompileOptions{}, &error);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << " at stage " << CompileStageName(error.stage);
  const ir::Module& m = compiled->module();
  std::string text = ir::PrintModule(m);
  EXPECT_THAT(text, HasSubstr("%1: f32[2,3] = device_copy(%0, src=cpu:0, dst=cuda:0, out=%t"));
  EXPECT_THAT(text, HasSubstr(", t=%1"));
  ASSERT_EQ(compiled->plan.copies.size(), 1u);
  EXPECT_EQ(m.Name(m.bindings[compiled->plan.copies[0].into].name), "2");
  std::string report = MemoryReportJson(m, *compiled->memory);
  EXPECT_THAT(report, HasSubstr("\"1\""));  // the copy has a tensor of its own
  EXPECT_TRUE(CheckLoweredMemory(m).ok());
  // The planned text (before lowering) plans to itself.
  absl::StatusOr<CompileResult> typed = Compile(kProgram, CompileOptions{.stop_after = CompileStage::kTypes});
  ASSERT_TRUE(typed.ok()) << typed.status();
  std::string planned = ir::PrintModule(typed->module());
  absl::StatusOr<CompileResult> again = Compile(planned, CompileOptions{.stop_after = CompileStage::kTypes});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ir::PrintModule(again->module()), planned);
}

}  // namespace
}  // namespace vdev

namespace vdev {
namespace {

// `depth` closures inside each other, each called by the one around it; the innermost adds its
// parameter to @main's (a capture across every level) and pins the sum to the CPU.
std::string CalledClosures(int depth) {
  std::string text = "def @main(%x: f32[2]) {\n";
  for (int i = 0; i < depth; ++i) absl::StrAppend(&text, "%f", i, " = fn(%y", i, ": f32[2]) {\n");
  absl::StrAppend(&text, "%z = add(%y", depth - 1, ", %x)\n%w = on_device(%z, cpu:0)\nreturn %w\n");
  for (int i = depth; i-- > 0;) {
    absl::StrAppend(&text, "}\n%r", i, " = %f", i, "(", i == 0 ? std::string("%x") : absl::StrCat("%y", i - 1),
                    ")\nreturn %r", i, "\n");
  }
  return text + "}\n";
}

TEST(CompileTest, TwoHundredThousandNestedClosuresCompileWithoutRecursion) {
  // Every stage walks the nesting with an explicit stack: parse, verify, plan, types, lower, check,
  // and the printer of the lowered text.
  constexpr int kDepth = 200'000;
  CompileError error;
  absl::StatusOr<CompileResult> compiled = Compile(CalledClosures(kDepth), CompileOptions{}, &error);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << " at stage " << CompileStageName(error.stage);
  const ir::Module& m = compiled->module();
  EXPECT_EQ(m.functions.size(), kDepth + 1u);
  EXPECT_EQ(m.Device(m.functions[m.items[0]].result_device).ToString(), "cpu:0");
  EXPECT_TRUE(compiled->plan.copies.empty());
  // The lowered text reads back.
  absl::StatusOr<ir::Module> again = ir::ParseModule(ir::PrintModule(m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->functions.size(), kDepth + 1u);
}

}  // namespace
}  // namespace vdev
