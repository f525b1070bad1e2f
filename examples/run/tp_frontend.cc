// A C++ frontend for a tensor-parallel MLP: builds the program with the builder API, plans and
// lowers it (CompileForExecution, to print the placement), runs it on 2 workers (RunOnWorkers:
// worker processes, or threads with --threads), and checks every worker's output against the
// whole MLP computed by a plain loop.
//
//   build/examples/run/tp_frontend             # 2 worker processes (copies of this program)
//   build/examples/run/tp_frontend --threads   # 2 threads of this process
//
// The MLP is y = relu(x W1 + B1) W2 + B2 with x[8,16], W1[16,32], W2[32,16]. Worker k holds
// columns 16k..16k+15 of W1 and B1 and the same rows of W2 (column- then row-parallel): its matmuls
// give a partial y, and the all-reduce (written for 2 workers: `workers=2`) adds the two partials.
// x and B2 are replicated. Expected output: the placement line, then
//   worker 0 matches the plain loop (max |difference| … within …)
//   worker 1 matches the plain loop (…)
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "vdev/controller/controller.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/ir/ir_builder.h"
#include "vdev/support/status_macros.h"

namespace {

using vdev::HostTensor;
using vdev::ir::Arg;
using vdev::ir::DType;
using vdev::ir::ValueRef;

constexpr int kWorkers = 2, kRows = 8, kModel = 16, kHidden = 32, kShard = kHidden / kWorkers;

// One worker's share of the MLP; the same program runs on every worker.
absl::StatusOr<vdev::ir::Module> BuildShard() {
  vdev::ir::ModuleBuilder b;
  b.BeginFunction("main");
  ValueRef x = b.Param("x", b.TensorType(DType::kF32, {kRows, kModel}));
  ValueRef w1 = b.Param("w1", b.TensorType(DType::kF32, {kModel, kShard}));
  ValueRef b1 = b.Param("b1", b.TensorType(DType::kF32, {kShard}));
  ValueRef w2 = b.Param("w2", b.TensorType(DType::kF32, {kShard, kModel}));
  ValueRef b2 = b.Param("b2", b.TensorType(DType::kF32, {kModel}));
  b.SetResult(b.TensorType(DType::kF32, {kRows, kModel}));
  ValueRef h = b.Op("relu", {b.Op("add", {b.Op("matmul", {x, w1}, {}, "h"), b1}, {}, "hb")}, {}, "a");
  ValueRef partial = b.Op("matmul", {h, w2}, {}, "partial");
  ValueRef sum = b.Op("allreduce", {partial}, {{"op", Arg::Ident("sum")}, {"workers", Arg::Int(kWorkers)}}, "sum");
  b.Return(b.Op("add", {sum, b2}, {}, "y"));
  b.EndFunction();
  return std::move(b).Finish();
}

// A full matrix with deterministic entries of magnitude < 1.
std::vector<double> Matrix(int rows, int cols, double phase) {
  std::vector<double> m(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < m.size(); ++i) m[i] = std::sin(0.37 * static_cast<double>(i) + phase) / 2;
  return m;
}

// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of a row-major matrix with `stride` columns.
HostTensor Block(const std::vector<double>& m, int stride, int r0, int rows, int c0, int cols) {
  HostTensor t = HostTensor::Zeros(DType::kF32, rows == 1 ? vdev::Shape{cols} : vdev::Shape{rows, cols});
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) vdev::WriteFromDouble(t.Ref(), r * cols + c, m[(r0 + r) * stride + c0 + c]);
  return t;
}

struct Reference {
  std::vector<double> y;          // the MLP in double precision
  std::vector<double> magnitude;  // per element: the sum of the absolute values of every term
};

