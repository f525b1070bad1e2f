// The controller's encoding of Values (internal/value_codec.h).
#include "internal/value_codec.h"

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {

absl::Status CheckShape(const Shape& shape) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 56)) {
      return absl::InvalidArgumentError(absl::StrCat("a shape needs dims >= 0 and fewer than 2^56 elements"));
    }
  }
  return absl::OkStatus();
}

absl::Status EncodeValue(const Value& value, Encoder* out) {
  return std::visit(
      [&](const auto& v) -> absl::Status {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, DRef>) {
          if (!v.valid()) return absl::InvalidArgumentError("a null DRef cannot be passed");
          out->U8(static_cast<uint8_t>(ValueTag::kRegister));
          out->U64(static_cast<uint64_t>(v.reg_id()));
        } else {
          if constexpr (std::is_same_v<T, Shape>) VDEV_RETURN_IF_ERROR(CheckShape(v));
          if constexpr (std::is_same_v<T, HostTensor>) {
            VDEV_RETURN_IF_ERROR(CheckShape(v.shape));
            if (v.bytes.size() != static_cast<size_t>(v.NumElements()) * DTypeBytes(v.dtype)) {
              return absl::InvalidArgumentError("a host tensor's bytes do not match its shape and dtype");
            }
          }
          out->Tagged(v);
        }
        return absl::OkStatus();
      },
      value.v);
}

absl::StatusOr<Value> DecodeValue(Decoder& in) {
  uint8_t tag = 0;
  if (!in.U8(&tag)) return absl::DataLossError("malformed value from a worker");
  switch (static_cast<ValueTag>(tag)) {
    case ValueTag::kNone: return Value();
    case ValueTag::kInt: {
      int64_t v = 0;
      if (in.I64(&v)) return Value(v);
      break;
    }
    case ValueTag::kFloat: {
      double v = 0;
      if (in.F64(&v)) return Value(v);
      break;
    }
    case ValueTag::kString: {
      std::string v;
      if (in.Str(&v)) return Value(std::move(v));
      break;
    }
    case ValueTag::kShape: {
      Shape v;
      if (in.ShapeOf(&v)) return Value(std::move(v));
      break;
    }
    case ValueTag::kTensor: {
      HostTensor v;
      if (in.Tensor(&v)) return Value(std::move(v));
      break;
    }
    case ValueTag::kObject: {
      std::string type;
      if (in.Str(&type)) {
        return absl::UnimplementedError(absl::StrCat("the register holds a ", type, ", which cannot leave its worker"));
      }
      break;
    }
    case ValueTag::kRegister: break;
  }
  return absl::DataLossError("malformed value from a worker");
}

}  // namespace vdev::internal
