// A shared-memory file (memfd) that a process session's controller and worker 0 both map, so that
// large copies cross in two memcpys instead of through the socket in ~200 KB pieces.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_STAGING_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_STAGING_H_

#include <cstddef>

namespace vdev::internal {

// Tensors of at least this many bytes go through the staging area.
inline constexpr size_t kStagedCopyBytes = size_t{64} << 10;

class Staging {
 public:
  explicit Staging(int fd) : fd_(fd) {}  // takes the descriptor
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  int fd() const { return fd_; }
  // The first `bytes` of the file, mapped (the file grows to that size first); null on failure.
  // Valid until the next Map.
  char* Map(size_t bytes);

 private:
  int fd_;
  char* base_ = nullptr;
  size_t mapped_ = 0;
};

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_STAGING_H_
