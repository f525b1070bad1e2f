// Reading a program's text from a file or standard input, with clean refusals.
//
// A program file must be a regular file (or standard input, `-`) of at most kMaxSourceBytes. The
// size is taken with fstat before anything is read and the text is read in chunks to its end, so
// a directory, FIFO or device (`/dev/zero`), a file that cannot be opened or read, and one too
// large are each refused with a one-line message instead of an allocation failure, a hang or an
// endless read; `/proc` files (which report size 0) are read like the rest. Every command that
// takes a program FILE reads it through here (`vdev fmt/parse/plan/lower/run`).
//
// MapSourceFile gives the same text without copying a regular file: the file is mapped read-only, so
// its pages come from the page cache instead of fresh memory the kernel must zero (a million-line
// program is ~40 MB of text). Like any mapped input, the file must not be truncated while mapped.
//
// Example:
//   absl::StatusOr<std::string> text = vdev::ReadSourceFile(path);
//   if (!text.ok()) { std::cerr << text.status().message() << "\n"; return 2; }
//   // message: "prog.vdev: error: is a directory, not a program file"
#ifndef VDEV_SOURCE_FILE_H_
#define VDEV_SOURCE_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vdev {

// The largest program text read: the parser takes less than 4 GiB.
inline constexpr size_t kMaxSourceBytes = size_t{UINT32_MAX} - 1;

// How FILE is named in messages: `<stdin>` for `-`.
std::string SourceDisplayName(const std::string& path);

// Whether FILE may be `-`: not for a command whose workers each read FILE again (`vdev run`).
enum class StandardInput { kAllowed, kRefused };

// The text of FILE (`-`: standard input, which may be anything readable). Errors are
// InvalidArgument (NotFound for a file that cannot be opened because it does not exist) with the
// message "<FILE>: error: <what>", one line.
absl::StatusOr<std::string> ReadSourceFile(const std::string& path, StandardInput stdin_use = StandardInput::kAllowed);

// A program text that is either a read-only mapping of a regular file or a string read from a
// stream. Move-only; the text lives as long as the object.
class SourceText {
 public:
  SourceText() = default;
  explicit SourceText(std::string read) : read_(std::move(read)) {}
  SourceText(SourceText&& other) noexcept;
  SourceText& operator=(SourceText&& other) noexcept;
  SourceText(const SourceText&) = delete;
  SourceText& operator=(const SourceText&) = delete;
  ~SourceText();

  absl::string_view view() const { return mapped_ != nullptr ? absl::string_view(mapped_, size_) : read_; }
  operator absl::string_view() const { return view(); }  // NOLINT: a text wherever a view is taken

 private:
  friend absl::StatusOr<SourceText> MapSourceFile(const std::string& path, StandardInput stdin_use);
  void Unmap();

  std::string read_;
  const char* mapped_ = nullptr;
  size_t size_ = 0;
};

// The text of FILE as ReadSourceFile reads it (same refusals and messages), a non-empty regular file
// mapped instead of copied; standard input, /proc files and files that cannot be mapped are read.
absl::StatusOr<SourceText> MapSourceFile(const std::string& path, StandardInput stdin_use = StandardInput::kAllowed);

}  // namespace vdev

#endif  // VDEV_SOURCE_FILE_H_
