// Frames of the process back end's sockets: [length u64][message], cut out of a byte stream.
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_FRAME_READER_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_FRAME_READER_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/string_view.h"

namespace vdev::internal {

// The largest frame either side sends or accepts. A length beyond it is a corrupted stream (or a
// message no session should carry through a socket), refused before anything is allocated for it.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 36;

// Accumulates bytes from a socket and cuts them into frames. The buffer only grows (doubling), so
// a large frame arriving in many reads costs one allocation, not one per read.
class FrameReader {
 public:
  // True when a whole frame is buffered; `*message` then points into the buffer and stays valid
  // until the next Fill.
  bool Next(absl::string_view* message) {
    if (end_ - start_ < sizeof(uint64_t)) return false;
    uint64_t length = 0;
    std::memcpy(&length, buffer_.data() + start_, sizeof length);
    if (end_ - start_ - sizeof length < length) return false;
    *message = absl::string_view(buffer_.data() + start_ + sizeof length, length);
    start_ += sizeof length + length;
    return true;
  }
  // Reads what the socket has (at least one byte unless it would block): >0 bytes, 0 at end of
  // file, <0 on error (errno set; EAGAIN when nothing was there; EMSGSIZE when the frame being
  // received says it is longer than kMaxFrameBytes).
  ssize_t Fill(int fd, int flags) {
    // Frames already handed out are dropped; a partial one moves to the front.
    if (start_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    size_t want = size_t{1} << 16;
    if (end_ >= sizeof(uint64_t)) {  // room for the whole of a large frame
      uint64_t length = 0;
      std::memcpy(&length, buffer_.data(), sizeof length);
      if (length > kMaxFrameBytes) {
        errno = EMSGSIZE;
        return -1;
      }
      if (sizeof length + length > end_) want = std::max<size_t>(want, sizeof length + length - end_);
    }
    if (buffer_.size() - end_ < want) buffer_.resize(std::max(end_ + want, 2 * buffer_.size()));
    ssize_t n;
    do {
      n = recv(fd, buffer_.data() + end_, buffer_.size() - end_, flags);
    } while (n < 0 && errno == EINTR);
    if (n > 0) end_ += static_cast<size_t>(n);
    return n;
  }

 private:
  std::vector<char> buffer_;
  size_t start_ = 0;  // first byte not yet handed out
  size_t end_ = 0;    // bytes received
};

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_FRAME_READER_H_
