// Tensors as the kernels, the executor and the session API pass them: dense and row-major.
//
//   HostTensor x = HostTensor::Zeros(ir::DType::kBF16, {2, 3});
//   TensorRef view = x.Ref();          // what a CPU kernel reads or writes
//   double first = ReadAsDouble(x.Ref(), 0);
#ifndef VDEV_TENSOR_H_
#define VDEV_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "vdev/ir/ir.h"

namespace vdev {

using Shape = absl::InlinedVector<int64_t, 6>;

// A dense row-major tensor in one device's memory (host memory for the CPU, device memory for a GPU).
struct TensorRef {
  void* data = nullptr;
  ir::DType dtype = ir::DType::kF32;
  Shape shape;

  int64_t NumElements() const;
  int64_t NumBytes() const { return NumElements() * static_cast<int64_t>(DTypeBytes(dtype)); }
};

// A tensor that owns its bytes in host memory (inputs and outputs of `vdev run`, session copies).
struct HostTensor {
  ir::DType dtype = ir::DType::kF32;
  Shape shape;
  std::vector<std::byte> bytes;

  static HostTensor Zeros(ir::DType dtype, Shape shape);
  int64_t NumElements() const;
  TensorRef Ref() { return TensorRef{bytes.data(), dtype, shape}; }
  TensorRef Ref() const { return TensorRef{const_cast<std::byte*>(bytes.data()), dtype, shape}; }
};

// Element i of a tensor in host memory, converted to double (f16/bf16 exactly; bool as 0/1).
double ReadAsDouble(const TensorRef& tensor, int64_t i);
// Stores `v` into element i as the dtype stores it (f16/bf16 rounded to nearest even, integers
// truncated towards zero, bool and u8 as their integer value).
void WriteFromDouble(const TensorRef& tensor, int64_t i, double v);

}  // namespace vdev

#endif  // VDEV_TENSOR_H_
