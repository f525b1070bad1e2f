// `vdev._onnx`: the ONNX importer (vdev/frontend/onnx_import.h) for vdev.from_onnx, a module of its own so
// that the main extension does not depend on libonnx-dev (built only when the frontend is).
#include <map>
#include <string>

#include "pybind11/pybind11.h"
#include "pybind11/stl.h"
#include "python/numpy_tensors.h"
#include "vdev/frontend/onnx_import.h"
#include "vdev/ir/ir_text.h"

namespace py = pybind11;

namespace {

[[noreturn]] void RaiseError(const absl::Status& status) {
  py::object type = py::module_::import("vdev._errors").attr("Error");
  PyErr_SetObject(type.ptr(), type(std::string(status.message())).ptr());
  throw py::error_already_set();
}

// (program text, graph-input parameter names, [(constant name, array)]).
py::tuple ImportOnnx(const std::string& path, const std::map<std::string, std::string>& place) {
  vdev::frontend::ImportOptions options;
  for (const auto& [name, device] : place) {
    size_t offset = 0;
    absl::StatusOr<vdev::VirtualDevice> vd = vdev::ParseVirtualDevice(device, &offset);
    if (!vd.ok()) RaiseError(vd.status());
    options.placements[name] = *vd;
  }
  absl::StatusOr<vdev::frontend::ImportedModel> model = vdev::frontend::ImportOnnxFile(path, options);
  if (!model.ok()) RaiseError(model.status());
  py::list inputs, constants;
  for (const auto& p : model->inputs) inputs.append(p.name);
  for (size_t i = 0; i < model->constants.size(); ++i) {
    constants.append(py::make_tuple(model->constants[i].name,
                                    vdev::python::NumpyFromHostTensor(std::move(model->constant_values[i]))));
  }
  return py::make_tuple(vdev::ir::PrintModule(model->module), inputs, constants);
}

}  // namespace

PYBIND11_MODULE(_onnx, m) {
  m.doc() = "vdev's ONNX importer; use vdev.from_onnx.";
  m.def("import_onnx", &ImportOnnx, py::arg("path"), py::arg("place"));
}
