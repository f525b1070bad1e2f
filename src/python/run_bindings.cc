// vdev.Executor, vdev.run and vdev.run_workers (include/vdev/executor/executor.h): lowered programs run on
// the host backend's CPU kernels, NumPy arrays in and out. Outputs are handed to NumPy without a
// copy (the array owns the HostTensor the executor returned); inputs are copied once into the
// HostTensors the executor reads. The GIL is released while programs run.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/numpy.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/executor_inputs.h"
#include "python/numpy_tensors.h"
#include "vdev/executor/executor.h"
#include "vdev/executor/run.h"
#include "vdev/support/status_macros.h"

namespace vdev::python {
namespace {

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

py::list Outputs(std::vector<HostTensor> tensors) {
  py::list out;
  for (HostTensor& t : tensors) out.append(NumpyFromHostTensor(std::move(t)));
  return out;
}

[[noreturn]] void RaiseRunError(const absl::Status& status) {
  Raise("RunError", py::make_tuple(std::string(status.message())));
}

// One worker on the host or the CUDA backend, loaded once and run as often as asked.
class PyExecutor {
 public:
  PyExecutor(const PyLowered& lowered, const std::string& backend) : program_(ProgramOf(lowered)) {
    if (backend != "host" && backend != "cuda") {
      throw py::value_error(absl::StrCat("unknown backend '", backend, "' (expected host or cuda)"));
    }
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = [&]() -> absl::Status {
        VDEV_RETURN_IF_ERROR(CheckKernels(*program_, backend));
        if (backend == "cuda") {
          VDEV_ASSIGN_OR_RETURN(backend_, CreateCudaBackend(nullptr, VirtualCudaDevices(program_->module)));
        } else {
          VDEV_ASSIGN_OR_RETURN(backend_, CreateHostBackend(nullptr));
        }
        VDEV_ASSIGN_OR_RETURN(executor_, Executor::Load(*program_, backend_.get()));
        return absl::OkStatus();
      }();
    }
    if (!status.ok()) RaiseRunError(status);
  }

  py::list Run(const py::args& inputs) {
    ExecutorInputs in(program_->module, inputs);
    absl::StatusOr<std::vector<HostTensor>> out;
    {
      py::gil_scoped_release release;
      out = executor_->RunViews(in.views());
    }
    if (!out.ok()) RaiseRunError(out.status());
    return Outputs(*std::move(out));
  }

  std::string backend() const { return backend_->name(); }

 private:
  std::unique_ptr<LoweredProgram> program_;
  std::unique_ptr<ExecutionBackend> backend_;
  std::unique_ptr<Executor> executor_;
};

// `workers` threads of one ThreadGroup, each an executor on the host backend with its own inputs:
// the all-reduces of the program sum across them (RunInThreads, what `vdev run --check` uses as its
// reference). A worker count the program's all-reduces were not written for is refused first.
py::list RunWorkers(const PyLowered& lowered, const std::vector<py::sequence>& per_worker) {
  const int workers = static_cast<int>(per_worker.size());
  if (workers < 1) throw py::value_error("run_workers needs the inputs of at least one worker");
  std::unique_ptr<LoweredProgram> program = ProgramOf(lowered);
  if (absl::Status s = CheckWorkerCount(*program, workers); !s.ok()) throw py::value_error(std::string(s.message()));
  std::vector<ExecutorInputs> inputs;
  for (const py::sequence& in : per_worker) inputs.emplace_back(program->module, in);
  std::vector<std::vector<TensorRef>> views;
  for (const ExecutorInputs& in : inputs) views.emplace_back(in.views().begin(), in.views().end());
  absl::StatusOr<std::vector<std::vector<HostTensor>>> results;
  {
    py::gil_scoped_release release;
    absl::Status kernels = CheckKernels(*program, "host");
    results =
        kernels.ok() ? RunInThreads(*program, views) : absl::StatusOr<std::vector<std::vector<HostTensor>>>(kernels);
  }
  if (!results.ok()) RaiseRunError(results.status());
  py::list out;
  for (std::vector<HostTensor>& r : *results) out.append(Outputs(std::move(r)));
  return out;
}

}  // namespace

void BindRun(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor",
                         "A lowered program loaded on the host backend (CPU kernels): its pools are allocated\n"
                         "once and reused by every run.")
      .def(py::init<const PyLowered&, const std::string&>(), py::arg("lowered"), py::kw_only(),
           py::arg("backend") = "host",
           "Loads `lowered` on backend 'host' (CPU kernels) or 'cuda' (values planned on cuda:i on a GPU);\n"
           "RunError when an op has no kernel there (naming the op and its location) or the backend cannot\n"
           "start (no GPU, or vdev built without the CUDA runtime).")
      .def("run", &PyExecutor::Run,
           "run(*inputs): one execution of @main on NumPy arrays or any host-memory object with __dlpack__\n"
           "(@main's parameter dtypes and shapes; bf16 as uint16 bits or DLPack bfloat16), read in place;\n"
           "returns @main's results, a tuple's tensors in order, as NumPy arrays that own their buffers.")
      .def_property_readonly("backend", &PyExecutor::backend, "'host' or 'cuda'.");
  m.def(
      "run",
      [](const PyLowered& lowered, const py::args& inputs, const std::string& backend) {
        return PyExecutor(lowered, backend).Run(inputs);
      },
      py::arg("lowered"), py::arg("backend") = "host",
      "run(lowered, *inputs, backend='host'): Executor(lowered, backend=backend).run(*inputs).");
  m.def("run_workers", &RunWorkers, py::arg("lowered"), py::arg("inputs"),
        "run_workers(lowered, inputs): one host worker per entry of `inputs` (each a list of arrays), as\n"
        "threads whose all-reduces sum across them; returns each worker's outputs. ValueError when the\n"
        "program's all-reduces are written for another number of workers (`workers=N`); without that\n"
        "attribute any number runs and the all-reduces sum over all of them.");
}

}  // namespace vdev::python
