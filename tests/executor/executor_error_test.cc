// What the executor refuses, and how it says so: an op without a kernel (located, from Load, before
// anything runs), inputs of the wrong count, dtype or shape, a dynamic shape, CheckKernels.
#include <string>
#include <vector>

#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/executor.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using testing_executor::F32;

absl::Status LoadOnHost(const LoweredProgram& program) {
  absl::StatusOr<std::unique_ptr<ExecutionBackend>> backend = CreateHostBackend(nullptr);
  if (!backend.ok()) return backend.status();
  return Executor::Load(program, backend->get()).status();
}

TEST(ExecutorErrors, AnOpWithoutAKernelIsALocatedErrorFromLoad) {
  // floor is a registered op (it verifies and has a type) without a CPU kernel.
  constexpr char kText[] = "def @main(%x: f32[4]) -> f32[4] {\n  %y = negative(%x)\n  %z = floor(%y)\n  return %z\n}\n";
  absl::StatusOr<LoweredProgram> program = CompileForExecution(kText, "nokernel.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  absl::Status s = LoadOnHost(*program);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nokernel.vdev:3:8"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'floor' has no kernel"));
  // CheckKernels says the same before any worker starts.
  absl::Status check = CheckKernels(*program, "host");
  EXPECT_THAT(std::string(check.message()), HasSubstr("nokernel.vdev:3:8"));
}

TEST(ExecutorErrors, CheckKernelsAcceptsAProgramWhoseOpsAllHaveKernels) {
  absl::StatusOr<LoweredProgram> program =
      CompileForExecution("def @main(%x: f32[4]) -> f32[4] {\n  %y = relu(%x)\n  return %y\n}\n", "ok.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_TRUE(CheckKernels(*program, "host").ok());
}

TEST(ExecutorErrors, AKernelWithoutABodyIsALocatedError) {
  constexpr char kText[] =
      "kernel @k(%a: f32[4]) -> f32[4]\ndef @main(%x: f32[4]) -> f32[4] {\n  %y = @k(%x)\n  return %y\n}\n";
  absl::StatusOr<LoweredProgram> program = CompileForExecution(kText, "kernel.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  absl::Status s = LoadOnHost(*program);
  EXPECT_THAT(std::string(s.message()), HasSubstr("kernel.vdev:3:"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("@k"));
}

class ExecutorInputErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LoweredProgram> program = CompileForExecution(
        "def @main(%x: f32[2,3], %y: f32[3]) -> f32[2,3] {\n  %z = add(%x, %y)\n  return %z\n}\n", "inputs.vdev");
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = *std::move(program);
    auto backend = CreateHostBackend(nullptr);
    ASSERT_TRUE(backend.ok());
    backend_ = *std::move(backend);
    auto executor = Executor::Load(program_, backend_.get());
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
  }
  LoweredProgram program_;
  std::unique_ptr<ExecutionBackend> backend_;
  std::unique_ptr<Executor> executor_;
};

TEST_F(ExecutorInputErrors, FewerInputsThanParameters) {
  absl::Status s = executor_->Run({F32({2, 3}, {})}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("@main takes 2 inputs; 1 given"));
}

TEST_F(ExecutorInputErrors, WrongDTypeNamesTheParameter) {
  absl::Status s = executor_->Run({F32({2, 3}, {}), testing_executor::Make(ir::DType::kF16, {3}, {})}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("input 1 (%y): expected f32[3], got f16[3]"));
}

TEST_F(ExecutorInputErrors, WrongShapeNamesTheParameter) {
  absl::Status s = executor_->Run({F32({3, 2}, {}), F32({3}, {})}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("input 0 (%x): expected f32[2,3], got f32[3,2]"));
}

TEST_F(ExecutorInputErrors, ARunAfterABadOneStillWorks) {
  EXPECT_FALSE(executor_->Run({F32({3}, {})}).ok());
  auto out = executor_->Run({F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3}, {1, 1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(testing_executor::Values((*out)[0]), ::testing::ElementsAre(2, 3, 4, 5, 6, 7));
}

TEST(ExecutorErrors, ADynamicShapeIsRefusedByLoad) {
  absl::StatusOr<LoweredProgram> program =
      CompileForExecution("def @main(%x: f32[?,4]) -> f32[?,4] {\n  %y = relu(%x)\n  return %y\n}\n", "dyn.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  absl::Status s = LoadOnHost(*program);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dynamic shape"));
}

TEST(ExecutorErrors, AProgramWithoutMainIsRefused) {
  absl::StatusOr<LoweredProgram> program =
      CompileForExecution("def @f(%x: f32[4]) -> f32[4] {\n  return %x\n}\n", "nomain.vdev");
  if (!program.ok()) {
    EXPECT_THAT(std::string(program.status().message()), HasSubstr("main"));
    return;
  }
  absl::Status s = LoadOnHost(*program);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nomain.vdev: error: the program has no function @main"));
}

TEST(ExecutorErrors, MalformedTextIsALocatedCompileError) {
  absl::StatusOr<LoweredProgram> program =
      CompileForExecution("def @main(%x: f32[4]) -> f32[4] {\n  %y = \n}\n", "bad.vdev");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("bad.vdev:3:1: error"));
}

}  // namespace
}  // namespace vdev
