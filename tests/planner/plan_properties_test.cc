// Properties of PlanDevices over generated programs (RapidCheck): planned output has no on_device,
// replans unchanged without warnings, copies move something, and --strict fails exactly when the
// lenient plan warns, naming two annotations.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"
#include "rapidcheck.h"
#include "rapidcheck/gtest.h"

namespace vdev::testing {
namespace {

// A straight-line program over two parameters: ops, annotations (normal and free), shapes, and
// attributes that name values.
std::string GenerateProgram() {
  const std::vector<std::string> devices = {"cpu:0", "cuda:0", "cuda:1", "/global", "cuda", "*:1"};
  int n = *rc::gen::inRange(1, 25);
  std::string text =
      "kernel @k(%a: f32[4] on /shared, %b: f32[4]) -> f32[4] on /global\n\n"
      "def @main(%p: f32[4], %q: f32[4], %c: bool[]) -> f32[4] {\n";
  std::vector<std::string> tensors = {"%p", "%q"};
  for (int i = 0; i < n; ++i) {
    auto pick = [&] { return tensors[*rc::gen::inRange<size_t>(0, tensors.size())]; };
    std::string name = absl::StrCat("%v", i);
    switch (*rc::gen::inRange(0, 11)) {
      case 0: absl::StrAppend(&text, "  ", name, " = add(", pick(), ", ", pick(), ")\n"); break;
      case 1: absl::StrAppend(&text, "  ", name, " = negative(", pick(), ")\n"); break;
      case 2:
        absl::StrAppend(&text, "  ", name, " = on_device(", pick(), ", ", *rc::gen::elementOf(devices), ")\n");
        break;
      case 3:
        absl::StrAppend(&text, "  ", name, " = on_device(", pick(),
                        ", ?, constrain_body=false, constrain_result=false)\n");
        break;
      case 4:
        absl::StrAppend(&text, "  ", name, " = on_device(", pick(), ", ", *rc::gen::elementOf(devices),
                        ", constrain_result=true)\n");
        break;
      case 5: absl::StrAppend(&text, "  ", name, " = @k(", pick(), ", ", pick(), ")\n"); break;
      case 6:
        // A tuple, annotated, then projected: only the field moves.
        absl::StrAppend(&text, "  %t", i, " = (", pick(), ", ", pick(), ")\n  %u", i, " = on_device(%t", i, ", ",
                        *rc::gen::elementOf(devices), ")\n  ", name, " = %u", i, ".", *rc::gen::inRange(0, 2), "\n");
        break;
      case 7: {
        // An if whose arm annotates: copies inside nested blocks.
        std::string device = *rc::gen::elementOf(devices);
        absl::StrAppend(&text, "  ", name, " = if %c {\n    %x", i, " = negative(", pick(), ")\n    %y", i,
                        " = on_device(%x", i, ", ", device, ")\n    return %y", i, "\n  } else {\n    return ", pick(),
                        "\n  }\n");
        break;
      }
      case 8: {
        // A local function that annotates its parameter, called once.
        std::string device = *rc::gen::elementOf(devices);
        absl::StrAppend(&text, "  %f", i, " = fn(%a", i, ": f32[4]) -> f32[4] {\n    %y", i, " = on_device(%a", i, ", ",
                        device, ")\n    %z", i, " = negative(%y", i, ")\n    return %z", i, "\n  }\n  ", name, " = %f",
                        i, "(", pick(), ")\n");
        break;
      }
      case 9:
        // A value named by an attribute: read (kept defined), never a constraint.
        absl::StrAppend(&text, "  ", name, " = negative(", pick(), ", t=", pick(), ")\n");
        break;
      default:
        absl::StrAppend(&text, "  ", name, " = device_copy(", pick(), ", src=", *rc::gen::elementOf(devices),
                        ", dst=", *rc::gen::elementOf(devices), ")\n");
        break;
    }
    tensors.push_back(name);
  }
  absl::StrAppend(&text, "  return ", tensors.back(), "\n}\n");
  return text;
}

bool SameDevice(const std::string& a, const std::string& b) {
  VirtualDevice x = *ParseVirtualDevice(a);
  VirtualDevice y = *ParseVirtualDevice(b);
  return x.device_type() == y.device_type() && x.virtual_device_id() == y.virtual_device_id() &&
         x.memory_scope() == y.memory_scope();
}

RC_GTEST_PROP(PlanPropertiesTest, PlansAreCompleteAndIdempotent, ()) {
  std::string program = GenerateProgram();
  RC_LOG() << program;
  PlanOutcome lenient = PlanText(program);
  PlanOptions strict;
  strict.strict = true;
  RC_CLASSIFY(!lenient.status.ok(), "planning error");
  RC_CLASSIFY(!lenient.warnings.empty(), "conflict copies");
  if (!lenient.status.ok()) {
    // Fields of one tuple on different devices: an error in both modes, located.
    RC_ASSERT(lenient.error.loc.valid());
    RC_ASSERT(!PlanText(program, strict).status.ok());
    return;
  }
  RC_ASSERT(lenient.text.find("on_device") == std::string::npos);
  RC_ASSERT(ValidateReport(lenient.report).empty());
  for (const auto& [function, facts] : lenient.report["functions"].items()) {
    for (const auto& copy : facts["copies"]) RC_ASSERT(!SameDevice(copy["src"], copy["dst"]));
  }
  std::string replanned = CheckIdempotent(lenient.text);
  RC_LOG() << lenient.text << replanned;
  RC_ASSERT(replanned.empty());

  PlanOutcome checked = PlanText(program, strict);
  RC_ASSERT(checked.status.ok() == lenient.warnings.empty());
  if (checked.status.ok()) {
    RC_ASSERT(checked.text == lenient.text);
  } else {
    RC_ASSERT(checked.error.conflicts.size() == 2u);
    RC_ASSERT(checked.error.conflicts[0].loc.valid());
  }
}

}  // namespace
}  // namespace vdev::testing
