// vdev.Machine (include/vdev/planner/machine.h): what optimize=True plans for.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/planner/machine.h"

namespace vdev::python {

void BindMachine(py::module_& m) {
  py::class_<Machine>(m, "Machine",
                      "Devices with their rates and capacity, and the links between them (docs/machine.md).")
      .def_static(
          "default",
          [](int gpus, const std::string& kind) {
            if (gpus < 0) throw py::value_error("gpus must be non-negative");
            if (kind != "h100" && kind != "h200") throw py::value_error("kind must be 'h100' or 'h200'");
            return DefaultMachine(gpus, kind == "h100" ? GpuKind::kH100 : GpuKind::kH200);
          },
          py::arg("gpus") = 2, py::arg("kind") = "h100",
          "1 CPU + `gpus` H100s or H200s (datasheet rates), PCIe to each GPU, NVLink between GPUs.")
      .def_static(
          "from_json",
          [](const std::string& text) {
            absl::StatusOr<Machine> machine = ParseMachineJson(text);
            if (!machine.ok()) throw py::value_error(std::string(machine.status().message()));
            return *std::move(machine);
          },
          py::arg("text"), "Parses docs/machine.md's JSON; ValueError naming the offending key.")
      .def_property_readonly("devices", [](const Machine& machine) { return machine.devices; })
      .def(
          "__eq__", [](const Machine& a, py::object b) { return py::isinstance<Machine>(b) && a == b.cast<Machine>(); },
          py::arg("other"))
      .def("__repr__", [](const Machine& machine) {
        std::string devices;
        for (const VirtualDevice& d : machine.devices)
          absl::StrAppend(&devices, devices.empty() ? "" : ", ", d.ToString());
        return absl::StrCat("<vdev.Machine ", devices, ">");
      });
}

}  // namespace vdev::python
