// The low-level builder `vdev._vdev._Builder` (include/vdev/ir/ir_builder.h); python/vdev/builder.py
// adds the context managers (`with b.function("main"):`) on top.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/ir/ir_builder.h"

namespace vdev::python {
namespace {

// A local value being built: a parameter or a binding, with its name for printing.
struct PyValue {
  ir::ValueRef ref;
  std::string name;
};

struct PyType {
  ir::TypeId id = ir::kNoType;
  std::string text;
};

// `@name`: a global function used as an operand.
struct PyGlobal {
  std::string name;
};

class PyBuilder {
 public:
  ir::ModuleBuilder& b() {
    if (!builder_) throw std::runtime_error("this Builder has already finished its module");
    return *builder_;
  }

  PyType Type(ir::TypeId id) { return {id, b().module().types.ToString(id)}; }
  PyValue Value(ir::ValueRef ref) {
    ir::Module& m = b().module();
    return {ref, absl::StrCat("%", m.Name(m.ValueName(ref)))};
  }

  ir::Arg ToArg(py::handle h) {
    if (py::isinstance<PyValue>(h)) return ir::Arg(h.cast<PyValue>().ref);
    if (py::isinstance<VirtualDevice>(h)) return ir::Arg(h.cast<VirtualDevice>());
    if (py::isinstance<PyGlobal>(h)) return ir::Arg::Global(h.cast<PyGlobal>().name);
    if (py::isinstance<py::bool_>(h)) return ir::Arg::Bool(h.cast<bool>());
    if (py::isinstance<py::int_>(h)) return ir::Arg::Int(h.cast<int64_t>());
    if (py::isinstance<py::float_>(h)) {
      double x = h.cast<double>();
      if (!std::isfinite(x)) throw py::value_error("a number operand must be finite");
      return ir::Arg::Number(std::string(py::repr(h)));
    }
    if (py::isinstance<py::str>(h)) return ir::Arg::Ident(h.cast<std::string>());
    if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
      return ir::Arg::IntList(h.cast<std::vector<int64_t>>());
    }
    throw py::type_error(absl::StrCat("cannot use a ", std::string(py::str(py::type::of(h).attr("__name__"))),
                                      " as an operand (expected a Value, VirtualDevice, Global, number, list of "
                                      "ints, bool or identifier string)"));
  }
  std::vector<ir::Arg> ToArgs(const py::sequence& args) {
    std::vector<ir::Arg> out;
    for (py::handle h : args) out.push_back(ToArg(h));
    return out;
  }
  std::vector<ir::NamedArg> ToAttrs(const py::dict& attrs) {
    std::vector<ir::NamedArg> out;
    for (auto [key, value] : attrs) out.push_back({key.cast<std::string>(), ToArg(value)});
    return out;
  }
  static std::optional<VirtualDevice> OptionalDevice(const py::object& device) {
    if (device.is_none()) return std::nullopt;
    return DeviceArg(device);
  }

  std::shared_ptr<PyModule> Finish(std::string file) {
    absl::StatusOr<ir::Module> module = std::move(b()).Finish();
    builder_.reset();
    if (!module.ok()) {
      Raise("BuildError", py::make_tuple(std::string(module.status().message())));
    }
    return std::make_shared<PyModule>(PyModule{*std::move(module), std::move(file), ""});
  }

