// RunOnWorkers (vdev/executor/run.h) on thread workers, and what it refuses before any worker starts (the
// process path runs in the tp_frontend example's ctest entry, whose workers re-run the example),
// and the checks a program to run gets: known ops, a worker count the program can mean.
#include <string>
#include <vector>

#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/run.h"
#include "vdev/ir/ir_builder.h"
#include "vdev/ir/op_registry.h"
#include "vdev/kernels/kernels.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using testing_executor::F32;
using testing_executor::Values;

// def @main(%x: f32[3]) -> f32[3] { %s = allreduce(%x, op=sum[, workers=N]) %y = negative(%s) return %y }
ir::Module AllReduceModule(int written_for = 0) {
  ir::ModuleBuilder b;
  const ir::TypeId t = b.TensorType(ir::DType::kF32, {3});
  b.BeginFunction("main");
  ir::ValueRef x = b.Param("x", t);
  b.SetResult(t);
  std::vector<ir::NamedArg> attrs = {{"op", ir::Arg::Ident("sum")}};
  if (written_for > 0) attrs.push_back({"workers", ir::Arg::Int(written_for)});
  ir::ValueRef s = b.Op("allreduce", {x}, attrs, "s");
  b.Return(b.Op("negative", {s}, {}, "y"));
  b.EndFunction();
  absl::StatusOr<ir::Module> m = std::move(b).Finish();
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

WorkerRunOptions Threads() {
  WorkerRunOptions options;
  options.kind = WorkerKind::kThreads;
  return options;
}

TEST(RunOnWorkers, ThreadWorkersGetTheirOwnInputsAndAllReduceAcrossThem) {
  std::vector<std::vector<HostTensor>> inputs = {
      {F32({3}, {1, 2, 3})}, {F32({3}, {10, 20, 30})}, {F32({3}, {100, 200, 300})}};
  auto outputs = RunOnWorkers(AllReduceModule(), inputs, Threads());
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 3u);
  for (const std::vector<HostTensor>& out : *outputs) {
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Values(out[0]), (std::vector<double>{-111, -222, -333}));
  }
}

TEST(RunOnWorkers, InputsOfTheWrongCountDtypeOrShapeNameTheWorker) {
  const ir::Module m = AllReduceModule();
  auto none = RunOnWorkers(m, {{}, {F32({3}, {1, 2, 3})}});
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("worker 0: @main takes 1 inputs, got 0"));
  auto shape = RunOnWorkers(m, {{F32({3}, {1, 2, 3})}, {F32({2}, {1, 2})}});
  EXPECT_THAT(std::string(shape.status().message()), HasSubstr("worker 1 input 0 (%x): expected f32[3], found f32[2]"));
  auto dtype = RunOnWorkers(m, {{HostTensor::Zeros(ir::DType::kF64, {3})}});
  EXPECT_THAT(std::string(dtype.status().message()), HasSubstr("worker 0 input 0 (%x): expected f32[3], found f64[3]"));
}

TEST(RunOnWorkers, AWorkerCountTheProgramIsNotWrittenForIsRefused) {
  const ir::Module m = AllReduceModule(/*written_for=*/2);
  std::vector<std::vector<HostTensor>> three(3, {F32({3}, {1, 2, 3})});
  auto refused = RunOnWorkers(m, three, Threads());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("the all-reduce %s is written for 2 workers (workers=2); it cannot run on 3"));
  auto two = RunOnWorkers(m, {three[0], three[1]}, Threads());
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(Values((*two)[1][0]), (std::vector<double>{-2, -4, -6}));
}

TEST(RunOnWorkers, RefusesWhatItCannotRun) {
  const ir::Module m = AllReduceModule();
  std::vector<std::vector<HostTensor>> one = {{F32({3}, {1, 2, 3})}};
  EXPECT_THAT(std::string(RunOnWorkers(m, {}).status().message()), HasSubstr("the inputs of 1 to 8 workers, got 0"));
  WorkerRunOptions cuda_threads = Threads();
  cuda_threads.backend = "cuda";
  EXPECT_THAT(std::string(RunOnWorkers(m, one, cuda_threads).status().message()), HasSubstr("host backend only"));
  WorkerRunOptions strategy = Threads();
  strategy.allreduce_strategy = "fastest";
  EXPECT_THAT(std::string(RunOnWorkers(m, one, strategy).status().message()), HasSubstr("found 'fastest'"));
}

TEST(KnownOps, AnUnknownOpIsALocatedErrorWithTheClosestKnownName) {
  auto program =
      CompileForExecution("def @main(%x: f32[4]) -> f32[4] {\n  %y = negatve(%x)\n  return %y\n}\n", "typo.vdev");
  ASSERT_FALSE(program.ok());
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("typo.vdev:2:8: error: unknown op 'negatve': no op of that name is registered and no kernel "
                        "runs it (did you mean 'negative'?)"));
  auto far =
      CompileForExecution("def @main(%x: f32[4]) -> f32[4] {\n  %y = frobnicate(%x)\n  return %y\n}\n", "far.vdev");
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(std::string(far.status().message()), HasSubstr("unknown op 'frobnicate'"));
  EXPECT_THAT(std::string(far.status().message()), ::testing::Not(HasSubstr("did you mean")));
}

TEST(KnownOps, ABuiltModuleNamesTheBindingOfAnUnknownOp) {
  ir::ModuleBuilder b;
  const ir::TypeId t = b.TensorType(ir::DType::kF32, {4});
  b.BeginFunction("main");
  ir::ValueRef x = b.Param("x", t);
  b.SetResult(t);
  b.Return(b.Op("matmull", {x}, {}, "y", t));
  b.EndFunction();
  absl::StatusOr<ir::Module> m = std::move(b).Finish();
  ASSERT_TRUE(m.ok()) << m.status();
  auto program = CompileForExecution(*std::move(m), "built");
  EXPECT_THAT(std::string(program.status().message()),
              HasSubstr("built: error: %y = matmull(%x): unknown op 'matmull'"));
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("(did you mean 'matmul'?)"));
}

TEST(KnownOps, OpsRegisteredByAFrontendOrAKernelStillCompile) {
  ir::OpDef def{.name = "test.twice", .min_args = 1, .max_args = 1, .infer = ir::SameAsFirstArg};
  (void)ir::OpRegistry::Global().Register(std::move(def));  // AlreadyExists on a rerun in one process
  (void)KernelRegistry::Global().Register("test.twice", DeviceType::kCPU, [](const KernelCall& call) -> absl::Status {
    for (int64_t i = 0; i < call.inputs[0].NumElements(); ++i)
      WriteFromDouble(call.outputs[0], i, 2 * ReadAsDouble(call.inputs[0], i));
    return absl::OkStatus();
  });
  auto program =
      CompileForExecution("def @main(%x: f32[2]) -> f32[2] {\n  %y = test.twice(%x)\n  return %y\n}\n", "ext.vdev");
  ASSERT_TRUE(program.ok()) << program.status();
}

}  // namespace
}  // namespace vdev
