// Located error messages in the `FILE:LINE:COL: error: message` form of docs/spec/cli.md.
#ifndef VDEV_DIAGNOSTIC_H_
#define VDEV_DIAGNOSTIC_H_

#include <string>
#include "absl/strings/string_view.h"

namespace vdev {

// A position in a source text; line and column count from 1, columns in bytes.
struct SourceLoc {
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

// The line and column of byte `offset` (0-based) of `source`; past the end, those of its end.
SourceLoc LocateOffset(absl::string_view source, size_t offset);

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLoc loc;
  std::string message;
};

// Renders `file:line:col: error: message`, then the offending line of `source` and a caret under
// the column. Without a valid location only `file: error: message` is printed.
std::string FormatDiagnostic(absl::string_view file, absl::string_view source, const Diagnostic& diag);

}  // namespace vdev

#endif  // VDEV_DIAGNOSTIC_H_
