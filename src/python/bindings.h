// Shared pieces of the `vdev._vdev` extension: the module object Python holds, argument
// conversion, and raising the located exceptions of python/vdev/_errors.py.
//
// The extension is thin on purpose: it converts arguments, calls the C++ API and turns every
// non-OK absl::Status into a Python exception (no Status crosses into Python unreported).
#ifndef VDEV_SRC_PYTHON_BINDINGS_H_
#define VDEV_SRC_PYTHON_BINDINGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pybind11/pybind11.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/support/diagnostic.h"

namespace vdev::python {

namespace py = pybind11;

// A verified module with the text it was read from, so that errors and warnings about it can be
// shown as `FILE:LINE:COL` with the offending line. Immutable once made: planning and lowering
// read it with the GIL released.
struct PyModule {
  ir::Module module;
  std::string file;    // the name used in messages
  std::string source;  // empty for a module built with the Builder
};
using ModuleHandle = std::shared_ptr<const PyModule>;

// A lowered program (vdev.lower's result): the module after LowerMemory, the device of each binding
// (PlanResult::binding_devices as LowerMemory extended it) and the memory plan. Immutable.
struct PyLowered {
  std::string file;
  std::string source;  // the planned input's text, for located messages
  ir::Module module;
  std::vector<ir::DeviceId> binding_devices;
  MemoryPlan memory;
  std::shared_ptr<PyModule> lowered;  // made on first use of Lowered.module
};

// Raises `vdev.<exception>(*args, **kwargs)` (a class of python/vdev/_errors.py).
[[noreturn]] void Raise(const char* exception, const py::tuple& args, const py::dict& kwargs = py::dict());

// Raises vdev.ParseError for `diag` about `source`, called `file`.
[[noreturn]] void RaiseParseError(absl::string_view file, absl::string_view source, const Diagnostic& diag);

// Raises vdev.Error with the status message (for failures that have no location).
[[noreturn]] void RaiseStatus(const absl::Status& status);

// A VirtualDevice from a VirtualDevice or its literal text (`"cuda:0"`); ParseError on bad text,
// TypeError on anything else.
VirtualDevice DeviceArg(py::handle value);

// Registration of each part of the API on the extension module.
void BindLattice(py::module_& m);
void BindIr(py::module_& m);
void BindBuilder(py::module_& m);
void BindMachine(py::module_& m);
void BindPlan(py::module_& m);
void BindSession(py::module_& m);
void BindRun(py::module_& m);
void BindChannels(py::module_& m);

}  // namespace vdev::python

#endif  // VDEV_SRC_PYTHON_BINDINGS_H_
