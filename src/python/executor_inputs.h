// The executor's inputs read where they are: NumPy arrays through the buffer protocol and any
// object with `__dlpack__` (DLPack 0.6 capsules on the CPU), checked against @main's parameters.
#ifndef VDEV_SRC_PYTHON_EXECUTOR_INPUTS_H_
#define VDEV_SRC_PYTHON_EXECUTOR_INPUTS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "pybind11/pybind11.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/tensor.h"

struct DLManagedTensor;

namespace vdev::python {

// The inputs of one run, borrowed from their Python owners: `views()` point into their memory
// until this object goes. Make and destroy it with the GIL held (it releases arrays and calls
// DLPack deleters); the views may be read with the GIL released.
class ExecutorInputs {
 public:
  // `inputs` for the parameters of @main of `module`: TypeError for a wrong count, a wrong dtype or
  // an object that is not array-like; ValueError for a wrong shape, a DLPack tensor that is not in
  // host memory or not C-contiguous. Each message names the parameter.
  ExecutorInputs(const ir::Module& module, const pybind11::sequence& inputs);
  ~ExecutorInputs();
  ExecutorInputs(ExecutorInputs&&) noexcept;
  ExecutorInputs& operator=(ExecutorInputs&&) noexcept;

  absl::Span<const TensorRef> views() const { return views_; }

 private:
  struct DLPackDeleter {
    void operator()(DLManagedTensor* tensor) const;
  };
  void Add(const ir::Module& module, const ir::Param& param, size_t index, pybind11::handle value);
  void AddDLPack(const ir::Module& module, const ir::Param& param, const std::string& what, pybind11::handle value);

  std::vector<TensorRef> views_;
  std::vector<pybind11::object> arrays_;  // the NumPy arrays the views read
  std::vector<std::unique_ptr<DLManagedTensor, DLPackDeleter>> dlpack_;
};

}  // namespace vdev::python

#endif  // VDEV_SRC_PYTHON_EXECUTOR_INPUTS_H_
