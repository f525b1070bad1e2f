// Rendering of located diagnostics with the source line and a caret.
#include "vdev/diagnostic.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vdev {
namespace {

absl::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
  }
  return "error";
}

// The text of 1-based line `line` of `source`, without its newline; empty when out of range.
absl::string_view LineOf(absl::string_view source, int line) {
  size_t start = 0;
  for (int i = 1; i < line; ++i) {
    size_t nl = source.find('\n', start);
    if (nl == absl::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = source.find('\n', start);
  return source.substr(start, end == absl::string_view::npos ? absl::string_view::npos : end - start);
}

}  // namespace

std::string FormatDiagnostic(absl::string_view file, absl::string_view source, const Diagnostic& diag) {
  if (!diag.loc.valid()) return absl::StrCat(file, ": ", SeverityName(diag.severity), ": ", diag.message, "\n");
  std::string out = absl::StrCat(file, ":", diag.loc.line, ":", diag.loc.col, ": ", SeverityName(diag.severity),
                                 ": ", diag.message, "\n");
  absl::string_view text = LineOf(source, diag.loc.line);
  if (!text.empty() || diag.loc.col == 1) {
    absl::StrAppend(&out, "  ", text, "\n  ");
    // Keep tabs so the caret lines up under the same glyphs.
    int col = std::min<int>(diag.loc.col, static_cast<int>(text.size()) + 1);
    for (int i = 0; i + 1 < col; ++i) out.push_back(text[i] == '\t' ? '\t' : ' ');
    out += "^\n";
  }
  return out;
}

}  // namespace vdev
