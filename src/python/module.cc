// The `vdev._vdev` extension module: the C++ API of vdev, wrapped for python/vdev/__init__.py.
#include "python/bindings.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace vdev::python {

void Raise(const char* exception, const py::tuple& args, const py::dict& kwargs) {
  py::object type = py::module_::import("vdev._errors").attr(exception);
  py::object error = type(*args, **kwargs);
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

void RaiseParseError(absl::string_view file, absl::string_view source, const Diagnostic& diag) {
  Raise("ParseError", py::make_tuple(FormatDiagnostic(file, source, diag)),
        py::dict(py::arg("file") = std::string(file), py::arg("line") = diag.loc.line, py::arg("col") = diag.loc.col,
                 py::arg("message") = diag.message));
}

void RaiseStatus(const absl::Status& status) {
  Raise("Error", py::make_tuple(absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message())));
}

VirtualDevice DeviceArg(py::handle value) {
  if (py::isinstance<VirtualDevice>(value)) return value.cast<VirtualDevice>();
  if (py::isinstance<py::str>(value)) {
    std::string text = value.cast<std::string>();
    size_t offset = 0;
    absl::StatusOr<VirtualDevice> device = ParseVirtualDevice(text, &offset);
    if (!device.ok()) {
      RaiseParseError("<device>", text,
                      {Severity::kError, {1, static_cast<int>(offset) + 1}, std::string(device.status().message())});
    }
    return *std::move(device);
  }
  throw py::type_error(absl::StrCat("expected a VirtualDevice or a device literal, found ",
                                    std::string(py::str(py::type::of(value).attr("__name__")))));
}

}  // namespace vdev::python

PYBIND11_MODULE(_vdev, m) {
  m.doc() = "vdev's C++ API; import `vdev`, not this module.";
  vdev::python::BindLattice(m);
  vdev::python::BindIr(m);
  vdev::python::BindBuilder(m);
  vdev::python::BindMachine(m);
  vdev::python::BindPlan(m);
  vdev::python::BindSession(m);
  vdev::python::BindRun(m);
  vdev::python::BindChannels(m);
}
