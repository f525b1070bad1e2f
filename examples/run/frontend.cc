// A C++ frontend: builds a program with the builder API, plans it (printing where each value lives,
// checked against the placement stated below), lowers it and runs it through the executor API on
// one worker (the host backend, or CUDA with --cuda), then prints the result.
//
//   build/examples/run/frontend            # host backend
//   build/examples/run/frontend --cuda     # CUDA backend (a vdev built with the CUDA runtime, a GPU)
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/ir/ir_builder.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/status_macros.h"

namespace {

using vdev::ir::Arg;
using vdev::ir::DType;
using vdev::ir::ValueRef;

// y = softmax(gelu(x @ w) + b): one dense layer, everything on the default device cuda:0 except the
// bias add, which runs on the CPU. One annotation is not enough for that: an op's operands and
// result share one device, so on_device(add(%a, %b), cpu:0) alone would pull %a, gelu, the matmul
// and %x, %w onto the CPU too (docs/planner.md). A second annotation keeps gelu on cuda:0, and its
// result is where the copy to the CPU happens: two copies, which the executor performs.
constexpr char kExpectedPlacement[] =
    "%x cuda:0, %w cuda:0, %b cpu:0, %h cuda:0, %a cuda:0, %sum cpu:0, %y cuda:0; 2 copies";

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
  ValueRef a_gpu = b.Op("on_device", {a, vdev::VirtualDevice::ForDevice(vdev::DeviceType::kCUDA, 0)}, {}, "a_gpu");
  ValueRef sum = b.Op("add", {a_gpu, bias}, {}, "sum");
  ValueRef pinned = b.Op("on_device", {sum, vdev::VirtualDevice::ForDevice(vdev::DeviceType::kCPU, 0)}, {}, "pinned");
  ValueRef y = b.Op("softmax", {pinned}, {{"axis", Arg::Int(-1)}}, "y");
  b.Return(y);
  b.EndFunction();
  return std::move(b).Finish();
}

// "%x cuda:0, …; 2 copies": each parameter and surviving binding of @main with its planned device.
absl::StatusOr<std::string> Placement(const vdev::ir::Module& module) {
  VDEV_ASSIGN_OR_RETURN(vdev::PlanResult plan, vdev::PlanDevices(module, vdev::PlanOptions{}));
  const vdev::ir::Module& m = plan.module;
  std::vector<std::string> values;
  for (const vdev::ir::Param& p : m.Params(m.functions[m.FindGlobal("main")]))
    values.push_back(absl::StrCat("%", m.Name(p.name), " ", m.Device(p.device).ToString()));
  for (vdev::ir::BindingId b = 0; b < plan.input_bindings; ++b)
    if (!plan.binding_replaced[b] && plan.binding_devices[b] != vdev::ir::kNoDevice)
      values.push_back(
          absl::StrCat("%", m.Name(m.bindings[b].name), " ", m.Device(plan.binding_devices[b]).ToString()));
  return absl::StrCat(absl::StrJoin(values, ", "), "; ", plan.copies.size(), " copies");
}

absl::Status Run(bool cuda) {
  VDEV_ASSIGN_OR_RETURN(vdev::ir::Module module, BuildLayer());
  VDEV_ASSIGN_OR_RETURN(std::string placement, Placement(module));
  std::cout << "placement: " << placement << "\n";
  if (placement != kExpectedPlacement)
    return absl::InternalError(absl::StrCat("the placement differs from the one stated: ", kExpectedPlacement));
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
