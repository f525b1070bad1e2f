// Bad input: every error is located (line:col) and formatted with the line and a caret.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"

namespace vdev::ir {
namespace {

using testing::FirstError;
using ::testing::HasSubstr;

struct Expected {
  int line;
  int col;
  const char* message;
};

void ExpectError(const std::string& text, Expected e) {
  Diagnostic d = FirstError(text);
  EXPECT_EQ(d.severity, Severity::kError) << text;
  EXPECT_EQ(d.loc.line, e.line) << d.message << "\n" << text;
  EXPECT_EQ(d.loc.col, e.col) << d.message << "\n" << text;
  EXPECT_THAT(d.message, HasSubstr(e.message)) << text;
}

// --- The six basic kinds: syntax, undefined and duplicate names, device literals, targets, return ---

TEST(IrErrors, Syntax) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a %a)\n  return %0\n}\n",
              {2, 15, "expected ',' or ')', found '%a'"});
}

TEST(IrErrors, UndefinedName) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %x)\n  return %0\n}\n", {2, 16, "undefined name '%x'"});
}

TEST(IrErrors, DuplicateName) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  %0 = add(%0, %a)\n  return %0\n}\n",
              {3, 3, "duplicate name '%0' (already defined at 2:3)"});
}

TEST(IrErrors, BadDeviceLiteral) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  %1 = on_device(%0, gpu:0)\n  return %1\n}\n",
              {3, 22, "unknown device type 'gpu'"});
}

TEST(IrErrors, BadDeviceLiteralThatStartsLikeAnEarlierOne) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = on_device(%a, cuda:0)\n  %1 = on_device(%0, cuda:0x)\n  return %1\n}\n",
              {3, 28, "unexpected 'x' in device literal"});
}

TEST(IrErrors, DeviceTargetMismatch) {
  ExpectError("def @main(%a: f32[2] on cpu:0[cuda]) {\n  return %a\n}\n", {1, 31, "disagrees with target"});
}

TEST(IrErrors, MissingReturn) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n}\n", {3, 1, "missing 'return'"});
}

TEST(IrErrors, FormattedWithLineAndCaret) {
  std::string text = "def @main(%a: f32[2]) {\n  %0 = add(%a, %x)\n  return %0\n}\n";
  EXPECT_EQ(FormatDiagnostic("bad.vdev", text, FirstError(text)),
            "bad.vdev:2:16: error: undefined name '%x'\n"
            "    %0 = add(%a, %x)\n"
            "                 ^\n");
}

// --- More located errors ---------------------------------------------------------------------

TEST(IrErrors, DeviceMismatchInAttribute) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = device_copy(%a, src=cpu:0, dst=cpu:1[cuda])\n  return %0\n}\n",
              {2, 45, "disagrees with target"});
}

TEST(IrErrors, UseBeforeDefinition) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%1, %a)\n  %1 = add(%a, %a)\n  return %0\n}\n",
              {2, 12, "undefined name '%1'"});
}

TEST(IrErrors, ArmNamesAreNotVisibleAfterTheIf) {
  ExpectError(
      "def @main(%c: bool[], %a: f32[2]) {\n  %r = if %c {\n    %t = negative(%a)\n    return %t\n  } else {\n"
      "    return %a\n  }\n  %u = add(%t, %r)\n  return %u\n}\n",
      {8, 12, "undefined name '%t'"});
}

TEST(IrErrors, NamesAreUniqueAcrossIfArms) {
  ExpectError(
      "def @main(%c: bool[], %a: f32[2]) {\n  %r = if %c {\n    %t = negative(%a)\n    return %t\n  } else {\n"
      "    %t = exp(%a)\n    return %t\n  }\n  return %r\n}\n",
      {6, 5, "duplicate name '%t' (already defined at 3:5)"});
}

TEST(IrErrors, ClosureMayNotShadowACapturedName) {
  ExpectError("def @main(%a: f32[2]) {\n  %f = fn(%a: f32[2]) {\n    return %a\n  }\n  return %f\n}\n",
              {2, 11, "duplicate name '%a'"});
}

TEST(IrErrors, SiblingFunctionsMayReuseNames) {
  EXPECT_EQ(FirstError("def @f(%a: f32[2]) {\n  return %a\n}\ndef @g(%a: f32[2]) {\n  %f = fn(%b: f32[2]) {\n"
                       "    return %b\n  }\n  %h = fn(%b: f32[2]) {\n    return %b\n  }\n  return %a\n}\n")
                .message,
            "no error");
}

