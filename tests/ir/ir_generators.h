// Generators of large IR texts for the deep/long tests and the parse benchmark.
#ifndef VDEV_TESTS_PLANNER_IR_GENERATORS_H_
#define VDEV_TESTS_PLANNER_IR_GENERATORS_H_

#include <string>

#include "absl/strings/str_cat.h"

namespace vdev::ir::testing {

// `def @main(%x: f32[16,16], %y: f32[16,16]) { %b0 = add(%x, %y)  … %bN-1 = op(%bN-2, %x) … }` where
// the ops cycle through add/multiply/subtract; every fourth binding is an on_device annotation,
// so the text looks like a planner input.
inline std::string ChainModule(int bindings) {
  std::string s =
      "config { targets = [llvm, cuda], default = cuda:0, host = cpu:0 }\n"
      "def @main(%x: f32[16,16], %y: f32[16,16]) -> f32[16,16] {\n  %b0 = add(%x, %y)\n";
  s.reserve(s.size() + static_cast<size_t>(bindings) * 30);
  static constexpr const char* kOps[] = {"add", "multiply", "subtract"};
  for (int i = 1; i < bindings; ++i) {
    if (i % 4 == 0) {
      absl::StrAppend(&s, "  %b", i, " = on_device(%b", i - 1, ", ", i % 8 == 0 ? "cpu:0" : "cuda:0", ")\n");
    } else {
      absl::StrAppend(&s, "  %b", i, " = ", kOps[i % 3], "(%b", i - 1, ", %x)\n");
    }
  }
  absl::StrAppend(&s, "  return %b", bindings - 1, "\n}\n");
  return s;
}

// `depth` nested local functions; the innermost returns the outermost parameter (a capture).
inline std::string NestedFnModule(int depth) {
  std::string s = "def @main(%x0: f32[2]) {\n";
  for (int i = 1; i <= depth; ++i) absl::StrAppend(&s, "%f", i, " = fn(%x", i, ": f32[2]) {\n");
  s += "return %x0\n}\n";
  for (int i = depth - 1; i >= 1; --i) absl::StrAppend(&s, "return %f", i + 1, "\n}\n");
  absl::StrAppend(&s, "return %f1\n}\n");
  return s;
}

// `depth` nested `if`s in then-arms.
inline std::string NestedIfModule(int depth) {
  std::string s = "def @main(%c: bool[], %x: f32[2]) {\n";
  for (int i = 1; i <= depth; ++i) absl::StrAppend(&s, "%r", i, " = if %c {\n");
  s += "return %x\n";
  for (int i = depth; i >= 1; --i) {
    s += "} else {\nreturn %x\n}\n";
    absl::StrAppend(&s, "return %r", i, "\n");
  }
  s += "}\n";
  return s;
}

// A parameter whose type is `depth` nested one-element tuples of f32[2].
inline std::string NestedTupleTypeModule(int depth) {
  std::string type = std::string(depth, '(') + "f32[2]" + std::string(depth, ')');
  return absl::StrCat("def @main(%a: ", type, ") {\n  return %a\n}\n");
}

}  // namespace vdev::ir::testing

#endif  // VDEV_TESTS_PLANNER_IR_GENERATORS_H_
