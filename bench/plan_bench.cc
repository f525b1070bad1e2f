// PlanDevices on generated add chains of 10^3…10^6 bindings, and on nested closures (BM_NestedClosures): time, bindings per second, peak heap per
// binding, and the ratio plan time / parse time (the parser is the peer measured in the same run).
// Phase times are CPU times (parse_ms: ParseModule + VerifyModule; plan_ms: PlanDevices in place);
// bindings/s counts parse + plan.
//
// The program: N adds `%i = add(%i-1, %i-2)` over two parameters; every 10th add (the 10th, 20th, …,
// so the last add is one) is wrapped in on_device(…, cpu:0). Variant 2 also wraps both inputs of each
// annotated add in on_device(…, cuda:0), which costs three copies per annotated add (two inputs to
// the CPU, the result back, shared by its two consumers), except the last: its result is returned,
// so it pins the function's result and needs no copy back.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <new>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/plan_devices.h"

namespace {

// Heap accounting: every operator new/delete of the process goes through these counters.
std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};

void* Allocate(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  size_t live = g_live.fetch_add(malloc_usable_size(p), std::memory_order_relaxed) + malloc_usable_size(p);
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}

void Free(void* p) {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(size_t size) { return Allocate(size); }
void* operator new[](size_t size) { return Allocate(size); }
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, size_t) noexcept { Free(p); }
void operator delete[](void* p, size_t) noexcept { Free(p); }

namespace {

std::string Chain(int n, int variant) {
  std::string text = "def @main(%p: f32[4], %q: f32[4]) -> f32[4] {\n";
  text.reserve(static_cast<size_t>(n) * 40);
  auto name = [](int i) { return i == -1 ? std::string("%p") : i == -2 ? std::string("%q") : absl::StrCat("%", i); };
  for (int i = 0; i < n; ++i) {
    std::string a = name(i - 1);
    std::string b = name(i - 2);
    if (i % 10 == 9) {
      if (variant == 2) {
        absl::StrAppend(&text, "  %l", i, " = on_device(", a, ", cuda:0)\n  %r", i, " = on_device(", b, ", cuda:0)\n");
        a = absl::StrCat("%l", i);
        b = absl::StrCat("%r", i);
      }
      absl::StrAppend(&text, "  %a", i, " = add(", a, ", ", b, ")\n  %", i, " = on_device(%a", i, ", cpu:0)\n");
    } else {
      absl::StrAppend(&text, "  %", i, " = add(", a, ", ", b, ")\n");
    }
  }
  absl::StrAppend(&text, "  return %", n - 1, "\n}\n");
  return text;
}

// Copies by the spec (see the file comment): 3 per annotated add, less the last one's copy back.
size_t ExpectedCopies(int n, int variant) {
  size_t annotated = static_cast<size_t>(n) / 10;
  return variant == 2 ? 3 * annotated - 1 : 0;
}

// CPU time of this thread: the machine is shared, so wall time measures the neighbours too.
double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// ParseModule + VerifyModule of a generated program; nullopt (the benchmark marked) if it fails.
std::optional<vdev::ir::Module> ParseVerified(const std::string& text, benchmark::State& state) {
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
  if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) {
    state.SkipWithError("parse failed");
    return std::nullopt;
  }
  return *std::move(module);
}

void BM_ParseAndPlan(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int variant = static_cast<int>(state.range(1));
  const std::string text = Chain(n, variant);
  double parse_s = 0;
  double plan_s = 0;
  size_t peak_total = 0;
  size_t peak_plan = 0;
  size_t bindings = 0;
  size_t copies = 0;
  for (auto _ : state) {
    size_t base = g_live.load();
    g_peak.store(base);
    double t0 = CpuSeconds();
    std::optional<vdev::ir::Module> module = ParseVerified(text, state);
    if (!module) return;
    double t1 = CpuSeconds();
    size_t parsed = g_live.load();
    size_t peak_parse = g_peak.load();
    g_peak.store(parsed);
    bindings = module->bindings.size();
    absl::StatusOr<vdev::PlanResult> plan = vdev::PlanDevices(*std::move(module), vdev::PlanOptions{});
    double t2 = CpuSeconds();
    if (!plan.ok()) {
      state.SkipWithError("plan failed");
      return;
    }
    copies = plan->copies.size();
    parse_s += t1 - t0;
    plan_s += t2 - t1;
    peak_total = std::max(peak_parse, g_peak.load()) - base;
    peak_plan = g_peak.load() - parsed;
    benchmark::DoNotOptimize(plan);
  }
  if (copies != ExpectedCopies(n, variant)) {
    state.SkipWithError(absl::StrCat("copies: ", copies, ", expected ", ExpectedCopies(n, variant)).c_str());
    return;
  }
  double iterations = static_cast<double>(state.iterations());
  state.counters["bindings"] = static_cast<double>(bindings);
  state.counters["copies"] = static_cast<double>(copies);
  state.counters["bindings/s"] = static_cast<double>(bindings) * iterations / (parse_s + plan_s);
  state.counters["parse_ms"] = 1e3 * parse_s / iterations;
  state.counters["plan_ms"] = 1e3 * plan_s / iterations;
  state.counters["plan/parse"] = plan_s / parse_s;
  state.counters["peak_B/binding"] = static_cast<double>(peak_total) / static_cast<double>(bindings);
  state.counters["plan_extra_B/binding"] = static_cast<double>(peak_plan) / static_cast<double>(bindings);
}

