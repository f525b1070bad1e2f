// vdev.Session, vdev.DRef and vdev.RemoteFunc (include/vdev/controller/controller.h): controller sessions
// driven from Python. Arguments convert as int → int64, float → double, str, tuple of ints → a
// shape, NumPy array → a host tensor (copied to every worker), DRef → each worker's own value; what
// comes back converts the other way (a tensor as a NumPy array that owns its bytes). Every call
// that may wait for a worker releases the GIL.
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "pybind11/numpy.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/numpy_tensors.h"
#include "vdev/controller/controller.h"

namespace vdev::python {
namespace {

void Check(const absl::Status& status) {
  if (!status.ok()) Raise("SessionError", py::make_tuple(std::string(status.message())));
}
template <typename T>
T Check(absl::StatusOr<T> value) {
  Check(value.status());
  return *std::move(value);
}

Value ToValue(py::handle h) {
  if (h.is_none()) return Value();
  if (py::isinstance<DRef>(h)) return Value(h.cast<DRef>());
  if (py::isinstance<py::bool_>(h)) return Value(static_cast<int64_t>(h.cast<bool>()));
  if (py::isinstance<py::int_>(h)) return Value(h.cast<int64_t>());
  if (py::isinstance<py::float_>(h)) return Value(h.cast<double>());
  if (py::isinstance<py::str>(h)) return Value(h.cast<std::string>());
  if (py::isinstance<py::tuple>(h)) {
    std::vector<int64_t> dims = h.cast<std::vector<int64_t>>();
    return Value(Shape(dims.begin(), dims.end()));
  }
  if (py::isinstance<py::array>(h)) return Value(HostTensorFromNumpy(h.cast<py::array>()));
  throw py::type_error(absl::StrCat("cannot pass a ", std::string(py::str(py::type::of(h).attr("__name__"))),
                                    " to a worker (expected int, float, str, a tuple of ints as a shape, a NumPy "
                                    "array or a DRef)"));
}

py::object FromValue(Value value) {
  struct Visitor {
    py::object operator()(std::monostate) const { return py::none(); }
    py::object operator()(int64_t x) const { return py::int_(x); }
    py::object operator()(double x) const { return py::float_(x); }
    py::object operator()(std::string& s) const { return py::str(s); }
    py::object operator()(Shape& s) const { return py::tuple(py::cast(std::vector<int64_t>(s.begin(), s.end()))); }
    py::object operator()(HostTensor& t) const { return NumpyFromHostTensor(std::move(t)); }
    py::object operator()(DRef& r) const { return py::cast(r); }
  };
  return std::visit(Visitor{}, value.v);
}

ControllerOptions Options(int num_groups, double timeout, const std::string& program) {
  if (timeout <= 0) throw py::value_error("timeout must be positive (seconds)");
  ControllerOptions options;
  options.num_groups = num_groups;
  options.timeout = absl::Seconds(timeout);
  options.program = program;
  return options;
}

// The session and the GIL: the session is driven by one thread at a time (controller.h), which the
// GIL gives us; it is released only inside the calls themselves.
using SessionPtr = std::shared_ptr<ControllerSession>;

SessionPtr Make(absl::StatusOr<std::unique_ptr<ControllerSession>> session) {
  return SessionPtr(Check(std::move(session)));
}

void Shutdown(ControllerSession& s) {
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = s.Shutdown();
  }
  Check(status);
}

// The worker program installed next to this extension (src/python/worker_main.cc): a Python
// interpreter cannot re-run itself as a worker the way a C++ program that calls MaybeRunWorker can.
std::string WorkerProgram() {
  std::string extension = py::module_::import("vdev._vdev").attr("__file__").cast<std::string>();
  return extension.substr(0, extension.rfind('/') + 1) + "vdev_worker";
}

// vdev.DRef and vdev.RemoteFunc: what calls on a session return and take.
void BindRemoteHandles(py::module_& m) {
  py::class_<DRef>(m, "DRef", "A register on every worker of a session, each holding that worker's own value.")
      .def_property_readonly("reg_id", &DRef::reg_id)
      .def(
          "debug_get_from_remote",
          [](const DRef& r, int worker) {
            absl::StatusOr<Value> value;
            {
              py::gil_scoped_release release;
              value = r.DebugGetFromRemote(worker);
            }
            return FromValue(Check(std::move(value)));
          },
          py::arg("worker"), "Worker `worker`'s value (waits for it).")
      .def("__repr__", [](const DRef& r) { return absl::StrCat("<vdev.DRef register ", r.reg_id(), ">"); });
  py::class_<RemoteFunc>(m, "RemoteFunc", "A worker function looked up by name (Session.get_global_func).")
      .def_readonly("name", &RemoteFunc::name)
      .def("__repr__", [](const RemoteFunc& f) { return absl::StrCat("<vdev.RemoteFunc ", f.name, ">"); });
}

using SessionClass = py::class_<ControllerSession, SessionPtr>;

// Session.threaded, Session.process and what a session is.
void DefineCreation(SessionClass& session) {
  session
      .def_static(
          "threaded",
          [](int n, int num_groups, double timeout) {
            return Make(ControllerSession::Threaded(n, Options(num_groups, timeout, "")));
          },
          py::arg("n"), py::kw_only(), py::arg("num_groups") = 1, py::arg("timeout") = 120.0,
          "n workers as threads of this process.")
      .def_static(
          "process",
          [](int n, int num_groups, double timeout, const py::object& program) {
            ControllerOptions options =
                Options(num_groups, timeout, program.is_none() ? WorkerProgram() : program.cast<std::string>());
            absl::StatusOr<std::unique_ptr<ControllerSession>> session;
            {
              py::gil_scoped_release release;
              session = ControllerSession::Process(n, options);
            }
            return Make(std::move(session));
          },
          py::arg("n"), py::kw_only(), py::arg("num_groups") = 1, py::arg("timeout") = 120.0,
          py::arg("program") = py::none(),
          "n worker processes running `program` (default: the vdev_worker installed with this package; a\n"
          "program of your own must call vdev::MaybeRunWorker first in main).")
      .def_property_readonly("num_workers", &ControllerSession::num_workers)
      .def_property_readonly("num_groups", &ControllerSession::num_groups)
      .def_property_readonly("worker_pids", &ControllerSession::worker_pids)
      .def_property_readonly(
          "ccl_session_id", &ControllerSession::ccl_session_id,
          "The id of the workers' collectives after init_ccl (names their shared memory); '' before.")
      .def_property_readonly("ccl_rendezvous_dir", &ControllerSession::ccl_rendezvous_dir);
}

// Calls on the workers and waits for them.
void DefineCalls(SessionClass& session) {
  session
      .def(
          "get_global_func", [](ControllerSession& s, const std::string& name) { return Check(s.GetGlobalFunc(name)); },
          py::arg("name"))
      .def(
          "call_packed",
          [](ControllerSession& s, const RemoteFunc& f, const py::args& args) {
            std::vector<Value> values;
            for (py::handle a : args) values.push_back(ToValue(a));
            absl::StatusOr<DRef> result;
            {
              py::gil_scoped_release release;
              result = s.CallPackedArgs(f, std::move(values));
            }
            return Check(std::move(result));
          },
          py::arg("func"), "call_packed(func, *args): queues func(*args) on every worker; returns its DRef at once.")
      .def(
          "sync_worker",
          [](ControllerSession& s, int worker) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = s.SyncWorker(worker);
            }
            Check(status);
          },
          py::arg("worker"))
      .def("sync_all_workers", [](ControllerSession& s) {
        absl::Status status;
        {
          py::gil_scoped_release release;
          status = s.SyncAllWorkers();
        }
        Check(status);
      });
}

