// All-reduces of the executor on 2-4 workers as threads (ThreadGroup), every reduction and the
// dtypes f32/f16/bf16/i32, against values computed here; and ReduceInRankOrder on its own.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/executor.h"

namespace vdev {
namespace {

using testing_executor::Make;
using testing_executor::RunOnThreads;
using testing_executor::Values;

// Worker k's element i: small multiples of 1/2 (exact in every dtype tested, products included),
// negative, zero and positive, different on every worker.
double Element(int k, int i) { return (i - 1) * (k + 1) * 0.5; }

double Expected(ReduceOp op, int workers, int i, ir::DType dtype) {
  double acc = Element(0, i);
  for (int k = 1; k < workers; ++k) {
    const double x = Element(k, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += x; break;
      case ReduceOp::kMax: acc = std::max(acc, x); break;
      case ReduceOp::kMin: acc = std::min(acc, x); break;
      case ReduceOp::kProd: acc *= x; break;
    }
  }
  if (op == ReduceOp::kAvg) acc = dtype == ir::DType::kI32 ? std::trunc(acc / workers) : acc / workers;
  return acc;
}

struct Case {
  ReduceOp op;
  const char* op_name;
  ir::DType dtype;
  int workers;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(info.param.op_name, "_", ir::DTypeName(info.param.dtype), "_", info.param.workers, "workers");
}

class ExecutorAllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(ExecutorAllReduce, MatchesTheReductionComputedByHand) {
  const Case c = GetParam();
  const std::string type = absl::StrCat(ir::DTypeName(c.dtype), "[4]");
  const std::string text = absl::StrCat("def @main(%x: ", type, ") -> ", type,
                                        " {\n  %s = allreduce(%x, op=", c.op_name, ")\n  return %s\n}\n");
  absl::StatusOr<LoweredProgram> program = CompileForExecution(text, "allreduce.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  std::vector<std::vector<HostTensor>> inputs(c.workers);
  for (int k = 0; k < c.workers; ++k) {
    std::vector<double> v;
    for (int i = 0; i < 4; ++i) v.push_back(c.dtype == ir::DType::kI32 ? std::trunc(Element(k, i) * 2) : Element(k, i));
    inputs[k].push_back(Make(c.dtype, {4}, v));
  }
  auto results = RunOnThreads(*program, inputs);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int k = 0; k < c.workers; ++k) {
    ASSERT_EQ((*results)[k].size(), 1u);
    const std::vector<double> got = Values((*results)[k][0]);
    for (int i = 0; i < 4; ++i) {
      double want = Expected(c.op, c.workers, i, c.dtype);
      if (c.dtype == ir::DType::kI32) {
        // The i32 inputs are the halves doubled: recompute on them.
        double acc = std::trunc(Element(0, i) * 2);
        for (int r = 1; r < c.workers; ++r) {
          const double x = std::trunc(Element(r, i) * 2);
          if (c.op == ReduceOp::kSum || c.op == ReduceOp::kAvg) acc += x;
          if (c.op == ReduceOp::kMax) acc = std::max(acc, x);
          if (c.op == ReduceOp::kMin) acc = std::min(acc, x);
          if (c.op == ReduceOp::kProd) acc *= x;
        }
        want = c.op == ReduceOp::kAvg ? std::trunc(acc / c.workers) : acc;
      }
      EXPECT_EQ(got[i], want) << "worker " << k << " element " << i;
    }
  }
}

std::vector<Case> AllCases() {
  const std::pair<ReduceOp, const char*> ops[] = {{ReduceOp::kSum, "sum"},
                                                  {ReduceOp::kMax, "max"},
                                                  {ReduceOp::kMin, "min"},
                                                  {ReduceOp::kProd, "prod"},
                                                  {ReduceOp::kAvg, "avg"}};
  std::vector<Case> cases;
  for (const auto& [op, name] : ops)
    for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI32})
      for (int workers : {2, 4}) cases.push_back(Case{op, name, dtype, workers});
  cases.push_back(Case{ReduceOp::kSum, "sum", ir::DType::kF32, 3});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryOpAndDType, ExecutorAllReduce, ::testing::ValuesIn(AllCases()), CaseName);

