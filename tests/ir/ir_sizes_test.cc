// Type sizes are checked where types are made: a value whose type takes 2^63 bytes or more is a
// verifier error located at the parameter, binding or function that has it, for parsed and built
// modules alike; 2^63-1 bytes is still a size.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"
#include "vdev/ir/ir_builder.h"

namespace vdev::ir {
namespace {

using testing::FirstError;
using ::testing::HasSubstr;

constexpr char kTooLarge[] = "which is larger than 2^63-1 bytes";

void ExpectTooLarge(const std::string& text, int line, int col, const std::string& what) {
  Diagnostic d = FirstError(text);
  EXPECT_EQ(d.severity, Severity::kError) << text;
  EXPECT_EQ(d.loc.line, line) << d.message << "\n" << text;
  EXPECT_EQ(d.loc.col, col) << d.message << "\n" << text;
  EXPECT_THAT(d.message, HasSubstr(what)) << text;
  EXPECT_THAT(d.message, HasSubstr(kTooLarge)) << text;
}

// 2^62 + 1 elements of 4 bytes: the element count fits in int64, the bytes do not (they wrap to 4).
TEST(IrSizes, ParameterOverTwoToThe63Bytes) {
  ExpectTooLarge("def @main(%x: f32[4611686018427387905]) {\n  return %x\n}\n", 1, 11,
                 "parameter '%x' has type f32[4611686018427387905]");
}

TEST(IrSizes, ElementCountOverflowIsTooLarge) {
  ExpectTooLarge("def @main(%x: i8[4294967296,4294967296]) {\n  return %x\n}\n", 1, 11, "parameter '%x'");
}

TEST(IrSizes, TheLargestSizeIsAccepted) {
  Diagnostic d = FirstError("def @main(%x: i8[9223372036854775807]) {\n  return %x\n}\n");
  EXPECT_EQ(d.message, "no error");
}

TEST(IrSizes, KnownDimensionsBesideADynamicOneMustFit) {
  ExpectTooLarge("def @main(%x: f32[?,4611686018427387905]) {\n  return %x\n}\n", 1, 11, "parameter '%x'");
  Diagnostic d = FirstError("def @main(%x: f32[?,1152921504606846976]) {\n  return %x\n}\n");
  EXPECT_EQ(d.message, "no error");
}

TEST(IrSizes, ConstType) {
  ExpectTooLarge("def @main(%x: f32[2]) {\n  %c = const(f64[2305843009213693952])\n  return %x\n}\n", 2, 3,
                 "'%c' has type f64[2305843009213693952]");
}

TEST(IrSizes, InferredResultOfAnOp) {
  ExpectTooLarge("def @main(%x: f32[1152921504606846976,1], %y: f32[1,2]) {\n  %z = add(%x, %y)\n  return %z\n}\n", 2,
                 3, "'%z' has type f32[1152921504606846976,2]");
}

// Two fields of 2^62 bytes each: each fits, the tuple does not.
TEST(IrSizes, TupleFieldsSummed) {
  ExpectTooLarge("def @main(%x: f32[1152921504606846976]) {\n  %t = (%x, %x)\n  return %t\n}\n", 2, 3,
                 "'%t' has type (f32[1152921504606846976], f32[1152921504606846976])");
}

TEST(IrSizes, KernelResult) {
  ExpectTooLarge("kernel @k(%x: f32[2]) -> f32[4611686018427387905]\n", 1, 8, "the result of '@k'");
}

TEST(IrSizes, FunctionTypeOfALocalFunction) {
  ExpectTooLarge(
      "def @main(%x: f32[2]) {\n  %f = fn(%y: f32[4611686018427387905]) {\n    return %y\n  }\n  return %x\n}\n", 2, 11,
      "parameter '%y'");
}

TEST(IrSizes, BuiltModulesAreCheckedToo) {
  ModuleBuilder b;
  TypeId huge = b.TensorType(DType::kF32, {4611686018427387905, 4});
  b.BeginFunction("main");
  ValueRef x = b.Param("x", huge);
  b.Return(x);
  b.EndFunction();
  absl::StatusOr<Module> built = std::move(b).Finish();
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("parameter '%x' has type f32[4611686018427387905,4]"));
  EXPECT_THAT(built.status().message(), HasSubstr(kTooLarge));
}

}  // namespace
}  // namespace vdev::ir
