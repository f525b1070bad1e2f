// Import-time evaluation of small tensors (internal/fold.h).
#include "internal/fold.h"

#include <cstring>

namespace vdev::frontend::internal {
namespace {

bool IsInteger(ir::DType d) {
  return d == ir::DType::kI64 || d == ir::DType::kI32 || d == ir::DType::kI8 || d == ir::DType::kU8 ||
         d == ir::DType::kBool;
}

void WriteInt(HostTensor& t, int64_t i, int64_t v) {
  if (t.dtype == ir::DType::kI64) {
    std::memcpy(t.bytes.data() + 8 * i, &v, 8);
  } else if (t.dtype == ir::DType::kI32) {
    const int32_t w = static_cast<int32_t>(v);
    std::memcpy(t.bytes.data() + 4 * i, &w, 4);
  } else {
    WriteFromDouble(t.Ref(), i, static_cast<double>(v));
  }
}

}  // namespace

int64_t NumElements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<Dims> BroadcastDims(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t BroadcastIndex(const Dims& out, const Dims& in, int64_t o) {
  int64_t index = 0, stride = 1;
  const size_t offset = out.size() - in.size();
  for (size_t k = out.size(); k-- > 0;) {
    const int64_t coord = o % out[k];
    o /= out[k];
    if (k < offset) continue;
    const int64_t extent = in[k - offset];
    if (extent != 1) index += coord * stride;
    stride *= extent;
  }
  return index;
}

std::optional<HostTensor> FoldElementwise(absl::Span<const HostTensor* const> inputs, ir::DType dtype,
                                          const ElementwiseFn& fn) {
  Dims out;
  for (const HostTensor* t : inputs) {
    std::optional<Dims> d = BroadcastDims(out, Dims(t->shape.begin(), t->shape.end()));
    if (!d) return std::nullopt;
    out = *d;
  }
  HostTensor result = HostTensor::Zeros(dtype, Shape(out.begin(), out.end()));
  bool integers = static_cast<bool>(fn.integer);
  for (const HostTensor* t : inputs) integers = integers && IsInteger(t->dtype);
  const int64_t n = NumElements(out);
  std::vector<double> reals(inputs.size());
  std::vector<int64_t> ints(inputs.size());
  for (int64_t o = 0; o < n; ++o) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int64_t i = BroadcastIndex(out, Dims(inputs[k]->shape.begin(), inputs[k]->shape.end()), o);
      if (integers) ints[k] = ReadInt(*inputs[k], i);
      else reals[k] = ReadAsDouble(inputs[k]->Ref(), i);
    }
    if (integers) WriteInt(result, o, fn.integer(ints));
    else WriteFromDouble(result.Ref(), o, fn.real(reals));
  }
  return result;
}

HostTensor WithShape(const HostTensor& t, const Dims& dims) {
  HostTensor out = t;
  out.shape.assign(dims.begin(), dims.end());
  return out;
}

HostTensor Remap(const HostTensor& t, const Dims& dims, const std::function<int64_t(const Dims& index)>& index) {
  HostTensor out = HostTensor::Zeros(t.dtype, Shape(dims.begin(), dims.end()));
  const size_t bytes = DTypeBytes(t.dtype);
  const int64_t n = NumElements(dims);
  Dims coord(dims.size(), 0);
  for (int64_t o = 0; o < n; ++o) {
    std::memcpy(out.bytes.data() + o * bytes, t.bytes.data() + index(coord) * bytes, bytes);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++coord[k] < dims[k]) break;
      coord[k] = 0;
    }
  }
  return out;
}

HostTensor BroadcastTo(const HostTensor& t, const Dims& dims) {
  const Dims in(t.shape.begin(), t.shape.end());
  const Dims out = dims;
  return Remap(t, dims, [&](const Dims& coord) {
    int64_t o = 0;
    for (size_t k = 0; k < out.size(); ++k) o = o * out[k] + coord[k];
    return BroadcastIndex(out, in, o);
  });
}

HostTensor Convert(const HostTensor& t, ir::DType dtype) {
  HostTensor out = HostTensor::Zeros(dtype, t.shape);
  const bool integers = IsInteger(t.dtype) && IsInteger(dtype) && dtype != ir::DType::kBool;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (integers) WriteInt(out, i, ReadInt(t, i));
    else WriteFromDouble(out.Ref(), i, ReadAsDouble(t.Ref(), i));
  }
  return out;
}

}  // namespace vdev::frontend::internal
