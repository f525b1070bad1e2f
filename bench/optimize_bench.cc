// `vdev plan --optimize` on generated transformer programs: (1) the optimised plan's cost against
// the default plan's (PlanDevices, TVM's semantics) on 1 CPU + 2 H100s with the embedding lookup
// (`take`) and the sampler CPU-only; (2) solve time against program size, 10^2…10^6 bindings, on
// 1 CPU + 3 H100s (4 devices); (3) the same on grids (below) whose classes reach Z3 (~1,500 of
// them at 10^5 and at 10^6 bindings). A harness, not Google Benchmark: each row is one planning run.
//
// The program: `take` (embedding, annotated cpu:0), then per layer an attention block (rms_norm,
// QKV matmul, `sdpa` with its type written, output matmul) and a gated MLP (rms_norm, up matmul,
// silu, down matmul), each closed by a residual add; every block boundary and residual input is a
// free on_device (a place where a copy is allowed, as TVM frontends emit), then the logits matmul
// and `sample` (annotated cpu:0). f16, static shapes.
//
// (5) Large machines: a 4,096-GPU machine file (links per pair of device types) and a 1,000-GPU one
// with every pair's link listed (500,500 links): the time to parse each and to optimise a
// 10^4-binding transformer on it, against the same program on 1 CPU + 3 H100s in the same run.
//
// (6) Capacity at 10^5 bindings: 6,250 small layers (1.9 GB of f16 weights) on 1 CPU + 2 GPUs of
// 1.2 GB each, so the layers must be split; 60 s limit.
//
// Usage: optimize_bench [max_bindings [grid|grid-after|machines|capacity]]   (default 1000000;
// `grid`: only (3), Z3 alone and the bound first; `grid-after`: only (3), the bound first;
// `machines`: only (5); `capacity`: only (6))
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"

