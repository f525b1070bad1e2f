// Programs whose values cross between cuda:0 and cuda:1, run on the CUDA backend with new inputs on
// every run and compared with the host backend: on two GPUs (one stream each), and on one GPU with
// a stream per virtual device and a delay before every piece of work, where a missing cross-stream
// event reads a producer's result too early every time. Without a GPU (CI) the programs are still
// compiled and run on the host, and the GPU cases skip.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "cross_device_programs.h"
#include "executor_test_util.h"
#include "gtest/gtest.h"
#include "vdev/executor/run.h"

namespace vdev {
namespace {

using testing_executor::CrossDeviceProgram;
using testing_executor::RandomCrossDeviceProgram;

constexpr int kPrograms = 100;
constexpr int kRunsPerProgram = 10;  // eager, captured, then replayed: 1,000 checked runs in all

std::vector<HostTensor> RandomInputs(const LoweredProgram& program, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<HostTensor> inputs;
  const ir::Module& m = program.module;
  for (const ir::Param& p : m.Params(m.functions[m.FindGlobal("main")])) {
    absl::Span<const int64_t> dims = m.types.dims(p.type);
    HostTensor t = HostTensor::Zeros(ir::DType::kF32, Shape(dims.begin(), dims.end()));
    float* data = reinterpret_cast<float*>(t.bytes.data());
    for (int64_t i = 0; i < t.NumElements(); ++i) data[i] = uniform(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

int GpuCountOrZero() { return VisibleCudaDevices(); }

std::string ExamplesDir() {
  const char* dir = std::getenv("VDEV_EXAMPLES_DIR");
  return dir != nullptr && *dir != 0 ? dir : VDEV_EXAMPLES_DIR;
}

struct Tally {
  int runs = 0;
  int wrong = 0;
  std::string first_wrong;
};

// Every program of the set, `kRunsPerProgram` runs each with fresh inputs, against the host backend.
absl::StatusOr<Tally> RunAgainstHost(const CudaBackendOptions& options, int programs, int runs_per_program) {
  Tally tally;
  for (int p = 0; p < programs; ++p) {
    const CrossDeviceProgram generated = RandomCrossDeviceProgram(static_cast<uint32_t>(p));
    VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(generated.text, "cross_device.vdev"));
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> cuda, CreateCudaBackend(nullptr, 2, options));
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, cuda.get()));
    for (int r = 0; r < runs_per_program; ++r) {
      const std::vector<HostTensor> inputs = RandomInputs(program, static_cast<uint32_t>(p * 1000 + r));
      VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> expected, testing_executor::RunOnHost(program, inputs));
      VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> actual, executor->Run(inputs));
      ++tally.runs;
      if (absl::Status same = CompareOutputs(actual, expected, 0); !same.ok()) {
        if (tally.wrong++ == 0)
          tally.first_wrong = absl::StrCat("program ", p, " run ", r, ": ", same.message(), "\n", generated.text);
      }
    }
  }
  return tally;
}

TEST(CudaBackendOptions, ComeFromTheEnvironment) {
  setenv("VDEV_CUDA_STREAMS", "per-virtual-device", 1);
  setenv("VDEV_CUDA_PRODUCER_DELAY_US", "25", 1);
  absl::StatusOr<CudaBackendOptions> options = CudaBackendOptionsFromEnvironment();
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->streams, CudaStreams::kPerVirtualDevice);
  EXPECT_EQ(options->producer_delay_us, 25);
  EXPECT_TRUE(options->order_streams);
  setenv("VDEV_CUDA_STREAMS", "per-stream", 1);
  options = CudaBackendOptionsFromEnvironment();
  EXPECT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("VDEV_CUDA_STREAMS='per-stream'"), std::string::npos) << options.status();
  setenv("VDEV_CUDA_STREAMS", "per-gpu", 1);
  setenv("VDEV_CUDA_PRODUCER_DELAY_US", "-3", 1);
  options = CudaBackendOptionsFromEnvironment();
  EXPECT_FALSE(options.ok());
  unsetenv("VDEV_CUDA_STREAMS");
  unsetenv("VDEV_CUDA_PRODUCER_DELAY_US");
  options = CudaBackendOptionsFromEnvironment();
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->streams, CudaStreams::kPerGpu);
  EXPECT_EQ(options->producer_delay_us, 0);
}

TEST(CrossDevicePrograms, CompileWithTheirCopiesAndRunOnTheHost) {
  for (uint32_t seed = 0; seed < kPrograms; ++seed) {
    const CrossDeviceProgram generated = RandomCrossDeviceProgram(seed);
    ASSERT_GE(generated.copies, 1) << generated.text;
    absl::StatusOr<LoweredProgram> program = CompileForExecution(generated.text, "cross_device.vdev");
    ASSERT_TRUE(program.ok()) << program.status() << "\n" << generated.text;
    absl::StatusOr<std::vector<HostTensor>> out = testing_executor::RunOnHost(*program, RandomInputs(*program, seed));
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << generated.text;
    ASSERT_EQ(out->size(), 1u);
  }
}

