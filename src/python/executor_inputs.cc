// The executor's inputs read in place (executor_inputs.h).
#include "python/executor_inputs.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dlpack/dlpack.h"
#include "pybind11/numpy.h"
#include "python/numpy_tensors.h"

namespace vdev::python {
namespace {

namespace py = pybind11;

// The IR dtype a DLPack dtype holds; nullopt for vector lanes and types vdev has no tensors of.
// uint16 is bf16's bits, as for NumPy.
std::optional<ir::DType> DTypeOfDLPack(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 64) return ir::DType::kF64;
      if (t.bits == 32) return ir::DType::kF32;
      if (t.bits == 16) return ir::DType::kF16;
      return std::nullopt;
    case kDLBfloat: return t.bits == 16 ? std::optional(ir::DType::kBF16) : std::nullopt;
    case kDLInt:
      if (t.bits == 64) return ir::DType::kI64;
      if (t.bits == 32) return ir::DType::kI32;
      if (t.bits == 8) return ir::DType::kI8;
      return std::nullopt;
    case kDLUInt:
      if (t.bits == 8) return ir::DType::kU8;
      if (t.bits == 16) return ir::DType::kBF16;
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::string DLPackDTypeName(DLDataType t) {
  static constexpr const char* kCodes[] = {"int", "uint", "float", "handle", "bfloat", "complex"};
  const char* code = t.code < std::size(kCodes) ? kCodes[t.code] : "code?";
  return absl::StrCat(code, static_cast<int>(t.bits), t.lanes == 1 ? "" : absl::StrCat("x", t.lanes));
}

std::string ShapeText(absl::Span<const int64_t> shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

void CheckShape(const std::string& what, absl::Span<const int64_t> want, absl::Span<const int64_t> found) {
  if (!std::equal(want.begin(), want.end(), found.begin(), found.end())) {
    throw py::value_error(absl::StrCat(what, ": expected shape ", ShapeText(want), ", found ", ShapeText(found)));
  }
}

// Row-major and dense: every stride (in elements) is the product of the dimensions after it;
// dimensions of extent 1 may have any stride.
bool RowMajor(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

}  // namespace

void ExecutorInputs::DLPackDeleter::operator()(DLManagedTensor* tensor) const {
  if (tensor->deleter != nullptr) tensor->deleter(tensor);
}

ExecutorInputs::ExecutorInputs(const ir::Module& m, const py::sequence& inputs) {
  const ir::FuncId main = m.FindGlobal("main");
  if (main == ir::kNoFunc) throw py::value_error("the program has no @main to run");
  absl::Span<const ir::Param> params = m.Params(m.functions[main]);
  if (inputs.size() != params.size()) {
    throw py::type_error(absl::StrCat("@main takes ", params.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) Add(m, params[i], i, inputs[i]);
}

ExecutorInputs::~ExecutorInputs() = default;
ExecutorInputs::ExecutorInputs(ExecutorInputs&&) noexcept = default;
ExecutorInputs& ExecutorInputs::operator=(ExecutorInputs&&) noexcept = default;

void ExecutorInputs::Add(const ir::Module& m, const ir::Param& param, size_t index, py::handle value) {
  const ir::TypeNode& node = m.types.node(param.type);
  absl::Span<const int64_t> dims = m.types.dims(param.type);
  const std::string what =
      absl::StrCat("input ", index, " (%", m.Name(param.name), ": ", m.types.ToString(param.type), ")");
  // NumPy arrays (also read-only ones, which NumPy will not export through DLPack) and anything
  // without __dlpack__ that NumPy can make an array of (lists, scalars): any layout, a C-ordered
  // copy only when the array is not one already.
  if (py::isinstance<py::array>(value) || !py::hasattr(value, "__dlpack__")) {
    py::array array = py::array::ensure(value);
    if (!array || array.dtype().kind() == 'O') {
      throw py::type_error(absl::StrCat(what, ": expected a NumPy array or an object with __dlpack__"));
    }
    py::dtype want = NumpyDType(node.dtype);
    if (array.dtype().num() != want.num()) {
      throw py::type_error(absl::StrCat(what, ": expected dtype ", std::string(py::str(want)), ", found ",
                                        std::string(py::str(array.dtype()))));
    }
    CheckShape(what, dims, absl::Span<const int64_t>(array.shape(), static_cast<size_t>(array.ndim())));
    if (!(array.flags() & py::array::c_style)) array = py::array::ensure(array, py::array::c_style);
    views_.push_back(TensorRef{const_cast<void*>(array.data()), node.dtype, Shape(dims.begin(), dims.end())});
    arrays_.push_back(std::move(array));
    return;
  }
  AddDLPack(m, param, what, value);
}

void ExecutorInputs::AddDLPack(const ir::Module& m, const ir::Param& param, const std::string& what, py::handle value) {
  const ir::TypeNode& node = m.types.node(param.type);
  absl::Span<const int64_t> dims = m.types.dims(param.type);
  // Where the tensor lives, asked before it is exported (the protocol's order).
  if (py::hasattr(value, "__dlpack_device__")) {
    auto [type, id] = value.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (type != kDLCPU && type != kDLCUDAHost && type != kDLCUDAManaged) {
      throw py::value_error(absl::StrCat(what, ": the DLPack tensor is on device type ", type, " (id ", id,
                                         "); vdev reads inputs from host memory (kDLCPU)"));
    }
  }
  py::object capsule = value.attr("__dlpack__")();
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    throw py::type_error(absl::StrCat(what, ": __dlpack__ returned no unconsumed 'dltensor' capsule"));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  // Consumed: from now on the capsule's destructor leaves the tensor to us (the deleter runs when
  // this run's inputs go).
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  dlpack_.emplace_back(managed);
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost && t.device.device_type != kDLCUDAManaged) {
    throw py::value_error(absl::StrCat(what, ": the DLPack tensor is on device type ",
                                       static_cast<int>(t.device.device_type),
                                       "; vdev reads inputs from host memory (kDLCPU)"));
  }
  std::optional<ir::DType> dtype = DTypeOfDLPack(t.dtype);
  if (!dtype || *dtype != node.dtype) {
    throw py::type_error(absl::StrCat(what, ": expected dtype ", ir::DTypeName(node.dtype), ", found DLPack ",
                                      DLPackDTypeName(t.dtype)));
  }
  CheckShape(what, dims, absl::Span<const int64_t>(t.shape, static_cast<size_t>(t.ndim)));
  if (!RowMajor(t)) {
    throw py::value_error(absl::StrCat(what, ": the DLPack tensor is not C-contiguous (strides ",
                                       ShapeText(absl::Span<const int64_t>(t.strides, static_cast<size_t>(t.ndim))),
                                       " elements); pass a contiguous copy"));
  }
  views_.push_back(TensorRef{static_cast<char*>(t.data) + t.byte_offset, node.dtype, Shape(dims.begin(), dims.end())});
}

}  // namespace vdev::python
