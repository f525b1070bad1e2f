// ExplainPlacement and AnnotationSpreadWarnings (vdev/planner/plan_explain.h): the chain from an annotation
// to a value, through ops, calls and returns; the defaults; the warning when one annotation moves
// most of a program, and its absence where an annotation moves a part; and that reading the input
// back from the planned module (PlanResult::input_edits) answers as a kept copy of the input does.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/planner/plan_explain.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

struct Planned {
  ir::Module input;
  PlanResult plan;
};

Planned Plan(const std::string& text) {
  absl::StatusOr<ir::Module> m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(ir::VerifyModule(*m).ok());
  absl::StatusOr<PlanResult> plan = PlanDevices(*m, PlanOptions{});
  EXPECT_TRUE(plan.ok()) << plan.status();
  return {*std::move(m), *std::move(plan)};
}

const VirtualDevice kCuda0 = VirtualDevice::ForDevice(DeviceType::kCUDA, 0);

// exp is pinned to the CPU; %x follows it, the call passes %x to @f, and @f's result is added to
// the annotated value and returned.
constexpr char kThroughACall[] = R"(def @f(%p: f32[4]) -> f32[4] {
  %q = negative(%p)
  return %q
}
def @main(%x: f32[4], %z: f32[4]) -> f32[4] {
  %a = exp(%x)
  %b = on_device(%a, cpu:0)
  %y = @f(%x)
  %w = negative(%z)
  %s = add(%y, %b)
  return %s
}
)";

TEST(ExplainPlacement, TheChainGoesFromTheAnnotationThroughOpsAndCalls) {
  Planned p = Plan(kThroughACall);
  absl::StatusOr<std::string> why = ExplainPlacement(p.input, p.plan, "f:q");
  ASSERT_TRUE(why.ok()) << why.status();
  EXPECT_EQ(*why,
            "%q in @f is on cpu:0:\n"
            "  on_device(%a, cpu:0) at 7:8 puts %a on cpu:0\n"
            "  %a = exp(%x) at 6:3: an op's operands and result share one device, so %x is there too\n"
            "  %y = @f(%x) at 8:3: an argument shares its parameter's device, so %p in @f is there too\n"
            "  %q = negative(%p) at 2:3: an op's operands and result share one device, so %q in @f is there too\n");
}

TEST(ExplainPlacement, AValueNoAnnotationReachesIsExplainedByTheDefaults) {
  Planned p = Plan(kThroughACall);
  absl::StatusOr<std::string> why = ExplainPlacement(p.input, p.plan, "%w");
  ASSERT_TRUE(why.ok()) << why.status();
  // @main's result is %y's, on the CPU; its unconstrained parameter %z and unused %w take it.
  EXPECT_THAT(*why, HasSubstr("%w is on cpu:0 by default: no annotation reaches it through the 2 value(s)"));
}

