// Host tensors to and from NumPy arrays (numpy_tensors.h).
#include "python/numpy_tensors.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vdev::python {

namespace py = pybind11;

py::dtype NumpyDType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF64: return py::dtype::of<double>();
    case ir::DType::kF32: return py::dtype::of<float>();
    case ir::DType::kF16: return py::dtype("float16");
    case ir::DType::kBF16: return py::dtype::of<uint16_t>();
    case ir::DType::kI64: return py::dtype::of<int64_t>();
    case ir::DType::kI32: return py::dtype::of<int32_t>();
    case ir::DType::kI8: return py::dtype::of<int8_t>();
    case ir::DType::kU8: return py::dtype::of<uint8_t>();
    case ir::DType::kBool: return py::dtype::of<bool>();
  }
  throw std::logic_error("unknown dtype");
}

std::optional<ir::DType> DTypeOfNumpy(const py::dtype& dtype) {
  for (ir::DType d : {ir::DType::kF64, ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI64,
                      ir::DType::kI32, ir::DType::kI8, ir::DType::kU8, ir::DType::kBool}) {
    if (NumpyDType(d).num() == dtype.num()) return d;
  }
  return std::nullopt;
}

HostTensor HostTensorFromNumpy(const py::array& array) {
  std::optional<ir::DType> dtype = DTypeOfNumpy(array.dtype());
  if (!dtype) {
    throw py::type_error(absl::StrCat("vdev has no tensors of dtype ", std::string(py::str(array.dtype()))));
  }
  py::array contiguous = py::array::ensure(array, py::array::c_style);
  HostTensor t;
  t.dtype = *dtype;
  t.shape = Shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  // Sizes come from vdev's dtype, not from NumPy's descriptor: pybind11 before 2.12 reads the
  // descriptor's itemsize at NumPy 1's offset, which NumPy 2 moved (garbage sizes and strides).
  t.bytes.resize(static_cast<size_t>(t.NumElements()) * ir::DTypeBytes(t.dtype));
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), contiguous.data(), t.bytes.size());
  return t;
}

py::array NumpyFromHostTensor(HostTensor tensor) {
  auto* owned = new HostTensor(std::move(tensor));
  py::capsule base(owned, [](void* p) { delete static_cast<HostTensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  // C-order strides spelled out (see HostTensorFromNumpy: pybind11's own would read the itemsize).
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(ir::DTypeBytes(owned->dtype));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(NumpyDType(owned->dtype), shape, strides, owned->bytes.data(), base);
}

}  // namespace vdev::python
