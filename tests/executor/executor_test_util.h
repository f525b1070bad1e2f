// Helpers of the executor tests: compile a program text, run it on the host backend (one worker)
// or on N threads of one ThreadGroup, and build or read small tensors.
#ifndef VDEV_TESTS_EXECUTOR_EXECUTOR_TEST_UTIL_H_
#define VDEV_TESTS_EXECUTOR_EXECUTOR_TEST_UTIL_H_

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/executor/executor.h"
#include "vdev/kernels/tensor.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::testing_executor {

// A tensor of `dtype` holding `values` (converted as the dtype stores them).
inline HostTensor Make(ir::DType dtype, Shape shape, const std::vector<double>& values) {
  HostTensor t = HostTensor::Zeros(dtype, std::move(shape));
  const TensorRef ref = t.Ref();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.NumElements(); ++i) {
    WriteFromDouble(ref, static_cast<int64_t>(i), values[i]);
  }
  return t;
}

inline HostTensor F32(Shape shape, const std::vector<double>& values) {
  return Make(ir::DType::kF32, std::move(shape), values);
}

inline std::vector<double> Values(const HostTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(ReadAsDouble(t.Ref(), i));
  return out;
}

// One worker on the host backend, no session: the program runs once on `inputs`.
inline absl::StatusOr<std::vector<HostTensor>> RunOnHost(const LoweredProgram& program,
                                                         const std::vector<HostTensor>& inputs) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateHostBackend(nullptr));
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
  return executor->Run(inputs);
}

inline absl::StatusOr<std::vector<HostTensor>> CompileAndRun(absl::string_view text,
                                                             const std::vector<HostTensor>& inputs) {
  VDEV_ASSIGN_OR_RETURN(LoweredProgram program, CompileForExecution(text, "test.vdev"));
  return RunOnHost(program, inputs);
}

// `inputs[k]` are worker k's; result[k] its outputs. The first failing worker's status otherwise.
inline absl::StatusOr<std::vector<std::vector<HostTensor>>> RunOnThreads(
    const LoweredProgram& program, const std::vector<std::vector<HostTensor>>& inputs) {
  const int n = static_cast<int>(inputs.size());
  ThreadGroup group(n);
  std::vector<std::vector<HostTensor>> results(n);
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k) {
    threads.emplace_back([&, k] {
      statuses[k] = [&]() -> absl::Status {
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, k));
        if (backend->rank() != k || backend->world_size() != n) return absl::InternalError("wrong rank or world size");
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(program, backend.get()));
        VDEV_ASSIGN_OR_RETURN(results[k], executor->Run(inputs[k]));
        return absl::OkStatus();
      }();
      if (!statuses[k].ok()) group.Abort(statuses[k]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) VDEV_RETURN_IF_ERROR(s);
  return results;
}

}  // namespace vdev::testing_executor

#endif  // VDEV_TESTS_EXECUTOR_EXECUTOR_TEST_UTIL_H_