namespace {

std::string Transformer(int layers, int64_t t, int64_t h, int64_t f, int64_t v) {
  auto ty = [](int64_t a, int64_t b) { return absl::StrCat("f16[", a, ",", b, "]"); };
  std::string params = absl::StrCat("%tokens: i64[", t, "], %table: ", ty(v, h), ", %w_out: ", ty(h, v));
  std::string body;
  absl::StrAppend(&body, "  %x0 = take(%table, %tokens)\n  %e = on_device(%x0, cpu:0)\n");
  std::string x = "%e";
  auto free = [](const std::string& name, const std::string& of) {
    return absl::StrCat("  ", name, " = on_device(", of, ", ?, constrain_body=false, constrain_result=false)\n");
  };
  for (int l = 0; l < layers; ++l) {
    absl::StrAppend(&params, ", %g1_", l, ": f16[", h, "], %wqkv", l, ": ", ty(h, 3 * h), ", %wo", l, ": ", ty(h, h),
                    ", %g2_", l, ": f16[", h, "], %wup", l, ": ", ty(h, f), ", %wdown", l, ": ", ty(f, h));
    std::string s = absl::StrCat(l);
    absl::StrAppend(&body, free("%m1_" + s, x), "  %n1_", s, " = rms_norm(%m1_", s, ", %g1_", s, ")\n", "  %qkv", s,
                    " = matmul(%n1_", s, ", %wqkv", s, ")\n", "  %a", s, ": ", ty(t, h), " = sdpa(%qkv", s, ")\n",
                    "  %o", s, " = matmul(%a", s, ", %wo", s, ")\n", free("%om" + s, "%o" + s), free("%xr" + s, x),
                    "  %r", s, " = add(%xr", s, ", %om", s, ")\n", free("%m2_" + s, "%r" + s), "  %n2_", s,
                    " = rms_norm(%m2_", s, ", %g2_", s, ")\n", "  %up", s, " = matmul(%n2_", s, ", %wup", s, ")\n",
                    "  %s", s, " = silu(%up", s, ")\n", "  %d", s, " = matmul(%s", s, ", %wdown", s, ")\n",
                    free("%dm" + s, "%d" + s), free("%rr" + s, "%r" + s), "  %x", s + "n", " = add(%rr", s, ", %dm", s,
                    ")\n");
    x = absl::StrCat("%x", s, "n");
  }
  absl::StrAppend(&body, free("%mf", x), "  %logits = matmul(%mf, %w_out)\n", free("%lm", "%logits"), "  %next: i64[",
                  t, "] = sample(%lm)\n", "  %out = on_device(%next, cpu:0)\n  return %out\n");
  return absl::StrCat("def @main(", params, ") -> i64[", t, "] {\n", body, "}\n");
}

// A grid of `width` branches over `height` steps: node (i, j) adds its own branch's previous node
// and its left neighbour's, then runs `ops` elementwise ops (one class); every read of another node
// goes through a free on_device, so the class graph is a grid whose inner nodes keep four
// neighbours and survive the shrinking. Pulling both ways: one node in 7 runs `topk` (CPU-only in
// the machine), one in 5 is annotated onto a GPU (cuda:0..gpus-1 in turn), the rest choose.
std::string Grid(int width, int height, int ops, int gpus) {
  const std::string ty = "f32[512,512]";
  auto free = [](const std::string& name, const std::string& of) {
    return absl::StrCat("  ", name, " = on_device(", of, ", ?, constrain_body=false, constrain_result=false)\n");
  };
  std::string body;
  uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  int annotated = 0;
  for (int j = 0; j < height; ++j) {
    for (int i = 0; i < width; ++i) {
      std::string n = absl::StrCat(i, "_", j);
      std::string own = j == 0 ? "%x" : absl::StrCat("%n", i, "_", j - 1);
      std::string left = j == 0 || i == 0 ? "%y" : absl::StrCat("%n", i - 1, "_", j - 1);
      absl::StrAppend(&body, free("%p" + n, own), free("%q" + n, left), "  %s", n, "_0 = add(%p", n, ", %q", n, ")\n");
      unsigned kind = next() % 35;
      for (int k = 1; k <= ops; ++k) {
        std::string op = k % 3 == 0 ? "exp" : k % 3 == 1 ? "negative" : "tanh";
        if (k == ops / 2 && kind % 7 == 0) op = "topk";
        absl::StrAppend(&body, "  %s", n, "_", k, ": ", ty, " = ", op, "(%s", n, "_", k - 1, ")\n");
      }
      if (kind % 5 == 0 && kind % 7 != 0) {
        absl::StrAppend(&body, "  %n", n, " = on_device(%s", n, "_", ops, ", cuda:", annotated++ % gpus, ")\n");
      } else {
        absl::StrAppend(&body, "  %n", n, " = negative(%s", n, "_", ops, ")\n");
      }
    }
  }
  absl::StrAppend(&body, "  return %n", width - 1, "_", height - 1, "\n");
  return absl::StrCat("def @main(%x: ", ty, ", %y: ", ty, ") -> ", ty, " {\n", body, "}\n");
}

vdev::Machine BenchMachine(int gpus) {
  vdev::Machine m = vdev::DefaultMachine(gpus);
  m.support["take"] = {vdev::DeviceType::kCPU};
  m.support["sample"] = {vdev::DeviceType::kCPU};
  m.support["topk"] = {vdev::DeviceType::kCPU};
  return m;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// docs/machine.md's JSON for 1 CPU + `gpus` H100s: GPU links per device type, or (per_pair) each
// pair's own.
std::string MachineJson(int gpus, bool per_pair) {
  std::string text =
      R"({"devices": [{"device": "cpu:0", "memory_gb": 1024, "bandwidth_gbs": 600, "default_tflops": 5})";
  for (int g = 0; g < gpus; ++g) {
    absl::StrAppend(&text, R"(, {"device": "cuda:)", g,
                    R"(", "memory_gb": 80, "bandwidth_gbs": 3350, "default_tflops": 67, "tflops": {"f16": 989}})");
  }
  absl::StrAppend(&text, R"(], "ops": {"take": ["cpu"], "sample": ["cpu"]}, "links": [)",
                  R"({"between": ["cpu", "cuda"], "bandwidth_gbs": 64, "latency_us": 10})");
  if (!per_pair) {
    absl::StrAppend(&text, R"(, {"between": ["cuda", "cuda"], "bandwidth_gbs": 450, "latency_us": 3}]})");
    return text;
  }
  for (int a = 0; a < gpus; ++a) {
    for (int b = a + 1; b < gpus; ++b) {
      absl::StrAppend(&text, R"(, {"between": ["cuda:)", a, R"(", "cuda:)", b,
                      R"("], "bandwidth_gbs": 450, "latency_us": 3})");
    }
  }
  return text + "]}";
}

