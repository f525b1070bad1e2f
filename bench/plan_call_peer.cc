// The C++ side of bench/python_plan_overhead.py: times PlanDevices(const Module&, {}) — the call
// vdev.plan makes — on a program file, so the Python harness can compare the same call from Python.
//
//   plan_call_peer --emit N FILE     writes ChainModule(N) (tests/ir/ir_generators.h) to FILE
//   plan_call_peer FILE REPEATS      parses and verifies FILE once, plans it REPEATS times and prints
//                                    one line per call: the CPU time of this thread in seconds for
//                                    the call and destroying its result (what `del plan` costs in
//                                    Python); CPU time, so that other processes' load counts less
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "ir/ir_generators.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/plan_devices.h"

namespace {

double ThreadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--emit") {
    std::ofstream(argv[3]) << vdev::ir::testing::ChainModule(std::atoi(argv[2]));
    return 0;
  }
  if (argc != 3) {
    std::cerr << "usage: plan_call_peer --emit N FILE | plan_call_peer FILE REPEATS\n";
    return 2;
  }
  std::stringstream text;
  text << std::ifstream(argv[1]).rdbuf();
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text.str());
  if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) {
    std::cerr << argv[1] << ": does not parse and verify\n";
    return 1;
  }
  for (int i = 0, n = std::atoi(argv[2]); i < n; ++i) {
    const double start = ThreadSeconds();
    {
      absl::StatusOr<vdev::PlanResult> plan = vdev::PlanDevices(*module, vdev::PlanOptions{});
      if (!plan.ok()) return 1;
    }
    std::printf("%.6f\n", ThreadSeconds() - start);
  }
  return 0;
}
