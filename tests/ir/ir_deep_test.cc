// Long and deep inputs: 200,000-binding chains and 10,000-deep nesting parse, verify, print and
// walk without recursion; deep garbage is rejected cleanly.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_generators.h"
#include "ir/ir_test_util.h"

namespace vdev::ir {
namespace {

using testing::FirstError;
using ::testing::HasSubstr;
using testing::ParseAndVerify;

constexpr int kDepth = 10'000;

void ExpectRoundTrip(const std::string& text, size_t bindings) {
  std::string error;
  std::optional<Module> m = ParseAndVerify(text, &error);
  ASSERT_TRUE(m.has_value()) << error.substr(0, 500);
  EXPECT_EQ(m->bindings.size(), bindings);
  std::string printed = PrintModule(*m);
  std::optional<Module> again = ParseAndVerify(printed, &error);
  ASSERT_TRUE(again.has_value()) << error.substr(0, 500);
  EXPECT_EQ(PrintModule(*again), printed);
}

TEST(IrDeep, ChainOf200000Bindings) {
  std::string text = testing::ChainModule(200'000);
  ExpectRoundTrip(text, 200'000);
  std::optional<Module> m = ParseAndVerify(text);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->types.ToString(m->bindings.back().type), "f32[16,16]");
}

TEST(IrDeep, NestedClosures) {
  ExpectRoundTrip(testing::NestedFnModule(kDepth), kDepth);
  std::optional<Module> m = ParseAndVerify(testing::NestedFnModule(kDepth));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->functions.size(), kDepth + 1u);
  // The innermost function returns the outermost parameter: a capture across every level.
  const Block& inner = m->blocks[m->functions.back().body];
  EXPECT_EQ(inner.result.value, ValueRef::Param(0));
  // The walk reaches the bottom and comes back.
  struct Depth : Visitor {
    int depth = 0, max_depth = 0;
    void EnterFunction(FuncId) override { max_depth = std::max(max_depth, ++depth); }
    void ExitFunction(FuncId) override { --depth; }
  } walk;
  WalkModule(*m, walk);
  EXPECT_EQ(walk.max_depth, kDepth + 1);
  EXPECT_EQ(walk.depth, 0);
}

TEST(IrDeep, NestedIfs) { ExpectRoundTrip(testing::NestedIfModule(kDepth), kDepth); }

TEST(IrDeep, NestedTupleTypes) {
  std::string text = testing::NestedTupleTypeModule(kDepth);
  ExpectRoundTrip(text, 0);
  EXPECT_EQ(PrintModule(*ParseAndVerify(text)), text);
}

TEST(IrDeep, NestedFunctionTypes) {
  std::string type = "f32[2]";
  std::string text = "def @main(%f: ";
  for (int i = 0; i < kDepth; ++i) text += "fn(f32[2]) -> ";
  text += "f32[2]) {\n  return %f\n}\n";
  ExpectRoundTrip(text, 0);
}

TEST(IrDeep, UnclosedParenthesesAreRejected) {
  std::string text = "def @main(%a: " + std::string(kDepth, '(');
  Diagnostic d = FirstError(text);
  EXPECT_THAT(d.message, HasSubstr("expected a type"));
  EXPECT_EQ(d.loc.line, 1);
  EXPECT_EQ(d.loc.col, 15 + kDepth);
}

TEST(IrDeep, UnclosedBlocksAreRejected) {
  std::string text = "def @main() {\n";
  for (int i = 0; i < kDepth; ++i) text += "%f" + std::to_string(i) + " = fn() {\n";
  Diagnostic d = FirstError(text);
  EXPECT_THAT(d.message, HasSubstr("expected a binding"));
  EXPECT_EQ(d.loc.line, kDepth + 2);
}

TEST(IrDeep, UnclosedOpenBracketsAreRejected) {
  std::string text = "def @main(%a: f32[2]) {\n  %0 = f(" + std::string(kDepth, '[');
  Diagnostic d = FirstError(text);
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.loc.line, 2);
}

}  // namespace
}  // namespace vdev::ir