// Nested closures, `depth` levels, generated as 45 bytes a level (10^4 levels: 0.45 MB). Shape 0
// ("called"): each closure is called by the one around it, and the innermost adds its parameter to
// @main's. Shape 1 ("curried"): each closure returns the next, so the type of level i's result is
// the whole chain below it (fn(f32[2]) -> fn(f32[2]) -> … -> f32[2]); the text stays linear
// because the types are inferred.
std::string NestedClosures(int depth, int shape) {
  std::string text = "def @main(%x: f32[2]) {\n";
  text.reserve(static_cast<size_t>(depth) * 48);
  for (int i = 0; i < depth; ++i) absl::StrAppend(&text, "%f", i, " = fn(%y", i, ": f32[2]) {\n");
  absl::StrAppend(&text, "%z = add(%y", depth - 1, ", %x)\nreturn %z\n");
  for (int i = depth; i-- > 0;) {
    if (shape == 0) {
      absl::StrAppend(&text, "}\n%r", i, " = %f", i, "(", i == 0 ? std::string("%x") : absl::StrCat("%y", i - 1),
                      ")\nreturn %r", i, "\n");
    } else {
      absl::StrAppend(&text, "}\nreturn %f", i, "\n");
    }
  }
  absl::StrAppend(&text, "}\n");
  return text;
}

void BM_NestedClosures(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const std::string text = NestedClosures(depth, static_cast<int>(state.range(1)));
  double parse_s = 0;
  double plan_s = 0;
  size_t peak_plan = 0;
  size_t domains = 0;
  for (auto _ : state) {
    double t0 = CpuSeconds();
    std::optional<vdev::ir::Module> module = ParseVerified(text, state);
    if (!module) return;
    double t1 = CpuSeconds();
    size_t parsed = g_live.load();
    g_peak.store(parsed);
    absl::StatusOr<vdev::PlanResult> plan = vdev::PlanDevices(*std::move(module), vdev::PlanOptions{});
    double t2 = CpuSeconds();
    if (!plan.ok()) {
      state.SkipWithError("plan failed");
      return;
    }
    parse_s += t1 - t0;
    plan_s += t2 - t1;
    peak_plan = g_peak.load() - parsed;
    domains = plan->stats.domains;
    benchmark::DoNotOptimize(plan);
  }
  double iterations = static_cast<double>(state.iterations());
  state.SetLabel(state.range(1) == 0 ? "called" : "curried");
  state.counters["text_KB"] = static_cast<double>(text.size()) / 1e3;
  state.counters["parse_ms"] = 1e3 * parse_s / iterations;
  state.counters["plan_ms"] = 1e3 * plan_s / iterations;
  state.counters["plan/parse"] = plan_s / parse_s;
  state.counters["domains/level"] = static_cast<double>(domains) / depth;
  state.counters["plan_extra_MB"] = static_cast<double>(peak_plan) / 1e6;
}

BENCHMARK(BM_NestedClosures)
    ->ArgsProduct({{1'000, 10'000, 20'000, 100'000}, {0, 1}})
    ->ArgNames({"depth", "curried"})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

BENCHMARK(BM_ParseAndPlan)
    ->ArgsProduct({{1'000, 10'000, 100'000, 1'000'000}, {1, 2}})
    ->ArgNames({"adds", "variant"})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
