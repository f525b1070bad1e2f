// Located diagnostics: the FILE:LINE:COL form with the source line and a caret.
#include "vdev/support/diagnostic.h"

#include <string>

#include "gtest/gtest.h"

namespace vdev {
namespace {

TEST(DiagnosticTest, PrintsLocationLineAndCaret) {
  Diagnostic diag{Severity::kError, SourceLoc{2, 5}, "undefined name %x"};
  EXPECT_EQ(FormatDiagnostic("a.vdev", "line one\n  %y = %x\n", diag),
            "a.vdev:2:5: error: undefined name %x\n    %y = %x\n      ^\n");
}

TEST(DiagnosticTest, WarningsSayWarning) {
  Diagnostic diag{Severity::kWarning, SourceLoc{1, 1}, "copy"};
  EXPECT_EQ(FormatDiagnostic("f", "abc", diag), "f:1:1: warning: copy\n  abc\n  ^\n");
}

TEST(DiagnosticTest, WithoutLocationOnlyTheMessage) {
  EXPECT_EQ(FormatDiagnostic("f", "abc", Diagnostic{Severity::kError, SourceLoc{}, "bad"}), "f: error: bad\n");
}

TEST(DiagnosticTest, CaretPastTheEndStaysAtTheEnd) {
  Diagnostic diag{Severity::kError, SourceLoc{1, 50}, "eof"};
  EXPECT_EQ(FormatDiagnostic("f", "ab", diag), "f:1:50: error: eof\n  ab\n    ^\n");
}

TEST(DiagnosticTest, ControlBytesAreEscapedAndTheCaretFollows) {
  Diagnostic diag{Severity::kError, SourceLoc{1, 3}, "bad \x1b[2J"};
  EXPECT_EQ(FormatDiagnostic("f", "\x1b\x07x", diag), "f:1:3: error: bad \\x1b[2J\n  \\x1b\\x07x\n          ^\n");
}

TEST(DiagnosticTest, LongLineIsShownAsAWindowAroundTheColumn) {
  std::string line(1000000, 'a');
  line[500000] = 'B';
  std::string out = FormatDiagnostic("f", line, Diagnostic{Severity::kError, SourceLoc{1, 500001}, "here"});
  EXPECT_LT(out.size(), 500u);
  size_t shown = out.find("\n  ") + 3;
  size_t caret_line = out.find('\n', shown) + 1;
  size_t caret = out.find('^', caret_line) - caret_line;
  EXPECT_EQ(out[shown + caret - 2], 'B');  // both lines start with two spaces
  EXPECT_EQ(out.substr(shown, 3), "...");
}

TEST(DiagnosticTest, HugeMessageKeepsItsHeadAndTail) {
  std::string message = "unknown '" + std::string(1000000, 'x') + "' (expected cpu)";
  std::string out = FormatDiagnostic("f", "", Diagnostic{Severity::kError, SourceLoc{}, message});
  EXPECT_LT(out.size(), 500u);
  EXPECT_EQ(out.substr(0, 21), "f: error: unknown 'xx");
  EXPECT_EQ(out.substr(out.size() - 17), "' (expected cpu)\n");
}

}  // namespace
}  // namespace vdev