TEST(ExecutorAllReduceProgram, TensorParallelMlpEqualsTheUnsplitComputation) {
  // Two workers each hold half of the hidden units; the all-reduce adds their partial products.
  constexpr char kText[] = R"(def @main(%x: f32[1,2], %w1: f32[2,1], %w2: f32[1,2]) -> f32[1,2] {
  %h = matmul(%x, %w1)
  %y = matmul(%h, %w2)
  %s = allreduce(%y, op=sum)
  return %s
})";
  auto program = CompileForExecution(kText, "mlp.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
  // Full: x = [1, 2], W1 = [[1, 3], [2, 4]], W2 = [[1, 0], [0, 1]] -> x W1 W2 = [5, 11].
  std::vector<std::vector<HostTensor>> inputs = {
      {testing_executor::F32({1, 2}, {1, 2}), testing_executor::F32({2, 1}, {1, 2}),
       testing_executor::F32({1, 2}, {1, 0})},
      {testing_executor::F32({1, 2}, {1, 2}), testing_executor::F32({2, 1}, {3, 4}),
       testing_executor::F32({1, 2}, {0, 1})}};
  auto results = RunOnThreads(*program, inputs);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int k = 0; k < 2; ++k) EXPECT_THAT(Values((*results)[k][0]), ::testing::ElementsAre(5, 11));
}

TEST(ReduceInRankOrder, SumsHalvesInFloatAndRoundsOnce) {
  // 2048 + 1 + 1 in f16: rounding after each step would give 2048 (ties to even); once gives 2050.
  const uint16_t a = FloatToHalf(2048), b = FloatToHalf(1), c = FloatToHalf(1);
  const void* inputs[] = {&a, &b, &c};
  uint16_t out = 0;
  ASSERT_TRUE(ReduceInRankOrder(inputs, &out, 1, ir::DType::kF16, ReduceOp::kSum).ok());
  EXPECT_EQ(HalfToFloat(out), 2050);
}

TEST(ReduceInRankOrder, EveryOpOnFloats) {
  const float a[] = {1, -2, 3}, b[] = {4, 5, -6};
  const void* inputs[] = {a, b};
  float out[3];
  ASSERT_TRUE(ReduceInRankOrder(inputs, out, 3, ir::DType::kF32, ReduceOp::kMax).ok());
  EXPECT_THAT(out, ::testing::ElementsAre(4, 5, 3));
  ASSERT_TRUE(ReduceInRankOrder(inputs, out, 3, ir::DType::kF32, ReduceOp::kMin).ok());
  EXPECT_THAT(out, ::testing::ElementsAre(1, -2, -6));
  ASSERT_TRUE(ReduceInRankOrder(inputs, out, 3, ir::DType::kF32, ReduceOp::kProd).ok());
  EXPECT_THAT(out, ::testing::ElementsAre(4, -10, -18));
  ASSERT_TRUE(ReduceInRankOrder(inputs, out, 3, ir::DType::kF32, ReduceOp::kAvg).ok());
  EXPECT_THAT(out, ::testing::ElementsAre(2.5, 1.5, -1.5));
}

TEST(ReduceInRankOrder, BFloat16AccumulatesInFloat) {
  // 256 + 1 + 1 in bf16 (8 bits of mantissa): 257 is not representable, 258 is.
  const uint16_t a = FloatToBF16(256), b = FloatToBF16(1);
  const void* inputs[] = {&a, &b, &b};
  uint16_t out = 0;
  ASSERT_TRUE(ReduceInRankOrder(inputs, &out, 1, ir::DType::kBF16, ReduceOp::kSum).ok());
  EXPECT_EQ(BF16ToFloat(out), 258);
}

TEST(ReduceInRankOrder, RejectsNoInputsAndBooleans) {
  uint8_t out = 0;
  EXPECT_EQ(ReduceInRankOrder({}, &out, 1, ir::DType::kF32, ReduceOp::kSum).code(), absl::StatusCode::kInvalidArgument);
  const uint8_t a = 1;
  const void* inputs[] = {&a};
  absl::Status s = ReduceInRankOrder(inputs, &out, 1, ir::DType::kBool, ReduceOp::kSum);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("bool"));
}

}  // namespace
}  // namespace vdev