// (5): parse each machine and optimise one program on it; the 4-device machine is the peer.
int LargeMachines() {
  std::string text = Transformer(625, 256, 128, 344, 32000);
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
  if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) return 1;
  std::printf("large machines (%zu-binding transformer)\n%-28s %10s %10s %10s %10s %8s %12s\n", module->bindings.size(),
              "machine", "json_MB", "parse_s", "optimize_s", "classes", "optimal", "model_ms");
  double peer_seconds = 0;
  for (auto [gpus, per_pair] : {std::pair{3, false}, std::pair{4096, false}, std::pair{1000, true}}) {
    const std::string json = MachineJson(gpus, per_pair);
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<vdev::Machine> machine = vdev::ParseMachineJson(json);
    const double parse = Seconds(start);
    if (!machine.ok()) {
      std::fprintf(stderr, "machine: %s\n", std::string(machine.status().message()).c_str());
      return 1;
    }
    start = std::chrono::steady_clock::now();
    absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, *machine, {});
    const double optimize = Seconds(start);
    if (!plan.ok()) {
      std::fprintf(stderr, "optimize: %s\n", std::string(plan.status().message()).c_str());
      return 1;
    }
    if (gpus == 3) peer_seconds = optimize;
    std::printf("%-28s %10.1f %10.3f %10.3f %10zu %8d %12.4f  (optimize %.2fx the 4-device machine's)\n",
                absl::StrCat("1 CPU + ", gpus, " GPUs, links ", per_pair ? "per pair" : "per type").c_str(),
                json.size() / 1e6, parse, optimize, plan->classes, plan->optimal ? 1 : 0, plan->model_cost * 1e3,
                optimize / peer_seconds);
    std::fflush(stdout);
  }
  return 0;
}

