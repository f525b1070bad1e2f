// The JSON reports against the text printer of the same module: `vdev lower --json`
// (MemoryReportJson) and `vdev plan --json` (PlanReportJson) against ir::PrintModule, on generated add
// chains of 10^4, 10^5 and 2·10^5 bindings. Both writers run in each iteration, one after the other,
// so the ratio json/text compares them under the same load; a linear writer keeps the ratio flat as
// the chain grows (ordered_json's `object[key] = value` made it grow with n: 6.9 s at 10^5).
//
// The program: `%i = add(%i-1, %i-2)` over two parameters, compiled once per size (plan, types,
// lower, check); the times are CPU times of the benchmark thread.
#include <ctime>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/plan_devices.h"

namespace {

std::string Chain(int n) {
  std::string text = "def @main(%p: f32[4], %q: f32[4]) -> f32[4] {\n";
  auto name = [](int i) { return i == -1 ? std::string("%q") : i == -2 ? std::string("%p") : absl::StrCat("%", i); };
  for (int i = 0; i < n; ++i) absl::StrAppend(&text, "  %", i, " = add(", name(i - 1), ", ", name(i - 2), ")\n");
  absl::StrAppend(&text, "  return %", n - 1, "\n}\n");
  return text;
}

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// range(1): 0 = the lowered module (`vdev lower`), 1 = the planned one (`vdev plan`).
void BM_JsonVsText(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool lower = state.range(1) == 0;
  vdev::CompileOptions options;
  if (!lower) options.stop_after = vdev::CompileStage::kTypes;
  absl::StatusOr<vdev::CompileResult> compiled = vdev::Compile(Chain(n), options);
  if (!compiled.ok()) {
    state.SkipWithError(std::string(compiled.status().message()).c_str());
    return;
  }
  double json_s = 0;
  double text_s = 0;
  size_t json_bytes = 0;
  size_t text_bytes = 0;
  for (auto _ : state) {
    double t0 = CpuSeconds();
    std::string json =
        lower ? vdev::MemoryReportJson(compiled->module(), *compiled->memory) : vdev::PlanReportJson(compiled->plan);
    double t1 = CpuSeconds();
    std::string text = vdev::ir::PrintModule(compiled->module());
    double t2 = CpuSeconds();
    json_s += t1 - t0;
    text_s += t2 - t1;
    json_bytes = json.size();
    text_bytes = text.size();
    benchmark::DoNotOptimize(json);
    benchmark::DoNotOptimize(text);
  }
  double iterations = static_cast<double>(state.iterations());
  state.SetLabel(lower ? "lower" : "plan");
  state.counters["json_ms"] = 1e3 * json_s / iterations;
  state.counters["text_ms"] = 1e3 * text_s / iterations;
  state.counters["json/text"] = json_s / text_s;
  state.counters["json_ns/binding"] = 1e9 * json_s / iterations / n;
  state.counters["json_MB"] = static_cast<double>(json_bytes) / 1e6;
  state.counters["text_MB"] = static_cast<double>(text_bytes) / 1e6;
}

BENCHMARK(BM_JsonVsText)
    ->ArgsProduct({{10'000, 100'000, 200'000}, {0, 1}})
    ->ArgNames({"adds", "plan"})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
