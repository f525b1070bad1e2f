// Rendering of located diagnostics with the source line and a caret.
#include "vdev/support/diagnostic.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace vdev {

SourceLoc LocateOffset(absl::string_view source, size_t offset) {
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    loc.col = source[i] == '\n' ? 1 : loc.col + 1;
    loc.line += source[i] == '\n';
  }
  return loc;
}

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

// At most this many bytes of the offending line are echoed, centred on the column: a 10 MB line
// is shown as a window with `...` on the cut sides.
constexpr int kMaxEchoBytes = 160;

// A control byte (other than tab) as `\xHH`, so echoed input cannot drive the terminal.
bool IsControl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

void AppendEscaped(std::string* out, char c) {
  if (!IsControl(static_cast<unsigned char>(c))) {
    out->push_back(c);
    return;
  }
  char hex[5];
  std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(c));
  out->append(hex, 4);
}

// `message` with its control bytes escaped; newlines stay (multi-line messages are ours, not input).
// A message quoting a huge token keeps its head and tail (where the expectation is said).
std::string EscapeMessage(absl::string_view message) {
  constexpr size_t kHead = 240, kTail = 160;
  std::string out;
  if (message.size() > kHead + kTail + 3) {
    return absl::StrCat(EscapeMessage(message.substr(0, kHead)), "...",
                        EscapeMessage(message.substr(message.size() - kTail)));
  }
  out.reserve(message.size());
  for (char c : message) {
    if (c == '\n') {
      out.push_back(c);
    } else {
      AppendEscaped(&out, c);
    }
  }
  return out;
}

}  // namespace

std::string FormatDiagnostic(absl::string_view file, absl::string_view source, const Diagnostic& diag) {
  const std::string message = EscapeMessage(diag.message);
  if (!diag.loc.valid()) return absl::StrCat(file, ": ", SeverityName(diag.severity), ": ", message, "\n");
  std::string out =
      absl::StrCat(file, ":", diag.loc.line, ":", diag.loc.col, ": ", SeverityName(diag.severity), ": ", message, "\n");
  absl::string_view text = LineOf(source, diag.loc.line);
  if (text.empty() && diag.loc.col != 1) return out;
  // The caret's byte offset in `text`, and the window of `text` echoed around it.
  const size_t caret = std::min<size_t>(static_cast<size_t>(diag.loc.col) - 1, text.size());
  size_t begin = caret > kMaxEchoBytes / 2 ? caret - kMaxEchoBytes / 2 : 0;
  size_t end = std::min(text.size(), begin + kMaxEchoBytes);
  std::string shown = begin > 0 ? "..." : "";
  std::string pad(shown.size(), ' ');
  for (size_t i = begin; i < end; ++i) {
    const size_t before = shown.size();
    AppendEscaped(&shown, text[i]);
    // Keep tabs so the caret lines up under the same glyphs; an escape takes four columns.
    if (i < caret) pad.append(text[i] == '\t' ? std::string("\t") : std::string(shown.size() - before, ' '));
  }
  if (end < text.size()) shown += "...";
  absl::StrAppend(&out, "  ", shown, "\n  ", pad, "^\n");
  return out;
}

}  // namespace vdev
