// Status propagation helpers (Debian's Abseil 20220623 ships none).
//
// VDEV_RETURN_IF_ERROR(expr): returns expr's status from the enclosing function when it is not OK.
// VDEV_ASSIGN_OR_RETURN(lhs, expr): evaluates an absl::StatusOr, returns its status on failure,
// otherwise moves its value into lhs (which may be a declaration such as `auto x`).
#ifndef VDEV_STATUS_MACROS_H_
#define VDEV_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define VDEV_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::absl::Status vdev_status_ = (expr);        \
    if (!vdev_status_.ok()) return vdev_status_; \
  } while (false)

#define VDEV_STATUS_CONCAT_INNER_(a, b) a##b
#define VDEV_STATUS_CONCAT_(a, b) VDEV_STATUS_CONCAT_INNER_(a, b)

#define VDEV_ASSIGN_OR_RETURN(lhs, expr) \
  VDEV_ASSIGN_OR_RETURN_IMPL_(VDEV_STATUS_CONCAT_(vdev_statusor_, __LINE__), lhs, expr)

#define VDEV_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // VDEV_STATUS_MACROS_H_
