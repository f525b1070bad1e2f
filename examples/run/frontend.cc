// A C++ frontend: builds a program with the builder API, plans it, lowers it and runs it through the
// executor API on one worker (the host backend, or CUDA with --cuda), then prints the result.
//
//   build/examples/run/frontend            # host backend
//   build/examples/run/frontend --cuda     # CUDA backend (a vdev built with the CUDA runtime, a GPU)
#include <cstring>
#include <iostream>

#include "vdev/executor.h"
#include "vdev/ir_builder.h"
#include "vdev/run.h"
#include "vdev/status_macros.h"

namespace {

using vdev::ir::Arg;
using vdev::ir::DType;
using vdev::ir::ValueRef;

// y = softmax(gelu(x @ w) + b): one dense layer, everything on the default device cuda:0, except
// the bias add pinned to the CPU (so the planner adds two copies, which the executor performs).
absl::StatusOr<vdev::ir::Module> BuildLayer() {
  vdev::ir::ModuleBuilder b;
  const auto x_type = b.TensorType(DType::kF32, {4, 8});
  const auto w_type = b.TensorType(DType::kF32, {8, 8});
  const auto b_type = b.TensorType(DType::kF32, {8});
  b.BeginFunction("main");
  ValueRef x = b.Param("x", x_type), w = b.Param("w", w_type), bias = b.Param("b", b_type);
  b.SetResult(x_type);
  ValueRef h = b.Op("matmul", {x, w}, {}, "h");
  ValueRef a = b.Op("gelu", {h}, {}, "a");
  ValueRef sum = b.Op("add", {a, bias}, {}, "sum");
  ValueRef pinned = b.Op("on_device", {sum, vdev::VirtualDevice::ForDevice(vdev::DeviceType::kCPU, 0)}, {}, "pinned");
  ValueRef y = b.Op("softmax", {pinned}, {{"axis", Arg::Int(-1)}}, "y");
  b.Return(y);
  b.EndFunction();
  return std::move(b).Finish();
}

absl::Status Run(bool cuda) {
  VDEV_ASSIGN_OR_RETURN(vdev::ir::Module module, BuildLayer());
  VDEV_ASSIGN_OR_RETURN(vdev::LoweredProgram program, vdev::CompileForExecution(std::move(module), "frontend"));
  std::unique_ptr<vdev::ExecutionBackend> backend;
  if (cuda) {
    VDEV_ASSIGN_OR_RETURN(backend, vdev::CreateCudaBackend(nullptr, 1));
  } else {
    VDEV_ASSIGN_OR_RETURN(backend, vdev::CreateHostBackend(nullptr));
  }
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<vdev::Executor> executor, vdev::Executor::Load(program, backend.get()));
  VDEV_ASSIGN_OR_RETURN(std::vector<vdev::HostTensor> inputs, vdev::ProgramInputs(program, "random:7", 0));
  VDEV_ASSIGN_OR_RETURN(std::vector<vdev::HostTensor> outputs, executor->Run(inputs));
  std::cout << "backend " << backend->name() << ": y = " << vdev::Summarize(outputs[0]) << "\n";
  // Each row of a softmax sums to 1.
  for (int row = 0; row < 4; ++row) {
    double total = 0;
    for (int col = 0; col < 8; ++col) total += vdev::ReadAsDouble(outputs[0].Ref(), row * 8 + col);
    std::cout << "row " << row << " sums to " << total << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const bool cuda = argc > 1 && std::strcmp(argv[1], "--cuda") == 0;
  absl::Status status = Run(cuda);
  if (!status.ok()) {
    std::cerr << "frontend: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
