// `vdev run` as a library (vdev/executor/run.h): ProgramInputs (seeded, from a directory, per rank),
// CompareOutputs' tolerances and messages, RunReference and Summarize.
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/npy.h"
#include "vdev/executor/run.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using testing_executor::F32;
using testing_executor::Make;
using testing_executor::Values;

constexpr char kProgram[] = R"(def @main(%x: f32[4,8], %n: i32[5], %flag: bool[], %h: bf16[3]) -> f32[4,8] {
  %y = relu(%x)
  return %y
})";

class RunLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LoweredProgram> program = CompileForExecution(kProgram, "inputs.vdev");
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = *std::move(program);
    std::string pattern = ::testing::TempDir() + "/run_library_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Files for every parameter of kProgram under `dir`, %x filled with `x`.
  void WriteInputs(const std::string& dir, double x) {
    mkdir(dir.c_str(), 0700);
    ASSERT_TRUE(WriteNpy(dir + "/x.npy", F32({4, 8}, std::vector<double>(32, x))).ok());
    ASSERT_TRUE(WriteNpy(dir + "/n.npy", Make(ir::DType::kI32, {5}, {1, 2, 3, 4, 5})).ok());
    ASSERT_TRUE(WriteNpy(dir + "/flag.npy", Make(ir::DType::kBool, {}, {1})).ok());
    ASSERT_TRUE(WriteNpy(dir + "/h.npy", Make(ir::DType::kBF16, {3}, {1, 2, 3})).ok());
  }

  LoweredProgram program_;
  std::string dir_;
};

TEST_F(RunLibraryTest, RandomInputsAreDeterminedBySeedAndTheSameOnEveryWorker) {
  auto a = ProgramInputs(program_, "random:7", 0);
  auto b = ProgramInputs(program_, "random:7", 0);
  auto other_rank = ProgramInputs(program_, "random:7", 1);
  auto other_seed = ProgramInputs(program_, "random:8", 0);
  ASSERT_TRUE(a.ok() && b.ok() && other_rank.ok() && other_seed.ok()) << a.status();
  ASSERT_EQ(a->size(), 4u);
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].bytes, (*b)[i].bytes) << "parameter " << i;
    EXPECT_EQ((*a)[i].bytes, (*other_rank)[i].bytes) << "parameter " << i;
  }
  EXPECT_NE((*a)[0].bytes, (*other_seed)[0].bytes);
  // Floats in [-1, 1) / sqrt(4) for the matrix, integers in [0, 8).
  for (double v : Values((*a)[0])) {
    EXPECT_GE(v, -0.5);
    EXPECT_LT(v, 0.5);
  }
  for (double v : Values((*a)[1])) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 8);
    EXPECT_EQ(v, static_cast<int>(v));
  }
  EXPECT_EQ((*a)[2].dtype, ir::DType::kBool);
  EXPECT_EQ((*a)[3].dtype, ir::DType::kBF16);
}

TEST_F(RunLibraryTest, RandomPerRankInputsDifferBetweenWorkersAndStartFromTheReplicatedOnes) {
  auto replicated = ProgramInputs(program_, "random:7", 0);
  auto rank0 = ProgramInputs(program_, "random-per-rank:7", 0);
  auto rank1 = ProgramInputs(program_, "random-per-rank:7", 1);
  ASSERT_TRUE(replicated.ok() && rank0.ok() && rank1.ok()) << rank0.status();
  for (size_t i = 0; i < rank0->size(); ++i) EXPECT_EQ((*rank0)[i].bytes, (*replicated)[i].bytes) << "parameter " << i;
  EXPECT_NE((*rank0)[0].bytes, (*rank1)[0].bytes);
  EXPECT_THAT(std::string(ProgramInputs(program_, "random-per-rank:-1", 0).status().message()),
              HasSubstr("expected random-per-rank:SEED"));
}

TEST_F(RunLibraryTest, ABadSeedIsAnError) {
  absl::Status s = ProgramInputs(program_, "random:x", 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("random:x"));
}

