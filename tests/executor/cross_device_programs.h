// Random programs whose values move between cuda:0 and cuda:1: chains that cross and cross back,
// values used on both devices (fan-out), and all-reduces of copied values. The cross-device tests
// run them on the CUDA backend and compare every run with the host backend.
#ifndef VDEV_TESTS_EXECUTOR_CROSS_DEVICE_PROGRAMS_H_
#define VDEV_TESTS_EXECUTOR_CROSS_DEVICE_PROGRAMS_H_

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vdev::testing_executor {

struct CrossDeviceProgram {
  std::string text;
  int params = 0;
  int copies = 0;  // device_copy bindings between cuda:0 and cuda:1
};

// A program of about `steps` bindings over f32[rows, cols] values; the same seed gives the same text.
inline CrossDeviceProgram RandomCrossDeviceProgram(uint32_t seed, int steps = 12, int rows = 64, int cols = 256) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const std::string type = absl::StrCat("f32[", rows, ",", cols, "]");
  struct Val {
    std::string name;
    int device;
  };
  std::vector<Val> vals;
  std::vector<std::string> params;
  CrossDeviceProgram out;
  const int n_params = 2 + pick(3);
  for (int i = 0; i < n_params; ++i) {
    const int device = i < 2 ? i : pick(2);  // both devices hold a parameter
    params.push_back(absl::StrCat("%p", i, ": ", type, " on cuda:", device));
    vals.push_back({absl::StrCat("%p", i), device});
  }
  out.params = n_params;
  std::vector<std::string> body;
  int next = 0;
  auto fresh = [&] { return absl::StrCat("%v", next++); };
  // The value `v` on `device`: itself, or a copy made now.
  auto on = [&](const Val& v, int device) -> Val {
    if (v.device == device) return v;
    Val c{fresh(), device};
    body.push_back(
        absl::StrCat("  ", c.name, " = device_copy(", v.name, ", src=cuda:", v.device, ", dst=cuda:", device, ")"));
    ++out.copies;
    return c;
  };
  static const char* kUnary[] = {"negative", "tanh", "sigmoid", "relu"};
  static const char* kBinary[] = {"add", "subtract", "multiply"};
  for (int s = 0; s < steps; ++s) {
    // Mostly the newest values, so chains form; sometimes an old one, so values fan out.
    auto recent = [&]() -> const Val& { return vals[vals.size() - 1 - pick(std::min<int>(3, vals.size()))]; };
    const int device = pick(2);
    Val result{"", device};
    switch (pick(4)) {
      case 0: {  // a chain step that may cross devices
        const Val a = on(recent(), device);
        result.name = fresh();
        body.push_back(absl::StrCat("  ", result.name, " = ", kUnary[pick(4)], "(", a.name, ")"));
        break;
      }
      case 1:
      case 2: {  // a binary op whose operands may come from both devices (one fans out)
        const Val a = on(recent(), device);
        const Val b = on(vals[pick(static_cast<int>(vals.size()))], device);
        result.name = fresh();
        body.push_back(absl::StrCat("  ", result.name, " = ", kBinary[pick(3)], "(", a.name, ", ", b.name, ")"));
        break;
      }
      default: {  // an all-reduce of a copied value
        const Val source = recent();
        const Val a = on(source, 1 - source.device);
        result.device = a.device;
        result.name = fresh();
        body.push_back(absl::StrCat("  ", result.name, " = allreduce(", a.name, ", op=sum)"));
        break;
      }
    }
    vals.push_back(result);
  }
  // The result on cuda:0, made after the newest work of both devices (a tuple's fields share a device).
  const Val last = on(vals.back(), 0);
  const Val first = on(vals[n_params], 0);
  const std::string result = fresh();
  body.push_back(absl::StrCat("  ", result, " = add(", last.name, ", ", first.name, ")"));
  body.push_back(absl::StrCat("  return ", result));
  out.text = absl::StrCat("config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\ndef @main(",
                          absl::StrJoin(params, ", "), ") {\n", absl::StrJoin(body, "\n"), "\n}\n");
  return out;
}

}  // namespace vdev::testing_executor

#endif  // VDEV_TESTS_EXECUTOR_CROSS_DEVICE_PROGRAMS_H_