TEST(ExplainPlacement, AnUnknownNameIsNotFound) {
  Planned p = Plan(kThroughACall);
  EXPECT_EQ(ExplainPlacement(p.input, p.plan, "nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ExplainPlacement(p.input, p.plan, "g:q").status().code(), absl::StatusCode::kNotFound);
}

TEST(AnnotationSpreadWarnings, OneAnnotationThatMovesMostOfTheProgramIsWarnedAbout) {
  // examples/planner/mlp_one_pin.vdev: the relu's pin reaches every value through the residual add.
  Planned p = Plan(R"(def @main(%x: f32[64,512], %w1: f32[512,256], %w2: f32[256,512]) -> f32[64,512] {
  %h = matmul(%x, %w1)
  %r = relu(%h)
  %a = on_device(%r, cpu:0)
  %y = matmul(%a, %w2)
  %s = allreduce(%y, op=sum)
  %out = add(%x, %s)
  return %out
}
)");
  std::vector<Diagnostic> warnings = AnnotationSpreadWarnings(p.input, p.plan, kCuda0);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_EQ(warnings[0].loc, (SourceLoc{4, 8}));
  EXPECT_THAT(warnings[0].message, HasSubstr("on_device(%r, cpu:0) puts 8 of the program's 8 values on cpu:0 "
                                             "instead of the default cuda:0: they share a device with %r through "
                                             "%r = relu(%h) at 3:3, %h = matmul(%x, %w1) at 2:3, "
                                             "%y = matmul(%a, %w2) at 5:3, …"));
  // With cpu:0 as the default, nothing moved.
  EXPECT_THAT(AnnotationSpreadWarnings(p.input, p.plan, VirtualDevice::ForDevice(DeviceType::kCPU, 0)), IsEmpty());
}

// The one spread warning of planning `text` with cuda:0 as the default; "" when there are others.
std::string OnlyWarning(const std::string& text) {
  Planned p = Plan(text);
  std::vector<Diagnostic> warnings = AnnotationSpreadWarnings(p.input, p.plan, kCuda0);
  EXPECT_THAT(warnings, SizeIs(1));
  return warnings.size() == 1 ? warnings[0].message : "";
}

// The whole message, its three constraints included, where the spread runs through calls, a
// function's return and an `if` (whose edges reach bindings made after the `if`'s own); along a
// chain like the planning benchmark's; and through eight annotations, which name nothing, before the
// next constraints (a search deeper than the passes that gather a few nodes' edges).

TEST(AnnotationSpreadWarnings, TheMessageNamesTheFirstThreeConstraintsNearestFirst) {
  constexpr char kTail[] =
      ", … (`vdev plan --explain VALUE` shows the chain for a value; docs/planner.md shows how to pin one op)";
  EXPECT_EQ(OnlyWarning(R"(def @f(%p: f32[4], %k: f32[4]) -> f32[4] {
  %m = multiply(%p, %k)
  return %m
}
def @main(%c: bool[], %x: f32[4], %z: f32[4]) -> f32[4] {
  %t = (%x, %z)
  %x1 = %t.0
  %v = if %c {
    %g = @f(%x1, %z)
    %b = on_device(%g, cpu:0)
    return %b
  } else {
    %n = negative(%x)
    return %n
  }
  %w = add(%v, %z)
  %u = @f(%w, %x)
  return %u
}
)"),
            absl::StrCat("on_device(%g, cpu:0) puts 13 of the program's 13 values on cpu:0 instead of the default "
                         "cuda:0: they share a device with %g through %g = @f(%x1, %z) at 9:5, @f returns its value, "
                         "%u = @f(%w, %x) at 17:3",
                         kTail));
  // Every tenth value of a chain annotated, each add reading the two before it.
  std::string chain = "def @main(%p: f32[4], %q: f32[4]) -> f32[4] {\n  %0 = add(%p, %q)\n  %1 = add(%0, %p)\n";
  for (int i = 2; i < 30; ++i) {
    const std::string name = i % 10 == 9 ? absl::StrCat("a", i) : absl::StrCat(i);
    absl::StrAppend(&chain, "  %", name, " = add(%", i - 1, ", %", i - 2, ")\n");
    if (i % 10 == 9) absl::StrAppend(&chain, "  %", i, " = on_device(%a", i, ", cpu:0)\n");
  }
  absl::StrAppend(&chain, "  return %29\n}\n");
  EXPECT_EQ(OnlyWarning(chain),
            absl::StrCat("on_device(%a9, cpu:0) puts 32 of the program's 32 values on cpu:0 instead of the default "
                         "cuda:0: they share a device with %a9 through %a9 = add(%8, %7) at 11:3, %8 = add(%7, %6) "
                         "at 10:3, %10 = add(%9, %8) at 13:3",
                         kTail));
  std::string nested = "def @main(%x: f32[4], %y: f32[4]) -> f32[4] {\n  %m = exp(%x)\n";
  for (int i = 0; i < 8; ++i)
    absl::StrAppend(&nested, "  %m", i, " = on_device(%m", i == 0 ? "" : absl::StrCat(i - 1),
                    ", cpu:0, constrain_result=true)\n");
  absl::StrAppend(&nested, "  %s = add(%m7, %y)\n  %t = negative(%s)\n  %u = exp(%t)\n  return %u\n}\n");
  EXPECT_EQ(OnlyWarning(nested),
            absl::StrCat("on_device(%m, cpu:0, constrain_result=true) puts 6 of the program's 6 values on cpu:0 "
                         "instead of the default cuda:0: they share a device with %m through %m = exp(%x) at 2:3, "
                         "%s = add(%m7, %y) at 11:3, %t = negative(%s) at 12:3",
                         kTail));
}

