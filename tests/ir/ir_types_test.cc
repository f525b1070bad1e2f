// Type inference of the built-in and standard ops, and run-time registry extension.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"
#include "vdev/ir/op_registry.h"

namespace vdev::ir {
namespace {

using testing::FirstError;
using ::testing::HasSubstr;
using testing::ParseAndVerify;

// The inferred type of the returned binding of `def @main(params) { %r = expr  return %r }`.
std::string TypeOf(const std::string& params, const std::string& expr) {
  std::string text = "def @main(" + params + ") {\n  %r = " + expr + "\n  return %r\n}\n";
  std::string error;
  std::optional<Module> m = ParseAndVerify(text, &error);
  if (!m) return "error: " + error;
  return m->types.ToString(m->bindings.back().type);
}

TEST(IrTypes, ElementwiseBroadcasting) {
  EXPECT_EQ(TypeOf("%a: f32[4,1,3], %b: f32[5,1]", "add(%a, %b)"), "f32[4,5,3]");
  EXPECT_EQ(TypeOf("%a: f32[?,3], %b: f32[3]", "multiply(%a, %b)"), "f32[?,3]");
  EXPECT_EQ(TypeOf("%a: f32[?,1], %b: f32[7,3]", "subtract(%a, %b)"), "f32[7,3]");
  EXPECT_EQ(TypeOf("%a: f32[2,3]", "divide(%a, 2.0)"), "f32[2,3]");
  EXPECT_EQ(TypeOf("%a: f32[2,3], %b: f32[3]", "less(%a, %b)"), "bool[2,3]");
  EXPECT_EQ(TypeOf("%a: f16[8]", "sigmoid(%a)"), "f16[8]");
  EXPECT_EQ(TypeOf("%a: f16[8]", "cast(%a, dtype=i32)"), "i32[8]");
  EXPECT_THAT(TypeOf("%a: f32[2], %b: i32[2]", "add(%a, %b)"), HasSubstr("differ in dtype"));
}

TEST(IrTypes, Matmul) {
  EXPECT_EQ(TypeOf("%a: f32[8,?,16], %b: f32[16,32]", "matmul(%a, %b)"), "f32[8,?,32]");
  EXPECT_THAT(TypeOf("%a: f32[2,3], %b: f32[4,5]", "matmul(%a, %b)"), HasSubstr("inner dimensions 3 and 4 differ"));
}

TEST(IrTypes, ReshapeSplitConcat) {
  EXPECT_EQ(TypeOf("%a: f32[4,6]", "reshape(%a, newshape=[3,-1])"), "f32[3,8]");
  EXPECT_EQ(TypeOf("%a: f32[4,6]", "reshape(%a, [0,2,3])"), "f32[4,2,3]");
  EXPECT_THAT(TypeOf("%a: f32[4,6]", "reshape(%a, newshape=[5,5])"), HasSubstr("cannot reshape"));
  EXPECT_EQ(TypeOf("%a: f32[4,6]", "split(%a, indices_or_sections=3, axis=1)"), "(f32[4,2], f32[4,2], f32[4,2])");
  EXPECT_EQ(TypeOf("%a: f32[10]", "split(%a, indices_or_sections=[2,5])"), "(f32[2], f32[3], f32[5])");
  EXPECT_EQ(TypeOf("%a: f32[2,3], %b: f32[2,5]", "concat(%a, %b, axis=-1)"), "f32[2,8]");
  EXPECT_THAT(TypeOf("%a: f32[2,3], %b: f32[3,5]", "concat(%a, %b, axis=1)"), HasSubstr("cannot concatenate"));
}

TEST(IrTypes, ConcatOfATuple) {
  std::optional<Module> m = ParseAndVerify(
      "def @main(%a: f32[2,3], %b: f32[1,3]) {\n  %t = (%a, %b)\n  %c = concatenate(%t)\n  return %c\n}\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->types.ToString(m->bindings.back().type), "f32[3,3]");
}

TEST(IrTypes, Reductions) {
  EXPECT_EQ(TypeOf("%a: f32[2,3,4]", "sum(%a, axis=1)"), "f32[2,4]");
  EXPECT_EQ(TypeOf("%a: f32[2,3,4]", "mean(%a, axis=[0,-1], keepdims=true)"), "f32[1,3,1]");
  EXPECT_EQ(TypeOf("%a: f32[2,3,4]", "max(%a)"), "f32[]");
  EXPECT_EQ(TypeOf("%a: f32[2,3]", "argmax(%a, axis=1)"), "i64[2]");
  EXPECT_THAT(TypeOf("%a: f32[2,3]", "sum(%a, axis=2)"), HasSubstr("axis 2 is out of range"));
}

TEST(IrTypes, Conv2dAndLayout) {
  EXPECT_EQ(TypeOf("%x: f32[1,3,224,224], %w: f32[64,3,7,7]", "nn.conv2d(%x, %w, strides=[2,2], padding=[3,3])"),
            "f32[1,64,112,112]");
  EXPECT_EQ(TypeOf("%x: f32[1,32,56,56], %w: f32[32,1,3,3]", "nn.conv2d(%x, %w, padding=[1], groups=32)"),
            "f32[1,32,56,56]");
  EXPECT_THAT(TypeOf("%x: f32[1,4,8,8], %w: f32[8,3,3,3]", "nn.conv2d(%x, %w)"), HasSubstr("4 channels"));
  EXPECT_EQ(TypeOf("%x: f32[1,3,224,224]", "layout_transform(%x, src_layout=\"NCHW\", dst_layout=\"NHWC\")"),
            "f32[1,224,224,3]");
  EXPECT_EQ(TypeOf("%x: f32[1,3,224,224]", "layout_transform(%x, src_layout=NCHW, dst_layout=NCHW4c)"), "?");
}

TEST(IrTypes, BuiltinsAndAllreduce) {
  EXPECT_EQ(TypeOf("%a: f32[2,?]", "on_device(%a, cpu:0)"), "f32[2,?]");
  EXPECT_EQ(TypeOf("%a: f32[2,?]", "device_copy(%a, src=cpu:0, dst=cuda:0)"), "f32[2,?]");
  EXPECT_EQ(TypeOf("%a: f32[2,?]", "vm.shape_of(%a)"), "i64[2]");
  EXPECT_EQ(TypeOf("%a: i64[1]", "memory.alloc_storage(%a, 64, device=cuda:0)"), "storage");
  EXPECT_EQ(TypeOf("%a: storage", "memory.alloc_tensor(%a, 0, [2, 3], dtype=f16)"), "f16[2,3]");
  EXPECT_EQ(TypeOf("%a: f32[6]", "vm.reshape_tensor(%a, [2, 3])"), "f32[2,3]");
  EXPECT_EQ(TypeOf("%a: f32[6]", "allreduce(%a, op=sum)"), "f32[6]");
  EXPECT_THAT(TypeOf("%a: f32[6]", "allreduce(%a, op=median)"), HasSubstr("unknown reduction 'median'"));
}

TEST(IrTypes, NonOpExpressions) {
  std::optional<Module> m = ParseAndVerify(
      "def @id(%x: f32[2]) {\n  return %x\n}\n"
      "def @main(%a: f32[2], %c: bool[]) {\n"
      "  %t = (%a, [1, 2, 3])\n"
      "  %p = %t.1\n"
      "  %g = fn(%y: f32[2]) {\n    return %y\n  }\n"
      "  %h = %g(%a)\n"
      "  %i = @id(%h)\n"
      "  %j = if %c {\n    return %i\n  } else {\n    return %a\n  }\n"
      "  %u = unknown.op(%j)\n"
      "  %w: f32[2] = unknown.op(%j)\n"
      "  return %w\n}\n");
  ASSERT_TRUE(m.has_value());
  auto type_of = [&](const char* name) {
    for (const Binding& b : m->bindings)
      if (m->Name(b.name) == name) return m->types.ToString(b.type);
    return std::string("missing");
  };
  EXPECT_EQ(type_of("t"), "(f32[2], i64[3])");
  EXPECT_EQ(type_of("p"), "i64[3]");
  EXPECT_EQ(type_of("g"), "fn(f32[2]) -> f32[2]");
  EXPECT_EQ(type_of("h"), "f32[2]");
  EXPECT_EQ(type_of("i"), "f32[2]");
  EXPECT_EQ(type_of("j"), "f32[2]");
  EXPECT_EQ(type_of("u"), "?");
  EXPECT_EQ(type_of("w"), "f32[2]");
}

TEST(IrTypes, StructuralErrors) {
  EXPECT_THAT(FirstError("def @main(%a: f32[2]) {\n  %t = %a.0\n  return %t\n}\n").message, HasSubstr("not a tuple"));
  EXPECT_THAT(FirstError("def @main(%a: f32[2]) {\n  %t = (%a)\n  %p = %t.1\n  return %p\n}\n").message,
              HasSubstr("field 1 of a 1-tuple"));
  EXPECT_THAT(FirstError("def @main(%a: f32[2]) {\n  %t = %a(%a)\n  return %t\n}\n").message,
              HasSubstr("not a function type"));
  EXPECT_THAT(FirstError("def @main(%a: f32[2], %c: bool[]) {\n  %r = if %c {\n    return %a\n  } else {\n"
                         "    return %c\n  }\n  return %r\n}\n")
                  .message,
              HasSubstr("the arms of 'if' return f32[2] and bool[]"));
  EXPECT_THAT(FirstError("def @main(%a: f32[2]) {\n  %r = if %a {\n    return %a\n  } else {\n"
                         "    return %a\n  }\n  return %r\n}\n")
                  .message,
              HasSubstr("expected a bool tensor"));
}

TEST(IrTypes, RegistryIsExtensibleAtRunTime) {
  const std::string text = "def @main(%a: f32[3]) {\n  %r = test.twice(%a, %a)\n  return %r\n}\n";
  EXPECT_EQ(TypeOf("%a: f32[3]", "test.twice(%a, %a)"), "?");  // unknown op: accepted, untyped
  OpDef def;
  def.name = "test.twice";
  def.min_args = 1;
  def.max_args = 1;
  def.infer = SameAsFirstArg;
  ASSERT_TRUE(OpRegistry::Global().Register(def).ok());
  EXPECT_EQ(OpRegistry::Global().Register(def).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(FirstError(text).message, HasSubstr("'test.twice' takes 1 argument, got 2"));
  EXPECT_EQ(TypeOf("%a: f32[3]", "test.twice(%a)"), "f32[3]");
}

TEST(IrTypes, PrivateRegistry) {
  OpRegistry registry;
  OpRegistry::AddBuiltinOps(registry);
  std::optional<Module> m = ParseModule("def @main(%a: f32[3]) {\n  %r = add(%a, 1, 2)\n  return %r\n}\n").value();
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(VerifyModule(*m, registry).ok());  // `add` is not a built-in: unchecked
  EXPECT_FALSE(VerifyModule(*m).ok());           // the global registry knows its arity
}

TEST(IrTypes, ActivationsAndSoftmax) {
  EXPECT_EQ(TypeOf("%a: bf16[2,8]", "gelu(%a)"), "bf16[2,8]");
  EXPECT_EQ(TypeOf("%a: bf16[2,8]", "gelu(%a, approximate=\"tanh\")"), "bf16[2,8]");
  EXPECT_THAT(TypeOf("%a: bf16[2,8]", "gelu(%a, approximate=cubic)"), HasSubstr("approximate must be"));
  EXPECT_EQ(TypeOf("%a: f16[8]", "silu(%a)"), "f16[8]");
  EXPECT_EQ(TypeOf("%a: f32[2,?,5]", "softmax(%a)"), "f32[2,?,5]");
  EXPECT_EQ(TypeOf("%a: f32[2,3]", "nn.softmax(%a, axis=0)"), "f32[2,3]");
  EXPECT_THAT(TypeOf("%a: f32[2,3]", "softmax(%a, axis=2)"), HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(TypeOf("%a: f32[]", "softmax(%a)"), HasSubstr("rank >= 1"));
}

TEST(IrTypes, Norms) {
  EXPECT_EQ(TypeOf("%x: f16[4,256], %g: f16[256]", "rms_norm(%x, %g)"), "f16[4,256]");
  EXPECT_EQ(TypeOf("%x: f16[4,256], %g: f16[256]", "rms_norm(%x, %g, epsilon=1e-5)"), "f16[4,256]");
  EXPECT_EQ(TypeOf("%x: f32[4,?], %g: f32[8], %b: f32[8]", "layer_norm(%x, %g, %b)"), "f32[4,?]");
  EXPECT_THAT(TypeOf("%x: f16[4,256], %g: f16[128]", "rms_norm(%x, %g)"), HasSubstr("operand 2 must be f16[256]"));
  EXPECT_THAT(TypeOf("%x: f16[4,256], %g: f32[256]", "rms_norm(%x, %g)"), HasSubstr("operand 2 must be f16[256]"));
  EXPECT_THAT(TypeOf("%x: f32[4,8], %g: f32[8], %b: f32[4,8]", "layer_norm(%x, %g, %b)"),
              HasSubstr("operand 3 must be"));
  EXPECT_THAT(TypeOf("%x: f32[4,8], %g: f32[8]", "layer_norm(%x, %g)"), HasSubstr("takes 3 arguments"));
  EXPECT_THAT(TypeOf("%x: f32[4,8], %g: f32[8]", "rms_norm(%x, %g, epsilon=small)"), HasSubstr("must be a number"));
}

TEST(IrTypes, TransposeAndTake) {
  EXPECT_EQ(TypeOf("%a: f32[2,3,5]", "transpose(%a)"), "f32[5,3,2]");
  EXPECT_EQ(TypeOf("%a: f32[2,3,5]", "transpose(%a, axes=[0,-1,1])"), "f32[2,5,3]");
  EXPECT_THAT(TypeOf("%a: f32[2,3,5]", "transpose(%a, axes=[0,1])"), HasSubstr("axes has 2 entries for rank 3"));
  EXPECT_THAT(TypeOf("%a: f32[2,3,5]", "transpose(%a, axes=[0,1,1])"), HasSubstr("not a permutation"));
  EXPECT_EQ(TypeOf("%t: bf16[1000,64], %i: i32[4,7]", "take(%t, %i)"), "bf16[4,7,64]");
  EXPECT_EQ(TypeOf("%t: f32[5,3], %i: i64[2]", "take(%t, %i, axis=1)"), "f32[5,2]");
  EXPECT_EQ(TypeOf("%t: f32[5,3], %i: i64[]", "take(%t, %i)"), "f32[3]");
  EXPECT_THAT(TypeOf("%t: f32[5,3], %i: f32[2]", "take(%t, %i)"), HasSubstr("indices must be i32 or i64"));
  EXPECT_THAT(TypeOf("%t: f32[5,3], %i: i32[2]", "take(%t, %i, axis=2)"), HasSubstr("out of range"));
}

TEST(IrTypes, AttentionAndSiluMul) {
  EXPECT_EQ(TypeOf("%q: f16[256,3,8,128]", "attention(%q, causal=true)"), "f16[256,8,128]");
  EXPECT_EQ(TypeOf("%q: f32[?,3,2,4]", "attention(%q)"), "f32[?,2,4]");
  EXPECT_THAT(TypeOf("%q: f16[256,2,8,128]", "attention(%q)"), HasSubstr("[T,3,H,D]"));
  EXPECT_THAT(TypeOf("%q: f16[256,3,8,128]", "attention(%q, causal=1)"), HasSubstr("true or false"));
  EXPECT_EQ(TypeOf("%x: bf16[2,256,5504]", "silu_mul(%x)"), "bf16[2,256,2752]");
  EXPECT_THAT(TypeOf("%x: bf16[2,7]", "silu_mul(%x)"), HasSubstr("even size"));
}

// Every binding of the 10-layer tensor-parallel transformer gets its type by inference: with the
// annotations stripped, the inferred types are the annotated ones.
TEST(IrTypes, TransformerExampleIsTypedByInference) {
  std::ifstream file(VDEV_EXAMPLES_DIR "/memory/tp_transformer_10.vdev");
  std::stringstream read;
  read << file.rdbuf();
  const std::string text = read.str();
  std::optional<Module> annotated = ParseAndVerify(text);
  ASSERT_TRUE(annotated.has_value());
  std::string stripped;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t colon = line.find(':'), eq = line.find(" = ");
    if (absl::StartsWith(line, "  %") && colon != absl::string_view::npos && eq != absl::string_view::npos &&
        colon < eq) {
      absl::StrAppend(&stripped, line.substr(0, colon), line.substr(eq), "\n");
    } else {
      absl::StrAppend(&stripped, line, "\n");
    }
  }
  std::string error;
  std::optional<Module> inferred = ParseAndVerify(stripped, &error);
  ASSERT_TRUE(inferred.has_value()) << error;
  ASSERT_EQ(inferred->bindings.size(), annotated->bindings.size());
  size_t ops = 0;
  for (size_t b = 0; b < annotated->bindings.size(); ++b) {
    if (annotated->bindings[b].declared_type == kNoType) continue;
    ++ops;
    EXPECT_EQ(inferred->bindings[b].declared_type, kNoType);  // stripped
    EXPECT_EQ(inferred->types.ToString(inferred->bindings[b].type),
              annotated->types.ToString(annotated->bindings[b].type))
        << "%" << annotated->Name(annotated->bindings[b].name);
  }
  EXPECT_GE(ops, 160u);  // 16 bindings a layer
}

}  // namespace
}  // namespace vdev::ir