// (6): a capacity-limited program of 10^5 bindings.
int CapacityAtScale() {
  std::string text = Transformer(6250, 256, 128, 344, 32000);
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
  if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) return 1;
  vdev::Machine machine = BenchMachine(2);
  for (int g = 1; g <= 2; ++g) machine.specs[g].memory_bytes = 1.2e9;
  vdev::OptimizeOptions options;
  options.time_limit_seconds = 60;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, machine, options);
  const double total = Seconds(start);
  if (!plan.ok()) {
    std::printf("capacity at scale (%zu bindings): %s after %.3f s\n", module->bindings.size(),
                std::string(plan.status().message()).c_str(), total);
    return 0;
  }
  std::printf(
      "capacity at scale: %zu bindings on 1 CPU + 2 GPUs of 1.2 GB: %zu cuts, peaks cuda:0 %.2f GB, cuda:1 "
      "%.2f GB, optimal %d, gap %.3g%%, z3 variables %zu, solve %.3f s, total %.3f s\n",
      module->bindings.size(), plan->capacity_cuts, plan->peak_bytes[1] / 1e9, plan->peak_bytes[2] / 1e9,
      plan->optimal ? 1 : 0, plan->gap * 100, plan->z3_variables, plan->solve_seconds, total);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long max_bindings = argc > 1 ? std::atol(argv[1]) : 1000000;
  const bool grid_only = argc > 2 && std::string(argv[2]).rfind("grid", 0) == 0;
  // `grid-after`: the grids with the bound only (skips the 60 s runs of Z3 alone).
  const bool skip_before = argc > 2 && std::string(argv[2]) == "grid-after";
  if (argc > 2 && std::string(argv[2]) == "machines") return LargeMachines();
  if (argc > 2 && std::string(argv[2]) == "capacity") return CapacityAtScale();
  // (1) Cost: 8 layers of a 7B-like model, 256 tokens, on 1 CPU + 2 H100s.
  if (!grid_only) {
    std::string text = Transformer(8, 256, 4096, 11008, 32000);
    absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
    if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) {
      std::fprintf(stderr, "bad program: %s\n", std::string(module.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, BenchMachine(2), {});
    if (!plan.ok()) {
      std::fprintf(stderr, "optimize: %s\n", std::string(plan.status().message()).c_str());
      return 1;
    }
    std::printf(
        "transformer 8 layers, 1 CPU + 2 H100: optimised %.3f ms (compute %.3f, copy %.3f, unsupported %d), "
        "default %.3f ms (compute %.3f, copy %.3f, unsupported %d), default/optimised %.2fx, optimal %d, "
        "classes %zu, z3 variables %zu\n",
        plan->cost.total * 1e3, plan->cost.compute * 1e3, plan->cost.copy * 1e3, plan->cost.unsupported,
        plan->default_cost.total * 1e3, plan->default_cost.compute * 1e3, plan->default_cost.copy * 1e3,
        plan->default_cost.unsupported, plan->default_cost.total / plan->cost.total, plan->optimal ? 1 : 0,
        plan->classes, plan->z3_variables);
  }
  // (2) Solve time against size, 4 devices.
  std::printf("%10s %8s %10s %8s %10s %10s %10s %8s\n", "bindings", "layers", "classes", "z3_vars", "parse_s",
              "solve_s", "total_s", "optimal");
  for (int layers : {6, 62, 625, 6250, 62500}) {
    if (grid_only) break;
    // Hidden 128 (0.3 MB of weights per layer), so that even 62,500 layers fit one H100 and the
    // rows measure the shrinking and Z3, not capacity rounds (those are (4)).
    std::string text = Transformer(layers, 256, 128, 344, 32000);
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
    if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) return 1;
    double parse = Seconds(start);
    if (static_cast<long>(module->bindings.size()) > max_bindings) break;
    start = std::chrono::steady_clock::now();
    vdev::OptimizeOptions options;
    options.time_limit_seconds = 120;
    absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, BenchMachine(3), options);
    double total = Seconds(start);
    if (!plan.ok()) {
      std::fprintf(stderr, "optimize: %s\n", std::string(plan.status().message()).c_str());
      return 1;
    }
    std::printf("%10zu %8d %10zu %8zu %10.3f %10.3f %10.3f %8d\n", module->bindings.size(), layers, plan->classes,
                plan->z3_variables, parse, plan->solve_seconds, total, plan->optimal ? 1 : 0);
    std::fflush(stdout);
  }
  // (4) Capacity: 300 layers of the 7B-like model (94 GB of weights) on 1 CPU + 2 H100 (80 GB each):
  // the first plan puts every layer on one GPU; cuts split them.
  if (!grid_only) {
    std::string text = Transformer(300, 256, 4096, 11008, 32000);
    absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
    if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) return 1;
    auto start = std::chrono::steady_clock::now();
    vdev::OptimizeOptions options;
    options.time_limit_seconds = 120;
    absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, BenchMachine(2), options);
    double total = Seconds(start);
    if (!plan.ok()) {
      std::printf("capacity: 300 layers on 1 CPU + 2 H100: %s after %.3f s\n",
                  std::string(plan.status().message()).c_str(), total);
    } else {
      std::printf(
          "capacity: 300 layers (%zu bindings) on 1 CPU + 2 H100: %zu cuts, peaks cpu %.1f GB, cuda:0 %.1f GB, "
          "cuda:1 %.1f GB, cost %.3f ms (default %.3f ms), optimal %d, z3 variables %zu, solve %.3f s, "
          "total %.3f s\n",
          module->bindings.size(), plan->capacity_cuts, plan->peak_bytes[0] / 1e9, plan->peak_bytes[1] / 1e9,
          plan->peak_bytes[2] / 1e9, plan->cost.total * 1e3, plan->default_cost.total * 1e3, plan->optimal ? 1 : 0,
          plan->z3_variables, plan->solve_seconds, total);
    }
    std::fflush(stdout);
  }
  // (3) Z3 at scale: grids whose classes mostly survive the shrinking, 4 devices, 60 s limit; each
  // grid planned twice in the same run: Z3 alone (as before the bound) and the bound first.
  std::printf("grid (Z3 at scale)\n%10s %6s %-9s %8s %8s %10s %10s %8s %12s %12s %10s %12s\n", "bindings", "grid",
              "mode", "classes", "z3_vars", "parse_s", "solve_s", "optimal", "model_ms", "lower_ms", "gap",
              "opt/default");
  for (auto [side, ops] : {std::pair{50, 38}, std::pair{50, 398}}) {
    std::string text = Grid(side, side, ops, 3);
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
    if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) {
      std::fprintf(stderr, "bad grid: %s\n", std::string(module.status().message()).c_str());
      return 1;
    }
    double parse = Seconds(start);
    if (static_cast<long>(module->bindings.size()) > max_bindings) break;
    for (bool bound_first : {false, true}) {
      if (!bound_first && skip_before) continue;
      vdev::OptimizeOptions options;
      options.time_limit_seconds = 60;
      options.bound_first = bound_first;
      absl::StatusOr<vdev::OptimizedPlan> plan = vdev::OptimizePlacement(*module, BenchMachine(3), options);
      if (!plan.ok()) {
        std::fprintf(stderr, "optimize grid: %s\n", std::string(plan.status().message()).c_str());
        return 1;
      }
      std::printf("%10zu %3dx%-3d %-9s %8zu %8zu %10.3f %10.3f %8d %12.4f %12.4f %9.3g%% %12.4f\n",
                  module->bindings.size(), side, side, bound_first ? "bound+z3" : "z3 alone", plan->classes,
                  plan->z3_variables, parse, plan->solve_seconds, plan->optimal ? 1 : 0, plan->model_cost * 1e3,
                  plan->lower_bound * 1e3, plan->gap * 100, plan->cost.total / plan->default_cost.total);
      std::fflush(stdout);
    }
  }
  return 0;
}
