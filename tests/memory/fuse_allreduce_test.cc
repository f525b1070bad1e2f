// Tests of the all-reduce fusion (vdev/memory/fuse_allreduce.h) through the compile pipeline: what it
// fuses, what it leaves alone and why, and how memory lowering treats the fused op.
#include "vdev/memory/fuse_allreduce.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// One tensor-parallel half-block: the second all-reduce goes through a flat view, as the MLP's
// does in examples/memory/tp_transformer_10.vdev.
constexpr char kBlock[] = R"(
def @main(%x: f16[4,8], %w: f16[8,8], %w2: f16[8,8], %g: f16[8], %g2: f16[8]) -> (f16[4,8], f16[4,8]) {
  %o: f16[4,8] = matmul(%x, %w)
  %ar: f16[4,8] = allreduce(%o, op=sum)
  %h: f16[4,8] = add(%x, %ar)
  %n: f16[4,8] = rms_norm(%h, %g, epsilon=0.5)
  %d: f16[4,8] = matmul(%n, %w2)
  %flat: f16[32] = reshape(%d, [32])
  %ar2: f16[32] = allreduce(%flat, op=sum)
  %back: f16[4,8] = reshape(%ar2, [4, 8])
  %h2: f16[4,8] = add(%back, %h)
  %n2: f16[4,8] = rms_norm(%h2, %g2)
  %out = (%h2, %n2)
  return %out
})";

CompileResult CompileOk(const std::string& text, bool fuse = true) {
  CompileOptions options;
  options.lower.fuse_allreduce = fuse;
  absl::StatusOr<CompileResult> compiled = Compile(text, options);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  return compiled.ok() ? *std::move(compiled) : CompileResult{};
}

TEST(FuseAllReduceTest, FusesBothHalvesOfABlock) {
  const CompileResult c = CompileOk(kBlock);
  ASSERT_EQ(c.memory->fused.size(), 2u);
  EXPECT_EQ(c.memory->fused[0].allreduce, "ar");
  EXPECT_EQ(c.memory->fused[0].add, "h");
  EXPECT_EQ(c.memory->fused[0].norm, "n");
  EXPECT_EQ(c.memory->fused[1].allreduce, "ar2");
  EXPECT_EQ(c.memory->fused[1].norm, "n2");
  const std::string text = ir::PrintModule(c.module());
  EXPECT_THAT(text, HasSubstr("vdev.allreduce_add_rms_norm(%o, %x, %g, op=sum, epsilon=0.5, strategy=\"auto\")"));
  // The flat view is read as is (same element count); the residual is the add's other operand.
  EXPECT_THAT(text, HasSubstr("vdev.allreduce_add_rms_norm(%flat, %h, %g2, op=sum, strategy=\"auto\")"));
  EXPECT_THAT(text, HasSubstr("%h: f16[4,8] = %ar_add_norm.0"));
  EXPECT_THAT(text, HasSubstr("%n2: f16[4,8] = %ar2_add_norm.1"));
  EXPECT_THAT(text, Not(HasSubstr("rms_norm(%h")));
  EXPECT_THAT(text, Not(HasSubstr("vdev.allreduce(")));
  // The all-reduce inputs' producers write into ipc_memory, as for an unfused all-reduce.
  const FunctionMemory& main = c.memory->functions.at(0);
  ASSERT_EQ(main.allreduces.size(), 2u);
  for (const AllReduceInfo& a : main.allreduces) {
    EXPECT_TRUE(a.fused);
    EXPECT_TRUE(a.ipc) << a.reason;
  }
  EXPECT_THAT(text, HasSubstr("matmul(%x, %w, out="));
  const nlohmann::json report = nlohmann::json::parse(MemoryReportJson(c.module(), *c.memory));
  EXPECT_EQ(report["functions"]["main"]["allreduces"][0]["fused"], "add + rms_norm") << report.dump(1);
}

TEST(FuseAllReduceTest, OffLeavesTheChainsAlone) {
  const CompileResult c = CompileOk(kBlock, /*fuse=*/false);
  EXPECT_TRUE(c.memory->fused.empty());
  const std::string text = ir::PrintModule(c.module());
  EXPECT_THAT(text, Not(HasSubstr("vdev.allreduce_add_rms_norm")));
  EXPECT_THAT(text, HasSubstr("rms_norm(%h, %g, epsilon=0.5"));
}

// Each program breaks one condition of the fusion; none may be fused.
TEST(FuseAllReduceTest, LeavesChainsThatBreakACondition) {
  const char* kPrograms[] = {
      // the all-reduce's result has a second use
      R"(def @main(%x: f32[2,4], %g: f32[4]) -> (f32[2,4], f32[2,4]) {
  %a: f32[2,4] = relu(%x)
  %ar: f32[2,4] = allreduce(%a, op=sum)
  %h: f32[2,4] = add(%x, %ar)
  %n: f32[2,4] = rms_norm(%h, %g)
  %t = (%n, %ar)
  return %t
})",
      // not a sum
      R"(def @main(%x: f32[2,4], %g: f32[4]) -> f32[2,4] {
  %a: f32[2,4] = relu(%x)
  %ar: f32[2,4] = allreduce(%a, op=max)
  %h: f32[2,4] = add(%x, %ar)
  %n: f32[2,4] = rms_norm(%h, %g)
  return %n
})",
      // the add broadcasts the residual
      R"(def @main(%x: f32[4], %y: f32[2,4], %g: f32[4]) -> f32[2,4] {
  %a: f32[2,4] = relu(%y)
  %ar: f32[2,4] = allreduce(%a, op=sum)
  %h: f32[2,4] = add(%x, %ar)
  %n: f32[2,4] = rms_norm(%h, %g)
  return %n
})",
      // gamma is computed after the add
      R"(def @main(%x: f32[2,4], %g: f32[4]) -> f32[2,4] {
  %a: f32[2,4] = relu(%x)
  %ar: f32[2,4] = allreduce(%a, op=sum)
  %h: f32[2,4] = add(%x, %ar)
  %g1: f32[4] = relu(%g)
  %n: f32[2,4] = rms_norm(%h, %g1)
  return %n
})",
      // no rms_norm of the sum
      R"(def @main(%x: f32[2,4], %g: f32[4]) -> f32[2,4] {
  %a: f32[2,4] = relu(%x)
  %ar: f32[2,4] = allreduce(%a, op=sum)
  %h: f32[2,4] = add(%x, %ar)
  %n: f32[2,4] = rms_norm(%x, %g)
  %s: f32[2,4] = add(%h, %n)
  return %s
})",
  };
  for (const char* program : kPrograms) {
    const CompileResult c = CompileOk(program);
    ASSERT_TRUE(c.memory.has_value()) << program;
    EXPECT_TRUE(c.memory->fused.empty()) << program;
    EXPECT_THAT(ir::PrintModule(c.module()), Not(HasSubstr("vdev.allreduce_add_rms_norm"))) << program;
  }
}

// A hand-written fused op is type-checked: its first operand must match the residual.
TEST(FuseAllReduceTest, TheFusedOpIsTypeChecked) {
  absl::StatusOr<CompileResult> bad = Compile(R"(def @main(%x: f32[2,4], %y: f32[3], %g: f32[4]) -> f32[2,4] {
  %f = vdev.allreduce_add_rms_norm(%y, %x, %g, op=sum)
  %n = %f.1
  return %n
})",
                                              CompileOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("element count of the residual"));
}

}  // namespace
}  // namespace vdev
