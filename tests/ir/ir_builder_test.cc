// ModuleBuilder builds the same modules as the parser.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"
#include "vdev/ir/ir_builder.h"

namespace vdev::ir {
namespace {

using ::testing::HasSubstr;
using testing::ParseAndVerify;

VirtualDevice Cpu0() { return VirtualDevice::ForDevice(DeviceType::kCPU, 0); }
VirtualDevice Cuda0() { return VirtualDevice::ForDevice(DeviceType::kCUDA, 0); }

TEST(IrBuilder, BuildsTheSpecExampleAsParsed) {
  const std::string text = testing::kSpecExample;
  ModuleBuilder b;
  b.SetTargets({TargetKind::kLLVM, TargetKind::kCUDA});
  b.SetDefaultDevice(Cuda0());
  b.SetHostDevice(Cpu0());
  TypeId t = b.TensorType(DType::kF32, {5, 7});
  b.BeginFunction("main");
  ValueRef a = b.Param("a", t), bb = b.Param("b", t), c = b.Param("c", t), d = b.Param("d", t);
  b.SetResult(t);
  ValueRef v0 = b.Op("add", {a, bb});
  ValueRef v1 = b.Op("on_device", {v0, Cpu0()});
  ValueRef v2 = b.Op("add", {c, d});
  ValueRef v3 = b.Op("subtract", {v1, v2});
  b.Return(v3);
  b.EndFunction();
  absl::StatusOr<Module> built = std::move(b).Finish();
  ASSERT_TRUE(built.ok()) << built.status();
  std::optional<Module> parsed = ParseAndVerify(text);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(PrintModule(*built), PrintModule(*parsed));
  EXPECT_EQ(PrintModule(*built), text);
  EXPECT_EQ(built->types.ToString(built->bindings[v3.index].type), "f32[5,7]");
}

// Every construct: kernel, closures, primitive fn, if, tuple, projection, const, alias, value
// calls, global calls, lists, strings, attributes of every kind.
TEST(IrBuilder, BuildsEveryConstructAsParsed) {
  const std::string text =
      "kernel @k(%a: f32[?,4] on cuda:0/global) -> f32[?,4] on cuda:0/global\n"
      "\n"
      "def @main(%c: bool[], %x: f32[4] on cpu:0, %m: f32[?,4]) -> (f32[4], f32[4]) {\n"
      "  %g = fn(%y: f32[4]) -> f32[4] {\n"
      "    %z = negative(%y)\n"
      "    return %z\n"
      "  }\n"
      "  %p = fn[primitive](%q: f32[4] on /global) -> f32[4] on /global {\n"
      "    return %q\n"
      "  }\n"
      "  %r = if %c {\n"
      "    %r1 = %g(%x)\n"
      "    return %r1\n"
      "  } else {\n"
      "    return %x\n"
      "  }\n"
      "  %k4: f32[4] = const(f32[4])\n"
      "  %tup = (%r, %k4)\n"
      "  %first = %tup.1\n"
      "  %same = %first\n"
      "  %mm = @k(%m)\n"
      "  %st = memory.alloc_storage(16, 64, device=cuda:0)\n"
      "  %o = my.op(%same, [1, 2], cuda:1, name=\"n\", flag=false, mode=fast, ref=@k)\n"
      "  return %tup\n"
      "}\n";
  ModuleBuilder b;
  TypeId f4 = b.TensorType(DType::kF32, {4});
  TypeId dyn = b.TensorType(DType::kF32, {kDynamicDim, 4});
  VirtualDevice global = *ParseVirtualDevice("cuda:0/global");
  b.BeginKernel("k");
  b.Param("a", dyn, global);
  b.SetResult(dyn, global);
  b.EndKernel();
  b.BeginFunction("main");
  ValueRef c = b.Param("c", b.TensorType(DType::kBool, {}));
  ValueRef x = b.Param("x", f4, Cpu0());
  ValueRef m = b.Param("m", dyn);
  b.SetResult(b.TupleType(std::vector<TypeId>{f4, f4}));
  b.BeginFn("g");
  ValueRef y = b.Param("y", f4);
  b.SetResult(f4);
  b.Return(b.Op("negative", {y}, {}, "z"));
  ValueRef g = b.EndFn();
  b.BeginFn("p", /*primitive=*/true);
  ValueRef q = b.Param("q", f4, VirtualDevice::ForScope("global"));
  b.SetResult(f4, VirtualDevice::ForScope("global"));
  b.Return(q);
  b.EndFn();
  b.BeginIf(c, "r");
  b.Return(b.CallValue(g, {x}, "r1"));
  b.Else();
  b.Return(x);
  ValueRef r = b.EndIf();
  ValueRef k4 = b.Const(f4, "k4");
  b.DeclareType(f4);
  ValueRef tup = b.Tuple({r, k4}, "tup");
  ValueRef first = b.Project(tup, 1, "first");
  ValueRef same = b.Alias(first, "same");
  b.Call("k", {m}, "mm");
  b.Op("memory.alloc_storage", {Arg::Int(16), Arg::Int(64)}, {{"device", Cuda0()}}, "st");
  b.Op(
      "my.op", {same, Arg::IntList({1, 2}), VirtualDevice::ForDevice(DeviceType::kCUDA, 1)},
      {{"name", Arg::String("n")}, {"flag", Arg::Bool(false)}, {"mode", Arg::Ident("fast")}, {"ref", Arg::Global("k")}},
      "o");
  b.Return(tup);
  b.EndFunction();
  absl::StatusOr<Module> built = std::move(b).Finish();
  ASSERT_TRUE(built.ok()) << built.status();
  std::string error;
  std::optional<Module> parsed = ParseAndVerify(text, &error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(PrintModule(*parsed), text);
  EXPECT_EQ(PrintModule(*built), text);
  EXPECT_EQ(built->bindings.size(), parsed->bindings.size());
  EXPECT_EQ(built->functions.size(), parsed->functions.size());
}

TEST(IrBuilder, NamesBindingsAutomatically) {
  ModuleBuilder b;
  TypeId t = b.TensorType(DType::kF32, {2});
  b.BeginFunction("main");
  ValueRef a = b.Param("a", t);
  b.Return(b.Op("exp", {b.Op("add", {a, a})}));
  b.EndFunction();
  absl::StatusOr<Module> m = std::move(b).Finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(PrintModule(*m), "def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  %1 = exp(%0)\n  return %1\n}\n");
}

TEST(IrBuilder, ForwardGlobalReferencesResolve) {
  ModuleBuilder b;
  TypeId t = b.TensorType(DType::kF32, {2});
  b.BeginFunction("main");
  ValueRef a = b.Param("a", t);
  b.Return(b.Call("later", {a}));
  b.EndFunction();
  b.BeginFunction("later");
  b.Return(b.Param("x", t));
  b.EndFunction();
  absl::StatusOr<Module> m = std::move(b).Finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->bindings[0].expr.func, m->FindGlobal("later"));
}

TEST(IrBuilder, ReportsMisuse) {
  {
    ModuleBuilder b;
    b.BeginFunction("main");
    b.Param("a", b.TensorType(DType::kF32, {2}));
    b.EndFunction();  // no return
    absl::StatusOr<Module> m = std::move(b).Finish();
    EXPECT_THAT(m.status().message(), HasSubstr("missing 'return'"));
  }
  {
    ModuleBuilder b;
    b.BeginFunction("main");
    b.Return(b.Call("nowhere", {}));
    b.EndFunction();
    EXPECT_THAT(std::move(b).Finish().status().message(), HasSubstr("undefined global '@nowhere'"));
  }
  {
    ModuleBuilder b;
    b.BeginFunction("main");
    ValueRef a = b.Param("a", b.TensorType(DType::kF32, {2}));
    b.BeginIf(a);
    b.Return(a);
    b.EndFunction();  // if still open
    EXPECT_THAT(std::move(b).Finish().status().message(), HasSubstr("EndFunction()"));
  }
  {
    ModuleBuilder b;
    b.BeginFunction("main");
    ValueRef a = b.Param("a", b.TensorType(DType::kF32, {2}));
    b.Op("on_device", {a});
    b.Return(a);
    b.EndFunction();
    EXPECT_THAT(std::move(b).Finish().status().message(), HasSubstr("'on_device' takes 2 arguments, got 1"));
  }
  {
    ModuleBuilder b;
    b.BeginFunction("main");
    ValueRef a = b.Param("a", b.TensorType(DType::kF32, {2}));
    b.Op("add", {a, a}, {}, "x");
    b.Op("add", {a, a}, {}, "x");
    b.Return(a);
    b.EndFunction();
    EXPECT_THAT(std::move(b).Finish().status().message(), HasSubstr("duplicate name '%x'"));
  }
}

// A built module has no source locations: a type error names the binding instead.
TEST(IrBuilder, ATypeErrorNamesTheBinding) {
  ModuleBuilder b;
  b.BeginFunction("main");
  ValueRef x = b.Param("x", b.TensorType(DType::kF32, {4, 64}));
  ValueRef w = b.Param("w", b.TensorType(DType::kF32, {32, 8}));
  b.Return(b.Op("matmul", {x, w}, {}, "y"));
  b.EndFunction();
  EXPECT_THAT(std::move(b).Finish().status().message(),
              HasSubstr("%y = matmul(%x, %w): inner dimensions 64 and 32 differ"));
}

// What a builder can spell but the text cannot is rejected, so printing always round-trips.
TEST(IrBuilder, RejectsNamesTheTextCannotSpell) {
  auto finish = [](auto build) {
    ModuleBuilder b;
    b.BeginFunction("main");
    ValueRef a = b.Param("a", b.TensorType(DType::kF32, {2}));
    build(b, a);
    b.Return(a);
    b.EndFunction();
    return std::string(std::move(b).Finish().status().message());
  };
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) { b.Op("my op", {a}); }),
              HasSubstr("'my op' is not a valid op name"));
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) { b.Op("if", {a}); }), HasSubstr("'if' is a keyword"));
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) { b.Op("f", {a}, {}, "a-b"); }),
              HasSubstr("'a-b' is not a valid binding name"));
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) {
                b.Op("f", {a, Arg::Number("1x")});
              }),
              HasSubstr("'1x' is not a valid number"));
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) {
                b.Op("f", {a}, {{"k", Arg::Ident("cuda")}});
              }),
              HasSubstr("would read back as a boolean or a device"));
  EXPECT_THAT(finish([](ModuleBuilder& b, ValueRef a) {
                b.Op("f", {a}, {{"bad key", Arg::Int(1)}});
              }),
              HasSubstr("'bad key' is not a valid attribute name"));
  EXPECT_EQ(finish([](ModuleBuilder& b, ValueRef a) { b.Op("f", {a}, {{"s", Arg::String("q\"uote")}}); }), "");
}

// A value from inside a closed block used outside is caught by the verifier.
TEST(IrBuilder, UseOutsideItsScopeIsRejected) {
  ModuleBuilder b;
  TypeId t = b.TensorType(DType::kF32, {2});
  b.BeginFunction("main");
  ValueRef c = b.Param("c", b.TensorType(DType::kBool, {}));
  ValueRef a = b.Param("a", t);
  b.BeginIf(c, "r");
  ValueRef inner = b.Op("exp", {a}, {}, "inner");
  b.Return(inner);
  b.Else();
  b.Return(a);
  b.EndIf();
  b.Return(inner);
  b.EndFunction();
  EXPECT_THAT(std::move(b).Finish().status().message(), HasSubstr("undefined name '%inner'"));
}

}  // namespace
}  // namespace vdev::ir