 private:
  std::unique_ptr<ir::ModuleBuilder> builder_ = std::make_unique<ir::ModuleBuilder>();
};

ir::DType DTypeArg(const std::string& name) {
  std::optional<ir::DType> dtype = ir::DTypeFromName(name);
  if (!dtype) throw py::value_error(absl::StrCat("unknown dtype '", name, "' (expected f32, i64, bool, …)"));
  return *dtype;
}

std::vector<ir::TypeId> TypeIds(const std::vector<PyType>& types) {
  std::vector<ir::TypeId> ids;
  for (const PyType& t : types) ids.push_back(t.id);
  return ids;
}

ir::TypeId OptionalType(const py::object& type) { return type.is_none() ? ir::kNoType : type.cast<PyType>().id; }

// vdev.Value, vdev.Type and vdev.Global: what a Builder makes and takes as operands.
void BindOperands(py::module_& m) {
  py::class_<PyValue>(m, "Value", "A parameter or binding made by a Builder.")
      .def_readonly("name", &PyValue::name)
      .def("__repr__", [](const PyValue& v) { return absl::StrCat("<vdev.Value ", v.name, ">"); });
  py::class_<PyType>(m, "Type", "A type made by a Builder (tensor_type, tuple_type, …).")
      .def("__str__", [](const PyType& t) { return t.text; })
      .def("__repr__", [](const PyType& t) { return absl::StrCat("<vdev.Type ", t.text, ">"); });
  py::class_<PyGlobal>(m, "Global", "`@name` as an operand: Global('f').")
      .def(py::init([](std::string name) { return PyGlobal{std::move(name)}; }), py::arg("name"))
      .def_readonly("name", &PyGlobal::name)
      .def("__repr__", [](const PyGlobal& g) { return absl::StrCat("Global('", g.name, "')"); });
}

using BuilderClass = py::class_<PyBuilder>;

// Types: tensor_type, tuple_type, func_type, storage_type.
void DefineTypes(BuilderClass& builder) {
  using B = PyBuilder;
  builder
      .def(
          "tensor_type",
          [](B& self, const std::string& dtype, const std::vector<std::optional<int64_t>>& shape) {
            std::vector<int64_t> dims;
            for (const std::optional<int64_t>& d : shape) {
              if (d.has_value() && *d < 0) throw py::value_error("tensor dimensions must be non-negative or None");
              dims.push_back(d.value_or(ir::kDynamicDim));
            }
            return self.Type(self.b().TensorType(DTypeArg(dtype), absl::Span<const int64_t>(dims)));
          },
          py::arg("dtype"), py::arg("shape"))
      .def(
          "tuple_type",
          [](B& self, const std::vector<PyType>& fields) { return self.Type(self.b().TupleType(TypeIds(fields))); },
          py::arg("fields"))
      .def(
          "func_type",
          [](B& self, const std::vector<PyType>& params, const PyType& result) {
            return self.Type(self.b().FuncType(TypeIds(params), result.id));
          },
          py::arg("params"), py::arg("result"))
      .def("storage_type", [](B& self) { return self.Type(self.b().StorageType()); });
}

// The module's targets and devices, functions and kernels, their parameters and results.
void DefineFunctions(BuilderClass& builder) {
  using B = PyBuilder;
  builder
      .def(
          "set_targets",
          [](B& self, const std::vector<std::string>& names) {
            std::vector<TargetKind> kinds;
            for (const std::string& n : names) {
              std::optional<TargetKind> kind = TargetKindFromName(n);
              if (!kind) throw py::value_error(absl::StrCat("unknown target kind '", n, "'"));
              kinds.push_back(*kind);
            }
            self.b().SetTargets(std::move(kinds));
          },
          py::arg("targets"))
      .def(
          "set_default_device", [](B& self, py::handle d) { self.b().SetDefaultDevice(DeviceArg(d)); },
          py::arg("device"))
      .def(
          "set_host_device", [](B& self, py::handle d) { self.b().SetHostDevice(DeviceArg(d)); }, py::arg("device"))
      .def(
          "begin_function", [](B& self, const std::string& name) { self.b().BeginFunction(name); }, py::arg("name"))
      .def(
          "begin_kernel", [](B& self, const std::string& name) { self.b().BeginKernel(name); }, py::arg("name"))
      .def("end_kernel", [](B& self) { self.b().EndKernel(); })
      .def("end_function", [](B& self) { self.b().EndFunction(); })
      .def(
          "param",
          [](B& self, const std::string& name, const PyType& type, const py::object& device) {
            return self.Value(self.b().Param(name, type.id, B::OptionalDevice(device)));
          },
          py::arg("name"), py::arg("type"), py::arg("device") = py::none())
      .def(
          "set_result",
          [](B& self, const PyType& type, const py::object& device) {
            self.b().SetResult(type.id, B::OptionalDevice(device));
          },
          py::arg("type"), py::arg("device") = py::none());
}

// Bindings: ops, calls, tuples, constants, if/else blocks, closures and returns.
void DefineBindings(BuilderClass& builder) {
  using B = PyBuilder;
  builder
      .def(
          "op",
          [](B& self, const std::string& op, const py::sequence& args, const py::dict& attrs, const std::string& name,
             const py::object& type) {
            return self.Value(self.b().Op(op, self.ToArgs(args), self.ToAttrs(attrs), name, OptionalType(type)));
          },
          py::arg("op"), py::arg("args"), py::arg("attrs") = py::dict(), py::arg("name") = "",
          py::arg("type") = py::none())
      .def(
          "call",
          [](B& self, const std::string& callee, const py::sequence& args, const std::string& name) {
            return self.Value(self.b().Call(callee, self.ToArgs(args), name));
          },
          py::arg("callee"), py::arg("args"), py::arg("name") = "")
      .def(
          "call_value",
          [](B& self, const PyValue& callee, const py::sequence& args, const std::string& name) {
            return self.Value(self.b().CallValue(callee.ref, self.ToArgs(args), name));
          },
          py::arg("callee"), py::arg("args"), py::arg("name") = "")
      .def(
          "tuple",
          [](B& self, const py::sequence& fields, const std::string& name) {
            return self.Value(self.b().Tuple(self.ToArgs(fields), name));
          },
          py::arg("fields"), py::arg("name") = "")
      .def(
          "project",
          [](B& self, const PyValue& tuple, uint32_t index, const std::string& name) {
            return self.Value(self.b().Project(tuple.ref, index, name));
          },
          py::arg("tuple"), py::arg("index"), py::arg("name") = "")
      .def(
          "const",
          [](B& self, const PyType& type, const std::string& name) {
            return self.Value(self.b().Const(type.id, name));
          },
          py::arg("type"), py::arg("name") = "")
      .def(
          "alias",
          [](B& self, py::handle value, const std::string& name) {
            return self.Value(self.b().Alias(self.ToArg(value), name));
          },
          py::arg("value"), py::arg("name") = "")
      .def(
          "declare_type", [](B& self, const PyType& type) { self.b().DeclareType(type.id); }, py::arg("type"))
      .def(
          "begin_if",
          [](B& self, py::handle cond, const std::string& name) { self.b().BeginIf(self.ToArg(cond), name); },
          py::arg("cond"), py::arg("name") = "")
      .def("begin_else", [](B& self) { self.b().Else(); })
      .def("end_if", [](B& self) { return self.Value(self.b().EndIf()); })
      .def(
          "begin_fn", [](B& self, const std::string& name, bool primitive) { self.b().BeginFn(name, primitive); },
          py::arg("name") = "", py::arg("primitive") = false)
      .def("end_fn", [](B& self) { return self.Value(self.b().EndFn()); })
      .def(
          "ret", [](B& self, py::handle value) { self.b().Return(self.ToArg(value)); }, py::arg("value"),
          "`return value` of the innermost open block.");
}

}  // namespace

void BindBuilder(py::module_& m) {
  BindOperands(m);
  BuilderClass builder(m, "_Builder", "Low-level builder; use vdev.Builder.");
  builder.def(py::init<>());
  DefineTypes(builder);
  DefineFunctions(builder);
  DefineBindings(builder);
  builder.def("finish", &PyBuilder::Finish, py::arg("file") = "<builder>",
              "Resolves @names and verifies; returns the Module. BuildError on misuse.");
}

}  // namespace vdev::python
