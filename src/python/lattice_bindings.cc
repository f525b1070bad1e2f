// vdev.Target, vdev.VirtualDevice, vdev.join and vdev.default (include/vdev/lattice/virtual_device.h).
#include <optional>
#include <string>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/lattice/target.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::python {
namespace {

Target ParseTarget(const std::string& text) {
  size_t offset = 0;
  absl::StatusOr<Target> target = Target::Parse(text, &offset);
  if (!target.ok()) {
    RaiseParseError("<target>", text,
                    {Severity::kError, {1, static_cast<int>(offset) + 1}, std::string(target.status().message())});
  }
  return *std::move(target);
}

Target TargetArg(py::handle value) {
  if (py::isinstance<Target>(value)) return value.cast<Target>();
  if (py::isinstance<py::str>(value)) return ParseTarget(value.cast<std::string>());
  throw py::type_error("expected a Target or a target string such as 'cuda -arch=sm_90'");
}

VirtualDevice MakeDevice(const std::optional<std::string>& device_type, std::optional<int> device_id,
                         const py::object& target, const std::optional<std::string>& memory_scope) {
  DeviceType type = DeviceType::kUnconstrained;
  if (device_type.has_value()) {
    std::optional<DeviceType> parsed = DeviceTypeFromName(*device_type);
    if (!parsed || *parsed == DeviceType::kUnconstrained) {
      throw py::value_error(absl::StrCat("unknown device type '", *device_type, "' (expected cpu, cuda, …)"));
    }
    type = *parsed;
  }
  if (device_id.has_value() && *device_id < 0) {
    throw py::value_error(absl::StrCat("device_id must be non-negative, found ", *device_id));
  }
  if (memory_scope.has_value() && memory_scope->empty()) {
    throw py::value_error("memory_scope must not be empty (None leaves it unconstrained)");
  }
  std::optional<Target> parsed_target;
  if (!target.is_none()) parsed_target = TargetArg(target);
  absl::StatusOr<VirtualDevice> device = VirtualDevice::Make(type, device_id.value_or(VirtualDevice::kUnconstrainedId),
                                                             parsed_target, memory_scope.value_or(""));
  if (!device.ok()) throw py::value_error(std::string(device.status().message()));
  return *std::move(device);
}

std::optional<std::string> TypeName(const VirtualDevice& d) {
  if (!d.has_device_type()) return std::nullopt;
  return std::string(DeviceTypeName(d.device_type()));
}

void BindTarget(py::module_& m) {
  py::class_<Target>(m, "Target", "A compilation target, compared structurally: Target('cuda') == Target('cuda').")
      .def(py::init(&ParseTarget), py::arg("text"), "Parses `kind -key=value … -host=KIND`; ParseError on bad text.")
      .def_static("parse", &ParseTarget, py::arg("text"), "Same as Target(text).")
      .def_property_readonly("kind", [](const Target& t) { return std::string(TargetKindName(t.kind())); })
      .def_property_readonly("device_type",
                             [](const Target& t) { return std::string(DeviceTypeName(t.device_type())); })
      .def_property_readonly("options",
                             [](const Target& t) {
                               py::dict options;
                               for (const auto& [key, value] : t.options()) options[py::str(key)] = value;
                               return options;
                             })
      .def_property_readonly("host", &Target::host)
      .def("__str__", &Target::ToString)
      .def("__repr__",
           [](const Target& t) { return absl::StrCat("Target(", std::string(py::repr(py::str(t.ToString()))), ")"); })
      .def(
          "__eq__", [](const Target& a, py::object b) { return py::isinstance<Target>(b) && a == b.cast<Target>(); },
          py::arg("other"))
      .def("__hash__", [](const Target& t) { return absl::HashOf(t); })
      .def(py::pickle([](const Target& t) { return t.ToString(); },
                      [](const std::string& s) { return ParseTarget(s); }));
}

void BindVirtualDevice(py::module_& m) {
  py::class_<VirtualDevice>(m, "VirtualDevice",
                            "Where a value lives, as far as it is known: device type, device id, target and memory\n"
                            "scope, each possibly unconstrained (None). The lattice of docs/lattice.md.")
      .def(py::init(&MakeDevice), py::kw_only(), py::arg("device_type") = py::none(), py::arg("device_id") = py::none(),
           py::arg("target") = py::none(), py::arg("memory_scope") = py::none(),
           "VirtualDevice(device_type='cuda', device_id=0, target='cuda', memory_scope='global'); every field\n"
           "defaults to unconstrained. ValueError when the target disagrees with the device type.")
      .def_static(
          "parse", [](py::str text) { return DeviceArg(text); }, py::arg("text"),
          "Parses a literal (`cuda:3[cuda]/global`, `?`, `*:1`); ParseError with the column on bad text.")
      .def_property_readonly("device_type", &TypeName)
      .def_property_readonly(
          "device_id",
          [](const VirtualDevice& d) { return d.has_id() ? std::optional<int>(d.virtual_device_id()) : std::nullopt; })
      .def_property_readonly("target", &VirtualDevice::target)
      .def_property_readonly("memory_scope",
                             [](const VirtualDevice& d) {
                               return d.has_memory_scope() ? std::optional<std::string>(d.memory_scope())
                                                           : std::nullopt;
                             })
      .def_property_readonly("has_device_type", &VirtualDevice::has_device_type)
      .def_property_readonly("has_device_id", &VirtualDevice::has_id)
      .def_property_readonly("has_target", &VirtualDevice::has_target)
      .def_property_readonly("has_memory_scope", &VirtualDevice::has_memory_scope)
      .def_property_readonly("is_fully_unconstrained", &VirtualDevice::IsFullyUnconstrained)
      .def_property_readonly("is_fully_constrained", &VirtualDevice::IsFullyConstrained)
      .def(
          "join", [](const VirtualDevice& a, py::handle b) { return Join(a, DeviceArg(b)); }, py::arg("other"),
          "The most constrained device agreeing with both, or None when a field set in both differs.")
      .def(
          "default", [](const VirtualDevice& a, py::handle b) { return Default(a, DeviceArg(b)); }, py::arg("other"),
          "This device's fields where set, otherwise other's (other's target only when its type matches).")
      .def("__str__", &VirtualDevice::ToString)
      .def("__repr__", [](const VirtualDevice& d) { return absl::StrCat("VirtualDevice.parse('", d.ToString(), "')"); })
      .def(
          "__eq__",
          [](const VirtualDevice& a, py::object b) {
            return py::isinstance<VirtualDevice>(b) && a == b.cast<VirtualDevice>();
          },
          py::arg("other"))
      .def("__hash__", [](const VirtualDevice& d) { return absl::HashOf(d); })
      .def(py::pickle([](const VirtualDevice& d) { return d.ToString(); },
                      [](const std::string& s) { return DeviceArg(py::str(s)); }));

  m.def(
      "join", [](py::handle a, py::handle b) { return Join(DeviceArg(a), DeviceArg(b)); }, py::arg("a"), py::arg("b"),
      "join(a, b): a.join(b) for devices or literals.");
  m.def(
      "default", [](py::handle a, py::handle b) { return Default(DeviceArg(a), DeviceArg(b)); }, py::arg("a"),
      py::arg("b"), "default(a, b): a.default(b) for devices or literals.");
}

}  // namespace

void BindLattice(py::module_& m) {
  BindTarget(m);
  BindVirtualDevice(m);
}

}  // namespace vdev::python