TEST(CrossDevicePrograms, MatchTheHostOnTwoGpus) {
  if (GpuCountOrZero() < 2) GTEST_SKIP() << "needs 2 GPUs, found " << GpuCountOrZero();
  absl::StatusOr<Tally> tally = RunAgainstHost(CudaBackendOptions{}, kPrograms, kRunsPerProgram);
  ASSERT_TRUE(tally.ok()) << tally.status();
  EXPECT_EQ(tally->runs, kPrograms * kRunsPerProgram);
  EXPECT_EQ(tally->wrong, 0) << tally->first_wrong;
}

TEST(CrossDevicePrograms, MatchTheHostOnSeparateStreamsOfOneGpu) {
  if (GpuCountOrZero() < 1) GTEST_SKIP() << "needs a GPU";
  CudaBackendOptions options;
  options.streams = CudaStreams::kPerVirtualDevice;
  options.producer_delay_us = 20;
  absl::StatusOr<Tally> tally = RunAgainstHost(options, kPrograms, kRunsPerProgram);
  ASSERT_TRUE(tally.ok()) << tally.status();
  EXPECT_EQ(tally->runs, kPrograms * kRunsPerProgram);
  EXPECT_EQ(tally->wrong, 0) << tally->first_wrong;
}

// The mode above proves something only if it fails without the events: the same programs with the
// cross-stream events left out must give wrong answers.
TEST(CrossDevicePrograms, SeparateStreamsCatchMissingEvents) {
  if (GpuCountOrZero() < 1) GTEST_SKIP() << "needs a GPU";
  CudaBackendOptions options;
  options.streams = CudaStreams::kPerVirtualDevice;
  options.producer_delay_us = 200;
  options.order_streams = false;
  absl::StatusOr<Tally> tally = RunAgainstHost(options, 10, 3);
  ASSERT_TRUE(tally.ok()) << tally.status();
  EXPECT_GT(tally->wrong, tally->runs / 2) << "of " << tally->runs << " runs without cross-stream events";
}

TEST(CrossDevicePrograms, TwoGpusWithoutEventsGiveWrongAnswers) {
  if (GpuCountOrZero() < 2) GTEST_SKIP() << "needs 2 GPUs, found " << GpuCountOrZero();
  CudaBackendOptions options;
  options.producer_delay_us = 200;
  options.order_streams = false;
  absl::StatusOr<Tally> tally = RunAgainstHost(options, 10, 3);
  ASSERT_TRUE(tally.ok()) << tally.status();
  EXPECT_GT(tally->wrong, tally->runs / 2) << "of " << tally->runs << " runs without cross-stream events";
}

// The shipped examples on one worker, 20 runs each, inputs alternating between two seeds (a run that
// read a buffer before the run before it had rewritten it would see the other inputs' values).
absl::Status ExamplesMatchTheHost(const CudaBackendOptions& options) {
  for (const char* name :
       {"memory/tp_pp_transformer_10.vdev", "memory/tp_transformer_10.vdev", "memory/allreduce_reshape.vdev",
        "run/tp_mlp.vdev", "run/heterogeneous.vdev", "planner/two_devices.vdev"}) {
    const std::string path = absl::StrCat(ExamplesDir(), "/", name);
    std::ifstream file(path);
    if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path, " (VDEV_EXAMPLES_DIR names the folder)"));
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(text, path));
    std::vector<std::vector<HostTensor>> inputs, expected;
    for (const char* seed : {"random:1", "random:2"}) {
      VDEV_ASSIGN_OR_RETURN(inputs.emplace_back(), ProgramInputs(program, seed, 0));
      VDEV_ASSIGN_OR_RETURN(expected.emplace_back(), testing_executor::RunOnHost(program, inputs.back()));
    }
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> cuda,
                          CreateCudaBackend(nullptr, VirtualCudaDevices(program.module), options));
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, cuda.get()));
    for (int run = 0; run < 20; ++run) {
      VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> actual, executor->Run(inputs[run % 2]));
      if (absl::Status same = CompareOutputs(actual, expected[run % 2], 0); !same.ok())
        return absl::Status(same.code(), absl::StrCat(name, " run ", run, ": ", same.message()));
    }
  }
  return absl::OkStatus();
}

TEST(CrossDeviceExamples, MatchTheHostOnEveryRunOnTwoGpus) {
  if (GpuCountOrZero() < 2) GTEST_SKIP() << "needs 2 GPUs, found " << GpuCountOrZero();
  EXPECT_TRUE(ExamplesMatchTheHost(CudaBackendOptions{}).ok()) << ExamplesMatchTheHost(CudaBackendOptions{});
}

TEST(CrossDeviceExamples, MatchTheHostOnEveryRunOnSeparateStreamsOfOneGpu) {
  if (GpuCountOrZero() < 1) GTEST_SKIP() << "needs a GPU";
  CudaBackendOptions options;
  options.streams = CudaStreams::kPerVirtualDevice;
  options.producer_delay_us = 20;
  const absl::Status status = ExamplesMatchTheHost(options);
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace vdev
