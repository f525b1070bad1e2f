// vdev.Executor, vdev.run and vdev.run_workers (include/vdev/executor.h): lowered programs run on
// the host backend's CPU kernels, NumPy arrays in and out. Outputs are handed to NumPy without a
// copy (the array owns the HostTensor the executor returned); inputs are copied once into the
// HostTensors the executor reads. The GIL is released while programs run.
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/numpy.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/numpy_tensors.h"
#include "vdev/executor.h"
#include "vdev/status_macros.h"

namespace vdev::python {
namespace {

// The executor's input for parameter `index`: `value` as a contiguous array of the parameter's
// dtype and shape, copied into a HostTensor. TypeError/ValueError naming the parameter otherwise.
HostTensor ToHostTensor(const ir::Module& m, const ir::Param& param, size_t index, py::handle value) {
  const ir::TypeId type = param.type;
  const ir::TypeNode& node = m.types.node(type);
  const std::string what = absl::StrCat("input ", index, " (%", m.Name(param.name), ": ", m.types.ToString(type), ")");
  py::dtype want = NumpyDType(node.dtype);
  py::array array = py::array::ensure(value, py::array::c_style);
  if (!array) throw py::type_error(absl::StrCat(what, ": expected a NumPy array"));
  if (!array.dtype().is(want) && array.dtype().num() != want.num()) {
    throw py::type_error(absl::StrCat(what, ": expected dtype ", std::string(py::str(want)), ", found ",
                                      std::string(py::str(array.dtype()))));
  }
  absl::Span<const int64_t> dims = m.types.dims(type);
  bool same = array.ndim() == static_cast<py::ssize_t>(dims.size());
  for (size_t i = 0; same && i < dims.size(); ++i) same = array.shape(static_cast<py::ssize_t>(i)) == dims[i];
  if (!same) {
    std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
    throw py::value_error(absl::StrCat(what, ": expected shape ", std::string(py::str(py::cast(std::vector<int64_t>(dims.begin(), dims.end())))),
                                       ", found ", std::string(py::str(py::cast(shape)))));
  }
  HostTensor t = HostTensorFromNumpy(array);
  t.dtype = node.dtype;  // uint16 arrays feed bf16 parameters
  return t;
}

// The program as the executor loads it (it keeps a pointer, so each Executor owns its copy).
std::unique_ptr<LoweredProgram> ProgramOf(const PyLowered& l) {
  auto program = std::make_unique<LoweredProgram>();
  program->module = l.module.Clone();
  program->binding_devices = l.binding_devices;
  program->memory = l.memory;
  program->file = l.file;
  program->source = l.source;
  return program;
}

std::vector<HostTensor> Inputs(const LoweredProgram& program, const py::sequence& inputs) {
  const ir::Module& m = program.module;
  const ir::FuncId main = m.FindGlobal("main");
  if (main == ir::kNoFunc) Raise("Error", py::make_tuple(absl::StrCat(program.file, ": error: no @main to run")));
  absl::Span<const ir::Param> params = m.Params(m.functions[main]);
  if (inputs.size() != params.size()) {
    throw py::type_error(absl::StrCat("@main takes ", params.size(), " inputs, got ", inputs.size()));
  }
  std::vector<HostTensor> out;
  for (size_t i = 0; i < params.size(); ++i) out.push_back(ToHostTensor(m, params[i], i, inputs[i]));
  return out;
}

py::list Outputs(std::vector<HostTensor> tensors) {
  py::list out;
  for (HostTensor& t : tensors) out.append(NumpyFromHostTensor(std::move(t)));
  return out;
}

[[noreturn]] void RaiseRunError(const absl::Status& status) {
  Raise("RunError", py::make_tuple(std::string(status.message())));
}

// One worker on the host backend, loaded once and run as often as asked.
class PyExecutor {
 public:
  explicit PyExecutor(const PyLowered& lowered) : program_(ProgramOf(lowered)) {
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = [&]() -> absl::Status {
        VDEV_RETURN_IF_ERROR(CheckKernels(*program_, "host"));
        VDEV_ASSIGN_OR_RETURN(backend_, CreateHostBackend(nullptr));
        VDEV_ASSIGN_OR_RETURN(executor_, Executor::Load(*program_, backend_.get()));
        return absl::OkStatus();
      }();
    }
    if (!status.ok()) RaiseRunError(status);
  }

