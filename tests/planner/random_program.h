// A random straight-line @main for the optimiser's property tests: ops over the values so far,
// annotations, and free boundaries (each may start a class of its own).
#ifndef VDEV_TESTS_PLANNER_RANDOM_PROGRAM_H_
#define VDEV_TESTS_PLANNER_RANDOM_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rapidcheck.h"

namespace vdev::testing {

struct RandomProgramShape {
  std::string type;                     // of both parameters and every value
  std::vector<std::string> binary_ops;  // op(a, b)
  std::vector<std::string> unary_ops;   // `%v: type = op(a)` (the type written)
  std::vector<std::string> devices;     // for annotations
  int max_bindings = 15;
  int max_boundaries = 10;  // free on_device
  int boundary_weight = 3;  // against 1 for each op kind and for an annotation
};

inline std::string RandomProgram(const RandomProgramShape& shape) {
  const int n = *rc::gen::inRange(1, shape.max_bindings + 1);
  std::string text = absl::StrCat("def @main(%p: ", shape.type, ", %q: ", shape.type, ") -> ", shape.type, " {\n");
  std::vector<std::string> values = {"%p", "%q"};
  const int ops = static_cast<int>(shape.binary_ops.size() + shape.unary_ops.size());
  int boundaries = 0;
  for (int i = 0; i < n; ++i) {
    auto pick = [&] { return values[*rc::gen::inRange<size_t>(0, values.size())]; };
    std::string name = absl::StrCat("%v", i);
    int kind = *rc::gen::inRange(0, ops + 1 + shape.boundary_weight);
    if (kind < static_cast<int>(shape.binary_ops.size())) {
      absl::StrAppend(&text, "  ", name, " = ", shape.binary_ops[kind], "(", pick(), ", ", pick(), ")\n");
    } else if (kind < ops) {
      absl::StrAppend(&text, "  ", name, ": ", shape.type, " = ", shape.unary_ops[kind - shape.binary_ops.size()], "(",
                      pick(), ")\n");
    } else if (kind == ops) {
      absl::StrAppend(&text, "  ", name, " = on_device(", pick(), ", ", *rc::gen::elementOf(shape.devices), ")\n");
    } else {
      if (boundaries++ >= shape.max_boundaries) continue;
      absl::StrAppend(&text, "  ", name, " = on_device(", pick(),
                      ", ?, constrain_body=false, constrain_result=false)\n");
    }
    values.push_back(name);
  }
  absl::StrAppend(&text, "  return ", values.back(), "\n}\n");
  return text;
}

}  // namespace vdev::testing

#endif  // VDEV_TESTS_PLANNER_RANDOM_PROGRAM_H_
