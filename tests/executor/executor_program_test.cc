// The executor on small programs, host backend: views, copies, tuples, `if`, calls, closures,
// split, number operands, const, a planned program's copies and a 200,000-binding chain.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/executor.h"

namespace vdev {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing_executor::CompileAndRun;
using testing_executor::F32;
using testing_executor::Values;

TEST(ExecutorProgram, ReshapeIsAViewOfItsInput) {
  constexpr char kText[] = R"(def @main(%x: f32[6]) -> f32[2,3] {
  %r = reshape(%x, newshape=[2,3])
  return %r
})";
  absl::StatusOr<LoweredProgram> program = CompileForExecution(kText, "view.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  auto backend = CreateHostBackend(nullptr);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto executor = Executor::Load(*program, backend->get());
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<OpProfile> profile;
  auto out = (*executor)->RunProfiled({F32({6}, {1, 2, 3, 4, 5, 6})}, &profile);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_THAT((*out)[0].shape, ElementsAre(2, 3));
  EXPECT_THAT(Values((*out)[0]), ElementsAre(1, 2, 3, 4, 5, 6));
  // The profile times every op that does work (kernels, copies): a view does none.
  EXPECT_TRUE(profile.empty()) << profile[0].op;
}

TEST(ExecutorProgram, DeviceCopyMovesTheValue) {
  constexpr char kText[] = R"(config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%b: f32[3] on cpu:0) -> f32[3] {
  %v = device_copy(%b, src=cpu:0, dst=cuda:0)
  %w = add(%v, %v)
  return %w
})";
  auto out = CompileAndRun(kText, {F32({3}, {1, -2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(2, -4, 8));
}

TEST(ExecutorProgram, TuplesAndProjectionsFlattenInOrder) {
  constexpr char kText[] = R"(def @main(%a: f32[2], %b: f32[3]) -> (f32[3], (f32[2], f32[2])) {
  %t = (%a, %b)
  %first = %t.0
  %second = %t.1
  %n = negative(%first)
  %inner = (%first, %n)
  %r = (%second, %inner)
  return %r
})";
  auto out = CompileAndRun(kText, {F32({2}, {1, 2}), F32({3}, {7, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_THAT(Values((*out)[0]), ElementsAre(7, 8, 9));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(1, 2));
  EXPECT_THAT(Values((*out)[2]), ElementsAre(-1, -2));
}

constexpr char kIfText[] = R"(def @main(%c: bool[], %x: f32[2]) -> f32[2] {
  %r = if %c {
    %t = multiply(%x, 3.0)
    return %t
  } else {
    %e = negative(%x)
    return %e
  }
  return %r
})";

TEST(ExecutorProgram, IfTakesTheThenArmOnTrue) {
  auto out = CompileAndRun(kIfText, {testing_executor::Make(ir::DType::kBool, {}, {1}), F32({2}, {1, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(3, -6));
}

TEST(ExecutorProgram, IfTakesTheElseArmOnFalse) {
  auto out = CompileAndRun(kIfText, {testing_executor::Make(ir::DType::kBool, {}, {0}), F32({2}, {1, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(-1, 2));
}

TEST(ExecutorProgram, IfArmsAlternateAcrossRunsOfOneExecutor) {
  auto program = CompileForExecution(kIfText, "if.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  auto backend = CreateHostBackend(nullptr);
  ASSERT_TRUE(backend.ok());
  auto executor = Executor::Load(*program, backend->get());
  ASSERT_TRUE(executor.ok()) << executor.status();
  for (int round = 0; round < 3; ++round) {
    auto t = (*executor)->Run({testing_executor::Make(ir::DType::kBool, {}, {1}), F32({2}, {2, 5})});
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_THAT(Values((*t)[0]), ElementsAre(6, 15));
    auto e = (*executor)->Run({testing_executor::Make(ir::DType::kBool, {}, {0}), F32({2}, {2, 5})});
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_THAT(Values((*e)[0]), ElementsAre(-2, -5));
  }
}

TEST(ExecutorProgram, GlobalFunctionsCalledTwiceAndNested) {
  constexpr char kText[] = R"(def @double(%x: f32[2]) -> f32[2] {
  %y = add(%x, %x)
  return %y
}
def @quad(%x: f32[2]) -> f32[2] {
  %a = @double(%x)
  %b = @double(%a)
  return %b
}
def @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %once = @double(%x)
  %twice = @double(%once)
  %nested = @quad(%twice)
  %r = (%twice, %nested)
  return %r
})";
  auto out = CompileAndRun(kText, {F32({2}, {1, -3})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_THAT(Values((*out)[0]), ElementsAre(4, -12));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(16, -48));
}

TEST(ExecutorProgram, LocalFunctionsSeeWhatTheyCaptured) {
  constexpr char kText[] = R"(def @apply(%x: f32[2], %f: fn(f32[2]) -> f32[2]) -> f32[2] {
  %y = %f(%x)
  return %y
}
def @main(%x: f32[2], %s: f32[2]) -> (f32[2], f32[2]) {
  %g = fn(%y: f32[2]) -> f32[2] {
    %z = negative(%y)
    %w = add(%z, %s)
    return %w
  }
  %direct = %g(%x)
  %passed = @apply(%direct, %g)
  %r = (%direct, %passed)
  return %r
})";
  auto out = CompileAndRun(kText, {F32({2}, {1, 2}), F32({2}, {10, 20})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(9, 18));  // -x + s
  EXPECT_THAT(Values((*out)[1]), ElementsAre(1, 2));   // -(-x + s) + s
}

TEST(ExecutorProgram, SplitReturnsATupleOfTensors) {
  constexpr char kText[] = R"(def @main(%x: f32[2,4]) -> (f32[2,2], f32[2,2]) {
  %p = split(%x, indices_or_sections=2, axis=1)
  %a = %p.0
  %b = %p.1
  %r = (%b, %a)
  return %r
})";
  auto out = CompileAndRun(kText, {F32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_THAT((*out)[0].shape, ElementsAre(2, 2));
  EXPECT_THAT(Values((*out)[0]), ElementsAre(2, 3, 6, 7));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(0, 1, 4, 5));
}

TEST(ExecutorProgram, NumberOperandsAreScalars) {
  constexpr char kText[] = R"(def @main(%x: f32[3]) -> f32[3] {
  %a = multiply(%x, 2.5)
  %b = subtract(%a, -1e-1)
  return %b
})";
  auto out = CompileAndRun(kText, {F32({3}, {1, 2, -4})});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> got = Values((*out)[0]);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FLOAT_EQ(got[0], 2.6f);
  EXPECT_FLOAT_EQ(got[1], 5.1f);
  EXPECT_FLOAT_EQ(got[2], -9.9f);
}

TEST(ExecutorProgram, ConstIsZeros) {
  constexpr char kText[] = R"(def @main(%x: f32[4]) -> (f32[4], f32[4]) {
  %k: f32[4] = const(f32[4])
  %s = add(%x, %k)
  %r = (%s, %k)
  return %r
})";
  auto out = CompileAndRun(kText, {F32({4}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(0, 0, 0, 0));
}

TEST(ExecutorProgram, ThePlannersCopiesExecute) {
  // %h is pinned to the host, %y to the GPU: the planner inserts device_copy bindings.
  constexpr char kText[] = R"(config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }
def @main(%x: f32[2,2] on cpu:0, %w: f32[2,2]) -> f32[2,2] {
  %h = add(%x, %x)
  %hc = on_device(%h, cpu:0)
  %y = matmul(%hc, %w)
  %g = on_device(%y, cuda:0)
  %z = relu(%g)
  return %z
})";
  auto program = CompileForExecution(kText, "copies.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  auto backend = CreateHostBackend(nullptr);
  ASSERT_TRUE(backend.ok());
  auto executor = Executor::Load(*program, backend->get());
  ASSERT_TRUE(executor.ok()) << executor.status();
  std::vector<OpProfile> profile;
  auto out = (*executor)->RunProfiled({F32({2, 2}, {1, -1, 2, 0}), F32({2, 2}, {1, 0, 0, 1})}, &profile);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(2, 0, 4, 0));
  int copies = 0;
  for (const OpProfile& p : profile)
    if (p.op == "device_copy") copies += p.calls;
  EXPECT_GE(copies, 1) << "the plan of this program moves %h from cpu:0 to cuda:0";
}

TEST(ExecutorProgram, ALongChainNeedsNoDeepStack) {
  constexpr int kLength = 200000;
  std::string text = "def @main(%x: f32[1]) -> f32[1] {\n  %v0 = negative(%x)\n";
  for (int i = 1; i < kLength; ++i) absl::StrAppend(&text, "  %v", i, " = negative(%v", i - 1, ")\n");
  absl::StrAppend(&text, "  return %v", kLength - 1, "\n}\n");
  auto out = CompileAndRun(text, {F32({1}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(3));  // an even number of negations
}

TEST(ExecutorProgram, RepeatedRunsGiveTheSameResult) {
  constexpr char kText[] = R"(def @main(%x: f32[2,2], %w: f32[2,2]) -> f32[2,2] {
  %y = matmul(%x, %w)
  %z = add(%y, %x)
  return %z
})";
  auto program = CompileForExecution(kText, "repeat.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  auto backend = CreateHostBackend(nullptr);
  ASSERT_TRUE(backend.ok());
  auto executor = Executor::Load(*program, backend->get());
  ASSERT_TRUE(executor.ok()) << executor.status();
  for (int r = 0; r < 3; ++r) {
    auto out = (*executor)->Run({F32({2, 2}, {1, 2, 3, 4}), F32({2, 2}, {static_cast<double>(r), 0, 0, 1})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values((*out)[0]), ElementsAreArray(std::vector<double>{1.0 + r, 4, 3.0 + 3 * r, 8}));
  }
}

}  // namespace
}  // namespace vdev