  py::list Run(const py::args& inputs) {
    std::vector<HostTensor> in = Inputs(*program_, inputs);
    absl::StatusOr<std::vector<HostTensor>> out;
    {
      py::gil_scoped_release release;
      out = executor_->Run(in);
    }
    if (!out.ok()) RaiseRunError(out.status());
    return Outputs(*std::move(out));
  }

 private:
  std::unique_ptr<LoweredProgram> program_;
  std::unique_ptr<ExecutionBackend> backend_;
  std::unique_ptr<Executor> executor_;
};

// `workers` threads of one ThreadGroup, each an executor on the host backend with its own inputs:
// the all-reduces of the program sum across them (what `vdev run --check` uses as its reference).
py::list RunWorkers(const PyLowered& lowered, const std::vector<py::sequence>& per_worker) {
  const int workers = static_cast<int>(per_worker.size());
  if (workers < 1) throw py::value_error("run_workers needs the inputs of at least one worker");
  std::unique_ptr<LoweredProgram> program = ProgramOf(lowered);
  std::vector<std::vector<HostTensor>> inputs;
  for (const py::sequence& in : per_worker) inputs.push_back(Inputs(*program, in));
  std::vector<std::vector<HostTensor>> results(workers);
  std::vector<absl::Status> statuses(workers);
  {
    py::gil_scoped_release release;
    statuses[0] = CheckKernels(*program, "host");
    if (statuses[0].ok()) {
      ThreadGroup group(workers);
      std::vector<std::thread> threads;
      for (int k = 0; k < workers; ++k) {
        threads.emplace_back([&, k] {
          absl::Status status = [&]() -> absl::Status {
            VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> backend, CreateThreadBackend(&group, k));
            VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Load(*program, backend.get()));
            VDEV_ASSIGN_OR_RETURN(results[k], executor->Run(inputs[k]));
            return absl::OkStatus();
          }();
          if (!status.ok()) group.Abort(status);
          statuses[k] = status;
        });
      }
      for (std::thread& t : threads) t.join();
    }
  }
  for (int k = 0; k < workers; ++k) {
    if (!statuses[k].ok()) RaiseRunError(absl::Status(statuses[k].code(), absl::StrCat("worker ", k, ": ", statuses[k].message())));
  }
  py::list out;
  for (std::vector<HostTensor>& r : results) out.append(Outputs(std::move(r)));
  return out;
}

}  // namespace

void BindRun(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor",
                         "A lowered program loaded on the host backend (CPU kernels): its pools are allocated\n"
                         "once and reused by every run.")
      .def(py::init<const PyLowered&>(), py::arg("lowered"),
           "Loads `lowered`; RunError when an op has no CPU kernel (the message names the op and its location).")
      .def("run", &PyExecutor::Run,
           "run(*inputs): one execution of @main with NumPy arrays of @main's parameter dtypes and shapes\n"
           "(bf16 as uint16 bits); returns @main's results, a tuple's tensors in order, as NumPy arrays.");
  m.def("run", [](const PyLowered& lowered, const py::args& inputs) { return PyExecutor(lowered).Run(inputs); },
        py::arg("lowered"), "run(lowered, *inputs): Executor(lowered).run(*inputs).");
  m.def("run_workers", &RunWorkers, py::arg("lowered"), py::arg("inputs"),
        "run_workers(lowered, inputs): one host worker per entry of `inputs` (each a list of arrays), as\n"
        "threads whose all-reduces sum across them; returns each worker's outputs.");
}

}  // namespace vdev::python
