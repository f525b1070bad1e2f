// Parse + verify of a generated 1,000,000-binding module, next to a plain read of the same file.
//
// The floor is BM_ReadFile (open, read into a string, close); BM_ParseVerify is what `vdev fmt` does
// before printing. Both report bindings/s; their ratio is the parser's cost over reading the bytes.
//   build/bench/parse_bench --benchmark_counters_tabular=true
#include <cstdio>
#include <filesystem>
#include <string>

#include "benchmark/benchmark.h"
#include "ir/ir_generators.h"
#include "vdev/ir/ir_text.h"

namespace {

constexpr int kBindings = 1'000'000;

const std::string& ModulePath() {
  static const std::string path = [] {
    std::string p = (std::filesystem::temp_directory_path() / "vdev_parse_bench_1m.vdev").string();
    std::string text = vdev::ir::testing::ChainModule(kBindings);
    FILE* f = std::fopen(p.c_str(), "wb");
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return p;
  }();
  return path;
}

std::string ReadFile(const std::string& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  text.resize(static_cast<size_t>(std::ftell(f)));
  std::fseek(f, 0, SEEK_SET);
  size_t n = std::fread(text.data(), 1, text.size(), f);
  std::fclose(f);
  text.resize(n);
  return text;
}

void Report(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["bindings/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBindings, benchmark::Counter::kIsRate);
}

void BM_ReadFile(benchmark::State& state) {
  const std::string& path = ModulePath();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = ReadFile(path);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  Report(state, bytes);
}
BENCHMARK(BM_ReadFile)->Unit(benchmark::kMillisecond);

// Reads and parses the module each iteration; with `verify`, verifies it too.
void ParseEach(benchmark::State& state, bool verify) {
  const std::string& path = ModulePath();
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = ReadFile(path);
    bytes = text.size();
    absl::StatusOr<vdev::ir::Module> m = vdev::ir::ParseModule(text);
    if (!m.ok()) {
      state.SkipWithError(std::string(m.status().message()).c_str());
      break;
    }
    if (verify && !vdev::ir::VerifyModule(*m).ok()) {
      state.SkipWithError("verify failed");
      break;
    }
    benchmark::DoNotOptimize(m->bindings.data());
  }
  Report(state, bytes);
}

void BM_Parse(benchmark::State& state) { ParseEach(state, false); }
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond);

void BM_ParseVerify(benchmark::State& state) { ParseEach(state, true); }
BENCHMARK(BM_ParseVerify)->Unit(benchmark::kMillisecond);

void BM_Print(benchmark::State& state) {
  std::string text = ReadFile(ModulePath());
  absl::StatusOr<vdev::ir::Module> m = vdev::ir::ParseModule(text);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = vdev::ir::PrintModule(*m);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  Report(state, bytes);
}
BENCHMARK(BM_Print)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
