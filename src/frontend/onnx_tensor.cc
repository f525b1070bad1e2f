// ONNX tensors (TensorProto) as host tensors, and the small tensor helpers the importer shares.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "internal/graph.h"

namespace vdev::frontend {

std::string SanitizeName(absl::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) c = '_';
  }
  return out.empty() ? "_" : out;
}

absl::StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes.str()))
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ONNX tensor"));
  absl::StatusOr<HostTensor> t = internal::TensorFromProto(proto);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", t.status().message()));
  return t;
}

namespace internal {

std::optional<ir::DType> DTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return ir::DType::kF32;
    case onnx::TensorProto::DOUBLE: return ir::DType::kF64;
    case onnx::TensorProto::FLOAT16: return ir::DType::kF16;
    case onnx::TensorProto::BFLOAT16: return ir::DType::kBF16;
    case onnx::TensorProto::INT64: return ir::DType::kI64;
    case onnx::TensorProto::INT32: return ir::DType::kI32;
    case onnx::TensorProto::INT8: return ir::DType::kI8;
    case onnx::TensorProto::UINT8: return ir::DType::kU8;
    case onnx::TensorProto::BOOL: return ir::DType::kBool;
    default: return std::nullopt;
  }
}

namespace {

// Copies the typed repeated field of `proto` into `t` element by element.
template <typename Field>
absl::Status CopyField(const Field& field, HostTensor& t, bool bits16) {
  const int64_t n = t.NumElements();
  if (field.size() != n)
    return absl::InvalidArgumentError(absl::StrCat("tensor holds ", field.size(), " values for ", n, " elements"));
  for (int64_t i = 0; i < n; ++i) {
    if (bits16) {
      const uint16_t bits = static_cast<uint16_t>(field.Get(i));
      std::memcpy(t.bytes.data() + 2 * i, &bits, 2);
    } else {
      WriteFromDouble(t.Ref(), i, static_cast<double>(field.Get(i)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto) {
  std::optional<ir::DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype)
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "' has element type ",
                     onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(proto.data_type())),
                     ", which vdev lacks"));
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(), "' keeps its data in an external file"));
  Shape shape;
  for (int64_t d : proto.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(), "' has a negative dimension"));
    shape.push_back(d);
  }
  // The element count must match the data present before anything is allocated (a file that is not
  // a TensorProto can parse as one with absurd dimensions).
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return absl::InvalidArgumentError("tensor dimensions overflow");
  }
  const int64_t present = proto.has_raw_data()
                              ? static_cast<int64_t>(proto.raw_data().size()) / static_cast<int64_t>(DTypeBytes(*dtype))
                              : std::max({proto.float_data_size(), proto.double_data_size(), proto.int64_data_size(),
                                          proto.int32_data_size()});
  if (present != n)
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", proto.name(), "' holds ", present, " values for ", n, " elements"));
  HostTensor t = HostTensor::Zeros(*dtype, shape);
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != t.NumElements() * static_cast<int64_t>(DTypeBytes(*dtype)))
      return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(), "' has ", proto.raw_data().size(),
                                                     " bytes of data for ", t.NumElements(), " elements"));
    // An empty tensor has no bytes to copy (and memcpy may not take its null data pointer).
    if (!proto.raw_data().empty()) std::memcpy(t.bytes.data(), proto.raw_data().data(), proto.raw_data().size());
    return t;
  }
  absl::Status s;
  const bool half = *dtype == ir::DType::kF16 || *dtype == ir::DType::kBF16;
  switch (*dtype) {
    case ir::DType::kF32: s = CopyField(proto.float_data(), t, false); break;
    case ir::DType::kF64: s = CopyField(proto.double_data(), t, false); break;
    case ir::DType::kI64: s = CopyField(proto.int64_data(), t, false); break;
    default: s = CopyField(proto.int32_data(), t, half); break;
  }
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("tensor '", proto.name(), "': ", s.message()));
  return t;
}

int64_t ReadInt(const HostTensor& t, int64_t i) {
  if (t.dtype == ir::DType::kI64) {
    int64_t v;
    std::memcpy(&v, t.bytes.data() + 8 * i, 8);
    return v;
  }
  if (t.dtype == ir::DType::kI32) {
    int32_t v;
    std::memcpy(&v, t.bytes.data() + 4 * i, 4);
    return v;
  }
  const double d = ReadAsDouble(t.Ref(), i);
  if (!(d > -9.2e18 && d < 9.2e18)) return d > 0 ? INT64_MAX : INT64_MIN;
  return static_cast<int64_t>(d);
}

HostTensor IntTensor(const std::vector<int64_t>& values, std::optional<Dims> dims) {
  if (!dims) dims = Dims{static_cast<int64_t>(values.size())};
  HostTensor t = HostTensor::Zeros(ir::DType::kI64, Shape(dims->begin(), dims->end()));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size() * 8);
  return t;
}

}  // namespace internal
}  // namespace vdev::frontend
