// Sizes and host-side element reads and writes of vdev/kernels/tensor.h.
#include "vdev/kernels/tensor.h"

#include <cstring>

#include "vdev/support/half.h"

namespace vdev {

int64_t TensorRef::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostTensor HostTensor::Zeros(ir::DType dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<size_t>(t.NumElements()) * DTypeBytes(dtype), std::byte{0});
  return t;
}

int64_t HostTensor::NumElements() const { return TensorRef{nullptr, dtype, shape}.NumElements(); }

double ReadAsDouble(const TensorRef& tensor, int64_t i) {
  const char* p = static_cast<const char*>(tensor.data) + i * static_cast<int64_t>(DTypeBytes(tensor.dtype));
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof value);
    return value;
  };
  switch (tensor.dtype) {
    case ir::DType::kF64: return load(double{});
    case ir::DType::kF32: return load(float{});
    case ir::DType::kF16: return HalfToFloat(load(uint16_t{}));
    case ir::DType::kBF16: return BF16ToFloat(load(uint16_t{}));
    case ir::DType::kI64: return static_cast<double>(load(int64_t{}));
    case ir::DType::kI32: return load(int32_t{});
    case ir::DType::kI8: return load(int8_t{});
    case ir::DType::kU8: return load(uint8_t{});
    case ir::DType::kBool: return load(uint8_t{}) != 0 ? 1.0 : 0.0;
  }
  return 0;
}

void WriteFromDouble(const TensorRef& tensor, int64_t i, double v) {
  char* p = static_cast<char*>(tensor.data) + i * static_cast<int64_t>(DTypeBytes(tensor.dtype));
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (tensor.dtype) {
    case ir::DType::kF64: put(v); break;
    case ir::DType::kF32: put(static_cast<float>(v)); break;
    case ir::DType::kF16: put(FloatToHalf(static_cast<float>(v))); break;
    case ir::DType::kBF16: put(FloatToBF16(static_cast<float>(v))); break;
    case ir::DType::kI64: put(static_cast<int64_t>(v)); break;
    case ir::DType::kI32: put(static_cast<int32_t>(v)); break;
    case ir::DType::kI8: put(static_cast<int8_t>(v)); break;
    case ir::DType::kU8:
    case ir::DType::kBool: put(static_cast<uint8_t>(v)); break;
  }
}

}  // namespace vdev
