// Reading a program's text from a file or standard input, with clean refusals.
//
// A program file must be a regular file (or standard input, `-`) of at most kMaxSourceBytes. The
// size is taken with fstat before anything is read and the text is read in chunks to its end, so
// a directory, FIFO or device (`/dev/zero`), a file that cannot be opened or read, and one too
// large are each refused with a one-line message instead of an allocation failure, a hang or an
// endless read; `/proc` files (which report size 0) are read like the rest. Every command that
// takes a program FILE reads it through here (`vdev fmt/parse/plan/lower/run`).
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

#include "absl/status/statusor.h"

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

}  // namespace vdev

#endif  // VDEV_SOURCE_FILE_H_
