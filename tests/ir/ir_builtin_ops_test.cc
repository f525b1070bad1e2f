// Typed views and builders of the built-in ops.
#include <string>

#include "gtest/gtest.h"
#include "ir/ir_test_util.h"
#include "vdev/ir/builtin_ops.h"

namespace vdev::ir {
namespace {

using testing::ParseAndVerify;

const Expr& BindingExpr(const Module& m, absl::string_view name) {
  for (const Binding& b : m.bindings)
    if (m.Name(b.name) == name) return b.expr;
  static const Expr kNone;
  return kNone;
}

TEST(BuiltinOps, ReadsOnDeviceWithDefaultsAndFlags) {
  std::optional<Module> m = ParseAndVerify(
      "def @main(%a: f32[2]) {\n"
      "  %fixed = on_device(%a, cpu:0, constrain_result=true)\n"
      "  %free = on_device(%fixed, ?, constrain_body=false, constrain_result=false)\n"
      "  %plain = on_device(%free, cuda:1/global)\n"
      "  %other = add(%plain, %plain)\n"
      "  return %other\n}\n");
  ASSERT_TRUE(m.has_value());
  std::optional<OnDeviceCall> fixed = AsOnDevice(*m, BindingExpr(*m, "fixed"));
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(m->Device(fixed->device).ToString(), "cpu:0");
  EXPECT_TRUE(fixed->constrain_body);
  EXPECT_TRUE(fixed->constrain_result);
  EXPECT_EQ(fixed->value.value, ValueRef::Param(0));
  std::optional<OnDeviceCall> free = AsOnDevice(*m, BindingExpr(*m, "free"));
  ASSERT_TRUE(free.has_value());
  EXPECT_TRUE(free->is_free());
  EXPECT_TRUE(m->Device(free->device).IsFullyUnconstrained());
  std::optional<OnDeviceCall> plain = AsOnDevice(*m, BindingExpr(*m, "plain"));
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->constrain_body);
  EXPECT_FALSE(plain->constrain_result);
  EXPECT_FALSE(AsOnDevice(*m, BindingExpr(*m, "other")).has_value());
}

TEST(BuiltinOps, ReadsDeviceCopyAndAllocStorage) {
  std::optional<Module> m = ParseAndVerify(
      "def @main(%a: f32[2], %n: i64[1]) {\n"
      "  %c = device_copy(%a, src=cpu:0, dst=cuda:0)\n"
      "  %s = memory.alloc_storage(%n, 64, device=cuda:0/global)\n"
      "  return %c\n}\n");
  ASSERT_TRUE(m.has_value());
  std::optional<DeviceCopyCall> copy = AsDeviceCopy(*m, BindingExpr(*m, "c"));
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(m->Device(copy->src).ToString(), "cpu:0");
  EXPECT_EQ(m->Device(copy->dst).ToString(), "cuda:0");
  std::optional<AllocStorageCall> alloc = AsAllocStorage(*m, BindingExpr(*m, "s"));
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(m->Device(alloc->device).ToString(), "cuda:0/global");
  EXPECT_EQ(m->Name(alloc->alignment.symbol), "64");
  EXPECT_FALSE(AsDeviceCopy(*m, BindingExpr(*m, "s")).has_value());
}

TEST(BuiltinOps, BuildersPrintCanonically) {
  std::optional<Module> m = ParseAndVerify("def @main(%a: f32[2]) {\n  %0 = exp(%a)\n  %1 = exp(%0)\n  return %1\n}\n");
  ASSERT_TRUE(m.has_value());
  Operand a = m->LocalOperand(ValueRef::Param(0));
  m->bindings[0].expr = MakeOnDevice(*m, a, *ParseVirtualDevice("cpu:0"), /*constrain_body=*/false,
                                     /*constrain_result=*/true);
  m->bindings[1].expr = MakeDeviceCopy(*m, m->LocalOperand(ValueRef::Binding(0)), *ParseVirtualDevice("cpu:0"),
                                       *ParseVirtualDevice("cuda:0"));
  ASSERT_TRUE(VerifyModule(*m).ok());
  EXPECT_EQ(PrintModule(*m),
            "def @main(%a: f32[2]) {\n"
            "  %0 = on_device(%a, cpu:0, constrain_body=false, constrain_result=true)\n"
            "  %1 = device_copy(%0, src=cpu:0, dst=cuda:0)\n"
            "  return %1\n}\n");
  Expr alloc = MakeAllocStorage(*m, m->NumberOperand("16"), m->NumberOperand("64"), *ParseVirtualDevice("cuda:0"));
  EXPECT_EQ(PrintExprHead(*m, alloc), "memory.alloc_storage(16, 64, device=cuda:0)");
}

}  // namespace
}  // namespace vdev::ir
