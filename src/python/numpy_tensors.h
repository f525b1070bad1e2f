// Host tensors to and from NumPy arrays (the session's copies; the executor's inputs and outputs).
// NumPy has no bfloat16: bf16 tensors cross as arrays of their uint16 bit patterns.
#ifndef VDEV_SRC_PYTHON_NUMPY_TENSORS_H_
#define VDEV_SRC_PYTHON_NUMPY_TENSORS_H_

#include <optional>

#include "pybind11/numpy.h"
#include "pybind11/pybind11.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/tensor.h"

namespace vdev::python {

// The NumPy dtype of an IR dtype (bf16: uint16).
pybind11::dtype NumpyDType(ir::DType dtype);

// The IR dtype of a NumPy dtype; nullopt for one vdev has no tensors of (uint16 reads as bf16).
std::optional<ir::DType> DTypeOfNumpy(const pybind11::dtype& dtype);

// A copy of `array` (any layout) as a row-major HostTensor; TypeError for an unsupported dtype.
HostTensor HostTensorFromNumpy(const pybind11::array& array);

// Hands `tensor` to NumPy without copying its bytes: the array's base owns the HostTensor.
pybind11::array NumpyFromHostTensor(HostTensor tensor);

}  // namespace vdev::python

#endif  // VDEV_SRC_PYTHON_NUMPY_TENSORS_H_
