// The controller's encoding of Values into commands and decoding of workers' replies.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_VALUE_CODEC_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_VALUE_CODEC_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "internal/protocol.h"
#include "vdev/controller/controller.h"

namespace vdev::internal {

// Dims non-negative and a product that fits (what a worker accepts).
absl::Status CheckShape(const Shape& shape);
// A call argument or register value into a command; a null DRef or a malformed tensor is refused.
absl::Status EncodeValue(const Value& value, Encoder* out);
// A worker's reply; DataLoss when it is malformed, Unimplemented for an object that cannot leave its worker.
absl::StatusOr<Value> DecodeValue(Decoder& in);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_VALUE_CODEC_H_