// The whole MLP, one plain loop per layer, on the f32 values the workers get.
Reference PlainLoop(const std::vector<double>& x, const std::vector<double>& w1, const std::vector<double>& b1,
                    const std::vector<double>& w2, const std::vector<double>& b2) {
  auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  std::vector<double> a(kRows * kHidden), a_magnitude(kRows * kHidden);
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kHidden; ++j) {
      double s = f32(b1[j]), m = std::fabs(f32(b1[j]));
      for (int i = 0; i < kModel; ++i) {
        s += f32(x[r * kModel + i]) * f32(w1[i * kHidden + j]);
        m += std::fabs(f32(x[r * kModel + i]) * f32(w1[i * kHidden + j]));
      }
      a[r * kHidden + j] = std::max(s, 0.0);
      a_magnitude[r * kHidden + j] = m;
    }
  Reference ref{std::vector<double>(kRows * kModel), std::vector<double>(kRows * kModel)};
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kModel; ++j) {
      double s = f32(b2[j]), m = std::fabs(f32(b2[j]));
      for (int i = 0; i < kHidden; ++i) {
        s += a[r * kHidden + i] * f32(w2[i * kModel + j]);
        m += (a[r * kHidden + i] + a_magnitude[r * kHidden + i]) * std::fabs(f32(w2[i * kModel + j]));
      }
      ref.y[r * kModel + j] = s;
      ref.magnitude[r * kModel + j] = m;
    }
  return ref;
}

absl::Status Run(vdev::WorkerKind kind) {
  VDEV_ASSIGN_OR_RETURN(vdev::ir::Module module, BuildShard());
  // Where the planner puts the shard: printed for the reader (RunOnWorkers plans again).
  VDEV_ASSIGN_OR_RETURN(vdev::LoweredProgram planned, vdev::CompileForExecution(module.Clone(), "tp_frontend"));
  int ipc_allreduces = 0;
  for (const vdev::FunctionMemory& f : planned.memory.functions)
    for (const vdev::AllReduceInfo& a : f.allreduces) ipc_allreduces += a.ipc ? 1 : 0;
  std::cout << "planned on the default device; " << ipc_allreduces << " all-reduce reads its input in ipc_memory\n";

  const std::vector<double> x = Matrix(kRows, kModel, 0.1), w1 = Matrix(kModel, kHidden, 0.2),
                            b1 = Matrix(1, kHidden, 0.3), w2 = Matrix(kHidden, kModel, 0.4),
                            b2 = Matrix(1, kModel, 0.5);
  std::vector<std::vector<HostTensor>> inputs;
  for (int k = 0; k < kWorkers; ++k)
    inputs.push_back({Block(x, kModel, 0, kRows, 0, kModel), Block(w1, kHidden, 0, kModel, k * kShard, kShard),
                      Block(b1, kHidden, 0, 1, k * kShard, kShard), Block(w2, kModel, k * kShard, kShard, 0, kModel),
                      Block(b2, kModel, 0, 1, 0, kModel)});
  vdev::WorkerRunOptions options;
  options.kind = kind;
  options.name = "tp_frontend";
  VDEV_ASSIGN_OR_RETURN(std::vector<std::vector<HostTensor>> outputs, vdev::RunOnWorkers(module, inputs, options));

  // Each f32 operation rounds with a relative error of at most FLT_EPSILON / 2; a sum of n terms
  // accumulates at most n of them, times the magnitude of its terms. The deepest chain here is
  // kModel + kHidden + 2 roundings (both matmuls, the bias adds, the all-reduce's one add).
  const Reference ref = PlainLoop(x, w1, b1, w2, b2);
  const double ulps = (kModel + kHidden + 4) * FLT_EPSILON;
  for (int k = 0; k < kWorkers; ++k) {
    double worst = 0, worst_tolerance = 0;
    for (int i = 0; i < kRows * kModel; ++i) {
      const double got = vdev::ReadAsDouble(outputs[k][0].Ref(), i), tolerance = ulps * ref.magnitude[i];
      if (std::fabs(got - ref.y[i]) > tolerance)
        return absl::InternalError(absl::StrFormat("worker %d element %d: %.9g, the plain loop %.9g (tolerance %.3g)",
                                                   k, i, got, ref.y[i], tolerance));
      if (std::fabs(got - ref.y[i]) >= worst) {
        worst = std::fabs(got - ref.y[i]);
        worst_tolerance = tolerance;
      }
    }
    std::cout << absl::StrFormat("worker %d matches the plain loop (max |difference| %.3g within %.3g)\n", k, worst,
                                 worst_tolerance);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  vdev::MaybeRunWorker(argc, argv);  // in a worker process: runs the controller's commands, then exits
  const bool threads = argc > 1 && std::strcmp(argv[1], "--threads") == 0;
  absl::Status status = Run(threads ? vdev::WorkerKind::kThreads : vdev::WorkerKind::kProcesses);
  if (!status.ok()) {
    std::cerr << "tp_frontend: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