TEST(AnnotationSpreadWarnings, AnUnreadAnnotationMovesNothing) {
  // The planner drops an on_device nothing reads; neither the chain nor the warning may use it.
  Planned p = Plan(R"(def @main(%x: f32[4]) -> f32[4] {
  %a = exp(%x)
  %b = on_device(%a, cpu:0)
  %c = negative(%a)
  return %c
}
)");
  EXPECT_THAT(AnnotationSpreadWarnings(p.input, p.plan, kCuda0), IsEmpty());
  absl::StatusOr<std::string> why = ExplainPlacement(p.input, p.plan, "a");
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(*why, HasSubstr("%a is on cuda:0 by default"));
}

TEST(AnnotationSpreadWarnings, AnAnnotationThatMovesAPartIsNot) {
  // The spec's left add: a, b and %0 on the CPU, 3 of the 7 values; and what the annotated add
  // asks for by itself (%0 and its operands) does not count, so 3 of 4 would not either.
  Planned p = Plan(R"(def @main(%a: f32[5,7], %b: f32[5,7], %c: f32[5,7], %d: f32[5,7]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = add(%c, %d)
  %3 = subtract(%1, %2)
  return %3
}
)");
  EXPECT_THAT(AnnotationSpreadWarnings(p.input, p.plan, kCuda0), IsEmpty());
  absl::StatusOr<std::string> why = ExplainPlacement(p.input, p.plan, "b");
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(*why,
              HasSubstr("on_device(%0, cpu:0) at 3:8 puts %0 on cpu:0\n"
                        "  %0 = add(%a, %b) at 2:3: an op's operands and result share one device, so %b is there too"));
}

// Conflicting pins (a copy for the conflict), a written device_copy, a call and a returned
// annotation: every kind of edit planning makes to the input.
constexpr char kEveryEdit[] = R"(def @f(%p: f32[4]) -> f32[4] {
  %q = negative(%p)
  %r = on_device(%q, cpu:0)
  return %r
}
def @main(%x: f32[4], %z: f32[4]) -> f32[4] {
  %a = exp(%x)
  %b = on_device(%a, cpu:0)
  %c = on_device(%a, cuda:1)
  %y = @f(%b)
  %d = device_copy(%z, src=cuda:0, dst=cpu:0)
  %s = add(%y, %d)
  %t = negative(%c)
  %u = add(%s, %t)
  return %u
}
)";

TEST(PlanInputInPlace, AnswersAsAKeptInputDoesAndLeavesThePlanAsItWas) {
  for (const char* text : {kThroughACall, kEveryEdit}) {
    SCOPED_TRACE(text);
    Planned p = Plan(text);
    EXPECT_THAT(p.plan.input_edits.operands, Not(IsEmpty()));
    const std::string planned = ir::PrintModule(p.plan.module);
    for (const VirtualDevice& default_device : {kCuda0, VirtualDevice::ForDevice(DeviceType::kCPU, 0)}) {
      std::vector<Diagnostic> kept = AnnotationSpreadWarnings(p.input, p.plan, default_device);
      std::vector<Diagnostic> in_place = AnnotationSpreadWarnings(p.plan, default_device);
      ASSERT_EQ(in_place.size(), kept.size());
      for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(in_place[i].message, kept[i].message);
    }
    std::vector<std::string> names;
    for (const ir::Param& param : p.input.params)
      names.push_back(absl::StrCat(ir::FunctionPath(p.input, param.func), ":", p.input.Name(param.name)));
    for (const ir::Binding& b : p.input.bindings)
      names.push_back(absl::StrCat(ir::FunctionPath(p.input, p.input.blocks[b.block].func), ":", p.input.Name(b.name)));
    for (const std::string& name : names) {
      absl::StatusOr<std::string> kept = ExplainPlacement(p.input, p.plan, name);
      absl::StatusOr<std::string> in_place = ExplainPlacement(p.plan, name);
      ASSERT_EQ(in_place.ok(), kept.ok()) << name;
      if (kept.ok()) EXPECT_EQ(*in_place, *kept) << name;
    }
    EXPECT_EQ(ir::PrintModule(p.plan.module), planned);
  }
}

}  // namespace
}  // namespace vdev