// Copies and registers: a worker's values to and from this process.
void DefineTransfers(SessionClass& session) {
  session
      .def(
          "copy_to_worker0",
          [](ControllerSession& s, const py::array& array, const DRef& dref) {
            HostTensor host = HostTensorFromNumpy(array);
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = s.CopyToWorker0(host, dref);
            }
            Check(status);
          },
          py::arg("array"), py::arg("dref"))
      .def(
          "copy_from_worker0",
          [](ControllerSession& s, const DRef& dref) {
            HostTensor host;
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = s.CopyFromWorker0(&host, dref);
            }
            Check(status);
            return NumpyFromHostTensor(std::move(host));
          },
          py::arg("dref"))
      .def(
          "debug_get_from_remote",
          [](ControllerSession& s, int64_t reg_id, int worker) {
            absl::StatusOr<Value> value;
            {
              py::gil_scoped_release release;
              value = s.DebugGetFromRemote(reg_id, worker);
            }
            return FromValue(Check(std::move(value)));
          },
          py::arg("reg_id"), py::arg("worker"))
      .def(
          "debug_set_register",
          [](ControllerSession& s, int64_t reg_id, py::handle value, int worker) {
            Value v = ToValue(value);
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = s.DebugSetRegister(reg_id, v, worker);
            }
            Check(status);
          },
          py::arg("reg_id"), py::arg("value"), py::arg("worker"));
}

// Collectives, shutdown and the context manager.
void DefineLifetime(SessionClass& session) {
  session
      .def(
          "init_ccl",
          [](ControllerSession& s, const std::string& ccl, const std::vector<int>& device_ids) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = s.InitCCL(ccl, device_ids);
            }
            Check(status);
          },
          py::arg("ccl") = "host", py::arg("device_ids") = std::vector<int>())
      .def("shutdown", &Shutdown)
      .def("__enter__", [](SessionPtr s) { return s; })
      .def(
          "__exit__", [](ControllerSession& s, py::handle, py::handle, py::handle) { Shutdown(s); },
          py::arg("exc_type"), py::arg("exc"), py::arg("tb"));
}

}  // namespace

void BindSession(py::module_& m) {
  BindRemoteHandles(m);
  SessionClass session(
      m, "Session",
      "A controller session (TVM Disco's model): this program drives n workers. Use as a context manager\n"
      "(the workers stop when the block ends). Driven by one thread at a time.");
  DefineCreation(session);
  DefineCalls(session);
  DefineTransfers(session);
  DefineLifetime(session);
}

}  // namespace vdev::python