TEST_F(RunLibraryTest, ADirectoryServesEveryRankUnlessARankHasItsOwn) {
  WriteInputs(dir_, 1.0);
  WriteInputs(dir_ + "/rank1", 2.0);
  auto rank0 = ProgramInputs(program_, dir_, 0);
  auto rank1 = ProgramInputs(program_, dir_, 1);
  auto rank2 = ProgramInputs(program_, dir_, 2);
  ASSERT_TRUE(rank0.ok()) << rank0.status();
  ASSERT_TRUE(rank1.ok()) << rank1.status();
  ASSERT_TRUE(rank2.ok()) << rank2.status();
  EXPECT_EQ(Values((*rank0)[0])[0], 1.0);
  EXPECT_EQ(Values((*rank1)[0])[0], 2.0);
  EXPECT_EQ(Values((*rank2)[0])[0], 1.0);
  EXPECT_THAT(Values((*rank0)[3]), ::testing::ElementsAre(1, 2, 3));
}

TEST_F(RunLibraryTest, AMissingFileNamesTheParameter) {
  WriteInputs(dir_, 1.0);
  ASSERT_EQ(std::remove((dir_ + "/flag.npy").c_str()), 0);
  absl::Status s = ProgramInputs(program_, dir_, 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("input %flag"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("flag.npy"));
}

TEST_F(RunLibraryTest, AMissingDirectoryIsAnError) {
  absl::Status s = ProgramInputs(program_, dir_ + "/absent", 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("absent"));
}

TEST_F(RunLibraryTest, AWrongDTypeOrShapeNamesParameterAndFile) {
  WriteInputs(dir_, 1.0);
  ASSERT_TRUE(WriteNpy(dir_ + "/n.npy", Make(ir::DType::kI64, {5}, {})).ok());
  absl::Status s = ProgramInputs(program_, dir_, 0).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("input %n"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("expected i32[5], the file holds i64[5]"));
  ASSERT_TRUE(WriteNpy(dir_ + "/n.npy", Make(ir::DType::kI32, {6}, {})).ok());
  s = ProgramInputs(program_, dir_, 0).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("expected i32[5], the file holds i32[6]"));
}

TEST_F(RunLibraryTest, AMalformedFileNamesIt) {
  WriteInputs(dir_, 1.0);
  FILE* f = std::fopen((dir_ + "/h.npy").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("not numpy", f);
  std::fclose(f);
  absl::Status s = ProgramInputs(program_, dir_, 0).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("h.npy"));
}

TEST(CompareOutputs, PassesWithinTheTolerance) {
  // f32: |a - e| <= 1e-5 * max|e| + 1e-4 * |e|.
  std::vector<HostTensor> expected = {F32({3}, {100, -1, 0})};
  std::vector<HostTensor> close = {F32({3}, {100.009, -1.0009, 0.0009})};
  EXPECT_TRUE(CompareOutputs(close, expected, 0).ok());
  std::vector<HostTensor> bf_expected = {Make(ir::DType::kBF16, {2}, {1, 64})};
  std::vector<HostTensor> bf_close = {Make(ir::DType::kBF16, {2}, {1.0078125, 65})};
  EXPECT_TRUE(CompareOutputs(bf_close, bf_expected, 0).ok());
}

TEST(CompareOutputs, NamesOutputAndIndexOfTheFirstDifference) {
  std::vector<HostTensor> expected = {F32({2}, {1, 2}), F32({3}, {100, -1, 0})};
  std::vector<HostTensor> actual = {F32({2}, {1, 2}), F32({3}, {100, -1.002, 0})};
  absl::Status s = CompareOutputs(actual, expected, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("worker 3 output 1 differs from the CPU reference at flat index 1"));
}

TEST(CompareOutputs, IntegersCompareExactly) {
  std::vector<HostTensor> expected = {Make(ir::DType::kI32, {2}, {5, 1000000})};
  std::vector<HostTensor> actual = {Make(ir::DType::kI32, {2}, {5, 1000001})};
  EXPECT_THAT(std::string(CompareOutputs(actual, expected, 0).message()), HasSubstr("flat index 1"));
}

TEST(CompareOutputs, NaNMatchesOnlyNaN) {
  const double nan = std::nan("");
  EXPECT_TRUE(CompareOutputs({F32({1}, {nan})}, {F32({1}, {nan})}, 0).ok());
  EXPECT_FALSE(CompareOutputs({F32({1}, {nan})}, {F32({1}, {1})}, 0).ok());
  EXPECT_FALSE(CompareOutputs({F32({1}, {1})}, {F32({1}, {nan})}, 0).ok());
}

