// The text form of the IR (docs/spec/ir-text.md): parser, canonical printer, verifier.
//
//   absl::StatusOr<ir::Module> m = ir::ParseModule(text, &diag);   // parse + resolve names
//   absl::Status s = ir::VerifyModule(*m, &diag);                  // structure, arities, types
//   std::string canonical = ir::PrintModule(*m);                    // print(parse(x)) fixed point
//
// Errors carry a Diagnostic (line, column, message); FormatDiagnostic renders the CLI form. None of
// these functions recurse with the input's nesting depth.
#ifndef VDEV_IR_TEXT_H_
#define VDEV_IR_TEXT_H_

#include <iosfwd>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/support/diagnostic.h"

namespace vdev::ir {

class OpRegistry;

// Parses a whole module and resolves every %name and @name. On failure returns InvalidArgument
// whose message is "LINE:COL: message", and fills *error when given. Comments are not kept.
absl::StatusOr<Module> ParseModule(absl::string_view text, Diagnostic* error = nullptr);

// Checks what the parser cannot or a builder may get wrong: every local used is defined before use
// in a visible scope, names unique per function, every block ends in return, built-in op arities and
// required attributes, @names resolved. Then infers types (InferTypes) and checks written types.
absl::Status VerifyModule(Module& module, Diagnostic* error = nullptr);
absl::Status VerifyModule(Module& module, const OpRegistry& registry, Diagnostic* error = nullptr);

struct PrintOptions {
  // Also write the inferred type of every binding whose type is known but not written
  // (`vdev parse`); the output is still valid input.
  bool inferred_types = false;
};

// The canonical text: config first, then items in order separated by blank lines, two-space
// indentation per block level (capped, see docs/ir.md), written types and devices only.
std::string PrintModule(const Module& module, const PrintOptions& options = {});
// The same text written to `out` as it is printed, never held whole (a million-binding program's
// text is tens of MB).
void PrintModule(const Module& module, std::ostream& out, const PrintOptions& options = {});
// One operand as written: `%x`, `@f`, `2.5`, `[1, 2]`, `cuda:0`, `sum`, `true`, `"s"`.
std::string PrintOperand(const Module& module, const Operand& operand);
// A binding's right-hand side; for `if` and `fn` only the header up to `{`.
std::string PrintExprHead(const Module& module, const Expr& expr);

}  // namespace vdev::ir

#endif  // VDEV_IR_TEXT_H_
