// The IR text parser's state and grammar (parser.cc: modules, configs, functions and name
// resolution; parser_types.cc: types; parser_blocks.cc: blocks, bindings, expressions, atoms and
// device literals). One pass, names resolved on the fly, explicit stacks for nested blocks and
// types so that no input depth reaches the C++ stack.
#ifndef VDEV_SRC_IR_INTERNAL_PARSER_H_
#define VDEV_SRC_IR_INTERNAL_PARSER_H_

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "lexer.h"
#include "scope.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_text.h"

namespace vdev::ir::internal {

// "LINE:COL", as messages quote an earlier location.
std::string LocText(SourceLoc loc);

class Parser {
 public:
  explicit Parser(absl::string_view text) : lex_(text) {}

  bool Run();

  Module module;
  Diagnostic error;

 private:
  enum class FrameKind : uint8_t { kFunctionBody, kIfThen, kIfElse };
  // An open block: what closes it and the name-scope mark to unwind to.
  struct Frame {
    FrameKind kind;
    BlockId block;
    BindingId binding;  // the `if`/`fn` binding; kNoBinding for a `def` body
    size_t visible_mark;
    size_t bindings_mark;  // where the block's bindings start in open_bindings_
  };
  // --- Errors ---
  bool Fail(SourceLoc loc, std::string message) {
    if (!failed_) {
      failed_ = true;
      error.severity = Severity::kError;
      error.loc = loc;
      error.message = std::move(message);
    }
    return false;
  }
  std::string Describe(const Token& t) const {
    if (t.kind == Tok::kEnd) return "end of input";
    absl::string_view text = lex_.source().substr(t.offset, std::min<size_t>(t.end - t.offset, 32));
    return absl::StrCat("'", text, "'");
  }
  bool Unexpected(const Token& t, absl::string_view expected) {
    if (t.kind == Tok::kError) return Fail(t.loc, std::string(t.text));
    return Fail(t.loc, absl::StrCat("expected ", expected, ", found ", Describe(t)));
  }
  bool Expect(Tok kind, absl::string_view expected, Token* out = nullptr) {
    const Token& t = lex_.Peek();
    if (t.kind != kind) return Unexpected(t, expected);
    if (out != nullptr) *out = t;
    lex_.Skip();
    return true;
  }
  bool PeekIs(Tok kind) { return lex_.Peek().kind == kind; }
  bool PeekIdent(absl::string_view word) {
    const Token& t = lex_.Peek();
    return t.kind == Tok::kIdent && t.text == word;
  }

  // --- Names ---
  bool Define(Symbol s, ValueRef v, SourceLoc loc);
  bool Resolve(const Token& t, Operand* out);

  // --- Grammar ---
  bool ParseConfig();
  bool ParseKernel();
  bool ParseDef();
  bool DeclareGlobal(FuncKind kind, FuncId* out);
  bool ParseParams(FuncId f);
  bool ParseResult(FuncId f);
  bool ParseType(TypeId* out);
  // `[d, ...]` of a tensor type, into dims_.
  bool ParseTensorDims();
  // Hands the finished type *leaf to the enclosing tuple or function types, closing each that it
  // completes, until one expects another item (*done stays false) or the type ParseType began at
  // frame_base is complete (*done, the type in *leaf). False on a syntax error.
  bool CloseTypes(size_t frame_base, TypeId* leaf, bool* done);
  bool ParseDevice(const Token& first, DeviceId* out);
  bool ParseDeviceOperand(const Token& first, Operand* out) {
    out->kind = OperandKind::kDevice;
    out->loc = first.loc;
    return ParseDevice(first, &out->index);
  }
  bool ParseAtomFrom(const Token& t, Operand* out);
  bool ParseAtom(Operand* out) {
    const Token& t = lex_.Peek();
    lex_.Skip();
    return ParseAtomFrom(t, out);
  }
  bool ParseInt(const Token& t, int64_t* out) {
    absl::string_view s = t.text;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    if (ec != std::errc() || ptr != s.data() + s.size())
      return Fail(t.loc, absl::StrCat("expected an integer, found ", Describe(t)));
    return true;
  }
  bool ParseAttrValue(Operand* out);
  bool ParseBlocks();
  bool ParseBinding();
  bool ParseOpCall(Expr* e);
  bool ParseSimpleExpr(Expr* e);
  bool ParseOpArgs(Expr* e);
  bool ParseAtomArgs(Expr* e, uint32_t begin);
  bool ParseReturn();
  bool FinishBinding(BindingId b);
  BlockId NewBlock(FuncId f, BindingId owner, SourceLoc loc);
  bool ResolveGlobals();

  Lexer lex_;
  bool failed_ = false;
  std::vector<Frame> frames_;
  // The bindings of the open blocks, innermost last (blocks nest, so each one's are a suffix): a
  // block's list is copied out at its `return`, exactly sized, instead of growing by doubling.
  std::vector<BindingId> open_bindings_;
  internal::Scopes scopes_;
  // ParseType's explicit stack.
  struct TypeFrame {
    uint8_t kind;  // 0 tuple fields, 1 fn params, 2 fn result
    uint32_t base;
  };
  std::vector<TypeFrame> type_frames_;
  std::vector<TypeId> type_items_;
  std::vector<int64_t> dims_;
  // ParseDevice's cache of the literals it parsed last.
  struct RecentDevice {
    absl::string_view spelling;  // in the source: the literal and the byte that ended it
    DeviceId device = kNoDevice;
  };
  std::array<RecentDevice, 4> recent_devices_;
  size_t next_recent_device_ = 0;
};

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_IR_INTERNAL_PARSER_H_
