// ReadSourceFile and MapSourceFile (vdev/support/source_file.h): fstat, refuse what is not a regular file
// or too large, then read in capped chunks or map the file.
#include "vdev/support/source_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "vdev/support/huge_pages.h"

namespace vdev {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

std::string Errno(absl::string_view what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

// Reads `fd` to its end into *source; the cap is checked before each chunk is read, so an endless
// or oversized input stops at kMaxSourceBytes + 1 bytes read. The buffer is sized once for the
// expected size and a byte more (which tells the end apart from a file that grew since fstat), so a
// regular file is read without regrowth copies; past the hint it grows a chunk at a time. Huge pages
// are asked for first: a million-line text is ~40 MB of fresh pages to fault in.
bool ReadAll(int fd, size_t size_hint, std::string* source, std::string* error) {
  source->clear();
  try {
    source->reserve(std::min(size_hint, kMaxSourceBytes) + 1);
    AdviseHugePages(source->data(), source->capacity());
    source->resize(source->capacity());
    size_t used = 0;
    for (;;) {
      if (used == source->size()) {
        if (used > kMaxSourceBytes) {
          *error = absl::StrCat("larger than ", kMaxSourceBytes, " bytes (the most the parser takes)");
          return false;
        }
        source->resize(used + std::min(kChunkBytes, kMaxSourceBytes + 1 - used));
      }
      ssize_t got = ::read(fd, source->data() + used, source->size() - used);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        *error = Errno("cannot read");
        return false;
      }
      used += static_cast<size_t>(got);
      if (got == 0) {
        source->resize(used);
        return true;
      }
    }
  } catch (const std::bad_alloc&) {  // std::string's only way to say so; it stays in this function
    *error = "not enough memory to read it";
    return false;
  } catch (const std::length_error&) {
    *error = "not enough memory to read it";
    return false;
  }
}

// Opens FILE (not `-`) and checks it is a regular file the parser can take: its descriptor, or -1
// with *error set (*missing when it does not exist).
int OpenProgramFile(const std::string& path, StandardInput stdin_use, struct stat* st, std::string* error,
                    bool* missing) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *missing = errno == ENOENT;
    *error = Errno("cannot open");
    return -1;
  }
  if (::fstat(fd, st) != 0) {
    *error = Errno("cannot read");
  } else if (S_ISDIR(st->st_mode)) {
    *error = "is a directory, not a program file";
  } else if (!S_ISREG(st->st_mode)) {
    *error = absl::StrCat("not a regular file (a FIFO, device or socket)",
                          stdin_use == StandardInput::kAllowed ? "; pass its text on standard input with `-`" : "");
  } else if (static_cast<uint64_t>(st->st_size) > kMaxSourceBytes) {
    *error = absl::StrCat("is ", st->st_size, " bytes, larger than ", kMaxSourceBytes, " (the most the parser takes)");
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

absl::Status Refusal(const std::string& path, const std::string& error, bool missing) {
  const std::string message = absl::StrCat(SourceDisplayName(path), ": error: ", error);
  return missing ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
}

}  // namespace

std::string SourceDisplayName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

absl::StatusOr<std::string> ReadSourceFile(const std::string& path, StandardInput stdin_use) {
  std::string source;
  std::string error;
  bool missing = false;
  if (path == "-" && stdin_use == StandardInput::kRefused) {
    error = "this command needs a program file, not standard input";
  } else if (path == "-") {
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) != 0) {
      error = Errno("cannot read");
    } else if (ReadAll(STDIN_FILENO, S_ISREG(st.st_mode) ? st.st_size : 0, &source, &error)) {
      return source;
    }
  } else {
    struct stat st {};
    if (int fd = OpenProgramFile(path, stdin_use, &st, &error, &missing); fd >= 0) {
      // st_size is a hint only: /proc files report 0 and are read to their end like the rest.
      const bool ok = ReadAll(fd, static_cast<size_t>(st.st_size), &source, &error);
      ::close(fd);
      if (ok) return source;
    }
  }
  return Refusal(path, error, missing);
}

SourceText::SourceText(SourceText&& other) noexcept
    : read_(std::move(other.read_)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SourceText& SourceText::operator=(SourceText&& other) noexcept {
  if (this != &other) {
    Unmap();
    read_ = std::move(other.read_);
    mapped_ = std::exchange(other.mapped_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SourceText::~SourceText() { Unmap(); }

void SourceText::Unmap() {
  if (mapped_ != nullptr) ::munmap(const_cast<char*>(mapped_), size_);
  mapped_ = nullptr;
  size_ = 0;
}

absl::StatusOr<SourceText> MapSourceFile(const std::string& path, StandardInput stdin_use) {
  if (path == "-") {
    absl::StatusOr<std::string> read = ReadSourceFile(path, stdin_use);
    if (!read.ok()) return read.status();
    return SourceText(*std::move(read));
  }
  std::string error;
  bool missing = false;
  struct stat st {};
  const int fd = OpenProgramFile(path, stdin_use, &st, &error, &missing);
  if (fd < 0) return Refusal(path, error, missing);
  SourceText text;
  if (st.st_size > 0) {
    // MAP_POPULATE: the pages are in the page cache after the open; one call maps them all.
    void* mapped = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (mapped != MAP_FAILED) {
      text.mapped_ = static_cast<const char*>(mapped);
      text.size_ = static_cast<size_t>(st.st_size);
      ::close(fd);
      return text;
    }
  }
  // Size 0 (/proc files, empty files) or not mappable: read to the end.
  const bool ok = ReadAll(fd, static_cast<size_t>(st.st_size), &text.read_, &error);
  ::close(fd);
  if (!ok) return Refusal(path, error, missing);
  return text;
}

}  // namespace vdev
