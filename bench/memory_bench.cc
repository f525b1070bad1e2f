// Memory planning of a generated tensor-parallel transformer: pool sizes per (device, scope), the
// ratio of planned memory to the sum of all tensor sizes, and the time lowering adds to planning.
//
//   memory_bench                   # 10 layers, 1 and 2 pipeline stages: memory; then timings
//   memory_bench --emit-program [STAGES]   # print the 10-layer program (input of `vdev lower`)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "transformer_program.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/plan_devices.h"

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
  std::printf(
      "== %d-layer tensor-parallel transformer (tp=%lld, %d pipeline stage(s), hidden %lld, %lld tokens, "
      "f16): one worker\n",
      shape.layers, static_cast<long long>(shape.tensor_parallel), shape.pipeline_stages,
      static_cast<long long>(shape.hidden), static_cast<long long>(shape.tokens));
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
  std::printf("(each of the %lld tensor-parallel workers runs this program: every worker's GPUs get these pools)\n\n",
              static_cast<long long>(shape.tensor_parallel));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians over `reps` runs of parse + verify + PlanDevices and of LowerMemory on its result, each
// run timing both steps of the same program back to back.
void ReportTimes(int layers, int reps) {
  TransformerShape shape;
  shape.layers = layers;
  const std::string text = TransformerProgram(shape);
  std::vector<double> plan_ms, lower_ms;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    Run run = PlanAndLower(text, false);
    auto planned = std::chrono::steady_clock::now();
    absl::StatusOr<MemoryPlan> memory = LowerMemory(run.planned.module, run.planned.binding_devices);
    auto lowered = std::chrono::steady_clock::now();
    if (!memory.ok()) std::exit(1);
    plan_ms.push_back(std::chrono::duration<double, std::milli>(planned - start).count());
    lower_ms.push_back(std::chrono::duration<double, std::milli>(lowered - planned).count());
  }
  const double plan = Median(plan_ms), lower = Median(lower_ms);
  std::printf("%4d layers: parse+verify+PlanDevices %8.3f ms, LowerMemory %8.3f ms: lowering costs %.3fx planning\n",
              layers, plan, lower, lower / plan);
}

}  // namespace
}  // namespace vdev::bench

int main(int argc, char** argv) {
  vdev::bench::TransformerShape shape;
  if (argc > 1 && std::strcmp(argv[1], "--emit-program") == 0) {
    if (argc > 2) shape.pipeline_stages = std::atoi(argv[2]);
    std::fputs(vdev::bench::TransformerProgram(shape).c_str(), stdout);
    return 0;
  }
  vdev::bench::ReportMemory(shape);
  shape.pipeline_stages = 2;
  vdev::bench::ReportMemory(shape);
  std::printf("== time (median of 15, same machine and run)\n");
  for (int layers : {10, 100, 1000}) vdev::bench::ReportTimes(layers, 15);
  return 0;
}