TEST(CompareOutputs, DifferentCountsOrTypesFail) {
  EXPECT_FALSE(CompareOutputs({F32({1}, {1})}, {F32({1}, {1}), F32({1}, {1})}, 0).ok());
  EXPECT_THAT(std::string(CompareOutputs({F32({2}, {1, 1})}, {F32({1}, {1})}, 0).message()), HasSubstr("output 0"));
}

TEST(RunReference, AllReducesSumTheWorkersInputs) {
  constexpr char kText[] = "def @main(%x: f32[3]) -> f32[3] {\n  %s = allreduce(%x, op=sum)\n  return %s\n}\n";
  auto program = CompileForExecution(kText, "ref.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  auto reference = RunReference(*program, 3, "random-per-rank:5");
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->size(), 3u);
  std::vector<double> sum(3, 0.0);
  for (int k = 0; k < 3; ++k) {
    auto in = ProgramInputs(*program, "random-per-rank:5", k);
    ASSERT_TRUE(in.ok());
    for (int i = 0; i < 3; ++i) sum[i] += static_cast<float>(Values((*in)[0])[i]);
  }
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(Values((*reference)[k][0])[i], sum[i], 1e-6);
}

TEST(RunReference, AFailingWorkerIsNamedAndTheOthersDoNotHang) {
  // Inputs from a directory that does not exist: every worker fails before its all-reduce.
  constexpr char kText[] = "def @main(%x: f32[3]) -> f32[3] {\n  %s = allreduce(%x, op=sum)\n  return %s\n}\n";
  auto program = CompileForExecution(kText, "ref.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  absl::Status s = RunReference(*program, 2, "/nonexistent/inputs").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("reference worker"));
}

// The fused all-reduce (vdev.allreduce_add_rms_norm) on 2 workers as threads gives what the three
// unfused ops give: both programs compute h = residual + sum and n = rms_norm(h) with one rounding
// per stored value, so the outputs agree within CompareOutputs' tolerance (equal up to the order of
// the norm's f32/f64 accumulation).
TEST(RunReference, FusedAllReduceMatchesTheUnfusedChain) {
  constexpr char kText[] =
      R"(def @main(%x: bf16[8,64], %w: bf16[64,64], %g: bf16[64], %w2: bf16[64,64], %g2: bf16[64]) -> (bf16[8,64], bf16[8,64]) {
  %o = matmul(%x, %w)
  %ar = allreduce(%o, op=sum)
  %h = add(%x, %ar)
  %n = rms_norm(%h, %g)
  %d = matmul(%n, %w2)
  %flat = reshape(%d, [512])
  %ar2 = allreduce(%flat, op=sum)
  %back = reshape(%ar2, [8, 64])
  %h2 = add(%h, %back)
  %n2 = rms_norm(%h2, %g2, epsilon=0.001)
  %out = (%h2, %n2)
  return %out
})";
  LowerOptions unfused_options;
  unfused_options.fuse_allreduce = false;
  auto fused = CompileForExecution(kText, "fused.vdev");
  auto unfused = CompileForExecution(kText, "unfused.vdev", unfused_options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  ASSERT_EQ(fused->memory.fused.size(), 2u);
  ASSERT_TRUE(unfused->memory.fused.empty());
  auto a = RunReference(*fused, 2, "random:11");
  auto b = RunReference(*unfused, 2, "random:11");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ((*a)[k].size(), 2u);
    EXPECT_TRUE(CompareOutputs((*a)[k], (*b)[k], k).ok()) << CompareOutputs((*a)[k], (*b)[k], k);
    // The residual sums are the same roundings of the same sums: bitwise equal.
    EXPECT_EQ((*a)[k][0].bytes, (*b)[k][0].bytes) << "worker " << k;
  }
}

TEST(Summarize, PrintsTypeSumAndMeanAbsoluteValue) {
  EXPECT_EQ(Summarize(F32({2, 2}, {1, -2, 3, -4})), "f32[2,2] sum=-2 mean|x|=2.5");
}

}  // namespace
}  // namespace vdev