TEST(IrErrors, UndefinedGlobal) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = @nowhere(%a)\n  return %0\n}\n", {2, 8, "undefined global '@nowhere'"});
}

TEST(IrErrors, DuplicateGlobal) {
  ExpectError("def @f(%a: f32[2]) {\n  return %a\n}\nkernel @f(%a: f32[2]) -> f32[2]\n",
              {4, 8, "duplicate global '@f' (already defined at 1:5)"});
}

TEST(IrErrors, BuiltinArity) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = on_device(%a)\n  return %0\n}\n",
              {2, 8, "'on_device' takes 2 arguments, got 1"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = device_copy(%a, src=cpu:0)\n  return %0\n}\n",
              {2, 8, "'device_copy' needs the attribute 'dst'"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = on_device(%a, %a)\n  return %0\n}\n",
              {2, 22, "argument 2 of 'on_device' must be a device literal"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = device_copy(%a, src=cpu:0, dst=fast)\n  return %0\n}\n",
              {2, 39, "attribute 'dst' must be a device literal"});
}

TEST(IrErrors, WrittenTypesMustAgree) {
  ExpectError("def @main(%a: f32[2]) {\n  %0: f32[3] = add(%a, %a)\n  return %0\n}\n",
              {2, 3, "'%0' is declared f32[3] but its value has type f32[2]"});
  ExpectError("def @main(%a: f32[2]) -> f16[2] {\n  return %a\n}\n",
              {2, 3, "returns f32[2] but the result type is f16[2]"});
  ExpectError("def @f(%a: f32[2]) {\n  return %a\n}\ndef @main(%b: f32[3]) {\n  %0 = @f(%b)\n  return %0\n}\n",
              {5, 11, "argument 1 of '@f' has type f32[3], expected f32[2]"});
  ExpectError("def @main(%a: f32[2], %b: f32[3]) {\n  %0 = add(%a, %b)\n  return %0\n}\n",
              {2, 8, "shapes [2] and [3] do not broadcast"});
}

TEST(IrErrors, IfNeedsElse) {
  ExpectError("def @main(%c: bool[], %a: f32[2]) {\n  %r = if %c {\n    return %a\n  }\n  return %r\n}\n",
              {5, 3, "expected 'else', found 'return'"});
}

TEST(IrErrors, BindingsStartOnTheirOwnLine) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %a) %1 = add(%a, %a)\n  return %0\n}\n",
              {2, 20, "expected the end of the line after the binding"});
  ExpectError("def @main(%a: f32[2]) { %0 = add(%a, %a)\n  return %0\n}\n", {1, 25, "must start on its own line"});
}

TEST(IrErrors, LexicalErrors) {
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, 3x)\n  return %0\n}\n", {2, 17, "malformed number"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = f(%a, s=\"open)\n  return %0\n}\n", {2, 16, "unterminated string"});
  ExpectError("def @main(% : f32[2]) {\n  return %a\n}\n", {1, 12, "expected a name"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, $)\n  return %0\n}\n", {2, 16, "unexpected character"});
}

TEST(IrErrors, ConfigErrors) {
  ExpectError("config { targets = [llvm, tpu] }\n", {1, 27, "unknown target kind 'tpu'"});
  ExpectError("config { default = cuda:0, default = cpu:0 }\n", {1, 28, "duplicate config entry 'default'"});
  ExpectError("config { host = cpu:x }\n", {1, 21, "expected a non-negative device id"});
}

TEST(IrErrors, TypeErrors) {
  ExpectError("def @main(%a: f33[2]) {\n  return %a\n}\n", {1, 15, "expected a type"});
  ExpectError("def @main(%a: f32[-1]) {\n  return %a\n}\n", {1, 19, "non-negative"});
  ExpectError("def @main(%a: fn(f32[2]) f32[2]) {\n  return %a\n}\n", {1, 26, "expected '->'"});
}

TEST(IrErrors, EmptyAndGarbageInput) {
  EXPECT_EQ(FirstError("").message, "no error");
  EXPECT_EQ(FirstError("# only a comment\n").message, "no error");
  ExpectError("return %x\n", {1, 1, "expected 'def', 'kernel' or 'config'"});
  ExpectError("def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n", {3, 1, "expected a binding '%name = …' or 'return'"});
}

}  // namespace
}  // namespace vdev::ir
