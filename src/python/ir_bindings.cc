// vdev.Module and vdev.parse (include/vdev/ir/ir_text.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"

namespace vdev::python {
namespace {

// The compile pipeline's parse and verify stages.
std::shared_ptr<PyModule> ParseText(std::string text, std::string file) {
  CompileError error;
  absl::StatusOr<CompileResult> parsed;
  {
    py::gil_scoped_release release;
    parsed = Compile(text, CompileOptions{.stop_after = CompileStage::kVerify}, &error);
  }
  if (!parsed.ok()) RaiseParseError(file, text, error.diagnostic);
  return std::make_shared<PyModule>(PyModule{std::move(parsed->plan.module), std::move(file), std::move(text)});
}

std::vector<std::string> FunctionNames(const PyModule& m) {
  std::vector<std::string> names;
  for (ir::FuncId f : m.module.items) names.emplace_back(m.module.Name(m.module.functions[f].name));
  return names;
}

}  // namespace

void BindIr(py::module_& m) {
  py::class_<PyModule, std::shared_ptr<PyModule>>(
      m, "Module", "A verified program of the vdev IR (docs/spec/ir-text.md). Immutable: passes return new ones.")
      .def_static("parse", &ParseText, py::arg("text"), py::arg("file") = "<string>", "Same as vdev.parse(text, file).")
      .def(
          "text",
          [](const PyModule& self, bool inferred_types) {
            return ir::PrintModule(self.module, {.inferred_types = inferred_types});
          },
          py::arg("inferred_types") = false,
          "The canonical text; with inferred_types=True every inferred binding type is written too.")
      .def("__str__", [](const PyModule& self) { return ir::PrintModule(self.module); })
      .def("__repr__",
           [](const PyModule& self) {
             return absl::StrCat("<vdev.Module ", self.file, ": ", self.module.items.size(), " functions, ",
                                 self.module.bindings.size(), " bindings>");
           })
      .def_property_readonly("file", [](const PyModule& self) { return self.file; })
      .def_property_readonly("functions", &FunctionNames, "Names of the top-level functions and kernels, in order.");

  m.def("parse", &ParseText, py::arg("text"), py::arg("file") = "<string>",
        "Parses and verifies a module; ParseError (FILE:LINE:COL) on bad text.");
}

}  // namespace vdev::python
