// The staging area of large copies (see internal/staging.h).
#include "internal/staging.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vdev::internal {

Staging::~Staging() {
  if (base_ != nullptr) munmap(base_, mapped_);
  if (fd_ >= 0) close(fd_);
}

char* Staging::Map(size_t bytes) {
  if (bytes <= mapped_) return base_;
  struct stat st;
  if (fstat(fd_, &st) != 0) return nullptr;
  if (static_cast<size_t>(st.st_size) < bytes && ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return nullptr;
  if (base_ != nullptr) munmap(base_, mapped_);
  base_ = nullptr;
  mapped_ = 0;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return nullptr;
  base_ = static_cast<char*>(p);
  mapped_ = bytes;
  return base_;
}

}  // namespace vdev::internal
