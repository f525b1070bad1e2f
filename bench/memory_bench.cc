// Memory planning of a generated tensor-parallel transformer: pool sizes per (device, scope), the
// ratio of planned memory to the sum of all tensor sizes, and the time lowering adds to planning.
//
//   memory_bench                   # 10 layers: memory figures, then timings (10 and 100 layers)
//   memory_bench --emit-program    # print the 10-layer program (input of `vdev lower`)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "transformer_program.h"
#include "vdev/ir_text.h"
#include "vdev/lower_memory.h"
#include "vdev/plan_devices.h"

namespace vdev::bench {
namespace {

struct Run {
  PlanResult planned;
  MemoryPlan memory;
};

// Parses, verifies and plans `text`; lowers it too when `lower`. Aborts on any error (a bug).
Run PlanAndLower(const std::string& text, bool lower, const LowerOptions& options = {}) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(text, &diag);
  if (!module.ok() || !ir::VerifyModule(*module, &diag).ok()) {
    std::fprintf(stderr, "%d:%d: %s\n", diag.loc.line, diag.loc.col, diag.message.c_str());
    std::exit(1);
  }
  absl::StatusOr<PlanResult> planned = PlanDevices(std::move(*module), PlanOptions{});
  if (!planned.ok()) {
    std::fprintf(stderr, "%s\n", std::string(planned.status().message()).c_str());
    std::exit(1);
  }
  Run run{std::move(*planned), {}};
  if (lower) {
    absl::StatusOr<MemoryPlan> memory = LowerMemory(run.planned.module, run.planned.binding_devices, options);
    if (!memory.ok()) {
      std::fprintf(stderr, "%s\n", std::string(memory.status().message()).c_str());
      std::exit(1);
    }
    run.memory = std::move(*memory);
  }
  return run;
}

double MiB(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

void ReportMemory(const TransformerShape& shape) {
  const std::string text = TransformerProgram(shape);
  Run ipc = PlanAndLower(text, true);
  LowerOptions nccl_only;
  nccl_only.ipc_allreduce = false;
  Run plain = PlanAndLower(text, true, nccl_only);
  const FunctionMemory& fm = ipc.memory.functions.at(0);
  int rewritten = 0;
  for (const AllReduceInfo& a : fm.allreduces) rewritten += a.ipc;
  std::printf("== %d-layer tensor-parallel transformer (tp=%lld, hidden %lld, %lld tokens, f16): one worker\n",
              shape.layers, static_cast<long long>(shape.tensor_parallel), static_cast<long long>(shape.hidden),
              static_cast<long long>(shape.tokens));
  std::printf("all-reduces: %zu, rewritten to ipc_memory: %d\n", fm.allreduces.size(), rewritten);
  std::printf("%-22s %14s %10s %9s\n", "pool", "bytes", "MiB", "storages");
  for (const PoolSize& p : fm.plan.pools) {
    std::printf("%-22s %14lld %10.3f %9d\n", p.pool.ToString().c_str(), static_cast<long long>(p.bytes), MiB(p.bytes),
                p.storages);
  }
  std::printf("sum of tensor sizes      %14lld %10.3f  (%zu tensors)\n", static_cast<long long>(fm.plan.tensor_bytes),
              MiB(fm.plan.tensor_bytes), fm.tensors.size());
  std::printf("total planned memory     %14lld %10.3f\n", static_cast<long long>(fm.plan.pool_bytes),
              MiB(fm.plan.pool_bytes));
  std::printf("ratio planned / sum of tensors: %.4f (%.1fx less memory)\n",
              static_cast<double>(fm.plan.pool_bytes) / static_cast<double>(fm.plan.tensor_bytes),
              static_cast<double>(fm.plan.tensor_bytes) / static_cast<double>(fm.plan.pool_bytes));
  std::printf("same program, all-reduces left on NCCL: planned %lld bytes; IPC pools cost %.4fx that\n",
              static_cast<long long>(plain.memory.pool_bytes),
              static_cast<double>(fm.plan.pool_bytes) / static_cast<double>(plain.memory.pool_bytes));
  std::printf("(every one of the %lld workers runs this program on its own GPU: each GPU gets these pools)\n\n",
              static_cast<long long>(shape.tensor_parallel));
}

// Median wall time of `reps` calls of PlanAndLower, in milliseconds.
double MedianMs(const std::string& text, bool lower, int reps) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    Run run = PlanAndLower(text, lower);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void ReportTimes(int layers) {
  TransformerShape shape;
  shape.layers = layers;
  const std::string text = TransformerProgram(shape);
  const double plan = MedianMs(text, false, 7);
  const double both = MedianMs(text, true, 7);
  std::printf("%4d layers: parse+verify+PlanDevices %8.3f ms, + LowerMemory %8.3f ms: lowering adds %.3fx of planning\n",
              layers, plan, both, (both - plan) / plan);
}

}  // namespace
}  // namespace vdev::bench

int main(int argc, char** argv) {
  vdev::bench::TransformerShape shape;
  if (argc > 1 && std::strcmp(argv[1], "--emit-program") == 0) {
    std::fputs(vdev::bench::TransformerProgram(shape).c_str(), stdout);
    return 0;
  }
  vdev::bench::ReportMemory(shape);
  std::printf("== time (median of 7, same machine and run)\n");
  for (int layers : {10, 100, 1000}) vdev::bench::ReportTimes(layers);
  return 0;
}
