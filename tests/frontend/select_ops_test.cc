// The type rules of the ops the ONNX frontend maps onto (where, broadcast_to, strided_slice,
// log_softmax, reciprocal): inferred types, and bad shapes refused at their line and column.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/diagnostic.h"

namespace vdev::ir {
namespace {

using ::testing::HasSubstr;

// The verifier's diagnostic for `body` inside @main(%c: bool[2,1], %x: f32[3], %m: f32[2,3]).
Diagnostic Refusal(const std::string& body) {
  const std::string text = "def @main(%c: bool[2,1], %x: f32[3], %m: f32[2,3]) {\n" + body + "\n  return %y\n}\n";
  Diagnostic d;
  absl::StatusOr<Module> m = ParseModule(text, &d);
  EXPECT_TRUE(m.ok()) << d.message;
  EXPECT_FALSE(VerifyModule(*m, &d).ok()) << body;
  return d;
}

std::string TypeOf(const std::string& body) {
  const std::string text = "def @main(%c: bool[2,1], %x: f32[3], %m: f32[2,3]) {\n" + body + "\n  return %y\n}\n";
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok());
  Diagnostic d;
  EXPECT_TRUE(VerifyModule(*m, &d).ok()) << d.message;
  return m->types.ToString(m->bindings.back().type);
}

TEST(FrontendOps, TypesFollowBroadcastingAndSlicing) {
  EXPECT_EQ(TypeOf("  %y = where(%c, %x, %m)"), "f32[2,3]");
  EXPECT_EQ(TypeOf("  %y = broadcast_to(%x, shape=[4,3])"), "f32[4,3]");
  EXPECT_EQ(TypeOf("  %y = strided_slice(%m, begin=[1, 2], end=[2, -1], strides=[1, -1])"), "f32[1,3]");
  EXPECT_EQ(TypeOf("  %y = strided_slice(%x, begin=[0], end=[3], strides=[2])"), "f32[2]");
  EXPECT_EQ(TypeOf("  %y = log_softmax(%m, axis=0)"), "f32[2,3]");
  EXPECT_EQ(TypeOf("  %y = reciprocal(%x)"), "f32[3]");
}

TEST(FrontendOps, BadShapesAreRefusedWhereWritten) {
  Diagnostic d = Refusal("  %y = where(%x, %x, %x)");
  EXPECT_EQ(d.loc.line, 2);
  EXPECT_THAT(d.message, HasSubstr("the condition must be bool"));
  d = Refusal("  %y = broadcast_to(%m, shape=[3,3])");
  EXPECT_EQ(d.loc.line, 2);
  EXPECT_THAT(d.message, HasSubstr("do not broadcast"));
  d = Refusal("  %y = strided_slice(%x, begin=[1], end=[5], strides=[1])");
  EXPECT_EQ(d.loc.line, 2);
  EXPECT_THAT(d.message, HasSubstr("leave [0, 3)"));
  d = Refusal("  %y = strided_slice(%x, begin=[0], end=[3], strides=[0])");
  EXPECT_THAT(d.message, HasSubstr("strides must not be 0"));
  d = Refusal("  %y = log_softmax(%x, axis=1)");
  EXPECT_THAT(d.message, HasSubstr("out of range"));
}

}  // namespace
}  // namespace vdev::ir
