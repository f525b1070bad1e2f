// Located diagnostics: the FILE:LINE:COL form with the source line and a caret.
#include "vdev/diagnostic.h"

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

}  // namespace
}  // namespace vdev
