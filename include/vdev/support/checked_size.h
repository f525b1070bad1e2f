// Size arithmetic that reports overflow instead of wrapping around.
//
// Byte counts in the runtime come from callers (an element count times an element size, an offset
// plus a length, a length read from a pipe). Computed in plain `size_t` arithmetic they wrap
// silently: 2^62 + 1000 f32 elements make 4000 bytes, and a later memcpy of "4000 bytes" walks far
// past every buffer. These helpers compute the exact result or say that there is none, so a caller
// turns the overflow into an error before anything is allocated or copied.
//
// Example:
//   VDEV_ASSIGN_OR_RETURN(size_t bytes, vdev::CheckedBytes(count, 4, "all-reduce input"));
//   std::optional<size_t> end = vdev::CheckedAdd(offset, bytes);
//   if (!end || *end > capacity) return absl::InvalidArgumentError("does not fit");
#ifndef VDEV_CHECKED_SIZE_H_
#define VDEV_CHECKED_SIZE_H_

#include <cstddef>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace vdev {

// a * b, or nullopt when the product does not fit in size_t.
[[nodiscard]] inline std::optional<size_t> CheckedMul(size_t a, size_t b) {
  size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b, or nullopt when the sum does not fit in size_t.
[[nodiscard]] inline std::optional<size_t> CheckedAdd(size_t a, size_t b) {
  size_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// v rounded up to a multiple of `to` (> 0), or nullopt when that multiple does not fit in size_t.
[[nodiscard]] inline std::optional<size_t> CheckedRoundUp(size_t v, size_t to) {
  const std::optional<size_t> padded = CheckedAdd(v, to - 1);
  if (!padded) return std::nullopt;
  return *padded / to * to;
}

// The bytes of `count` elements of `element_bytes` each, or InvalidArgument naming `what`:
// "<what>: <count> elements of <element_bytes> bytes overflow a 64-bit size".
[[nodiscard]] inline absl::StatusOr<size_t> CheckedBytes(size_t count, size_t element_bytes, absl::string_view what) {
  if (std::optional<size_t> bytes = CheckedMul(count, element_bytes)) return *bytes;
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", count, " elements of ", element_bytes, " bytes overflow a 64-bit size"));
}

}  // namespace vdev

#endif  // VDEV_CHECKED_SIZE_H_
