// Tokenizer of the IR text (docs/spec/ir-text.md), one token of lookahead, no allocation.
#ifndef VDEV_SRC_PLANNER_LEXER_H_
#define VDEV_SRC_PLANNER_LEXER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "vdev/support/diagnostic.h"

namespace vdev::ir::internal {

enum class Tok : uint8_t {
  kEnd,
  kLocal,   // %name   (text = name without '%')
  kGlobal,  // @name   (text = name without '@')
  kIdent,   // add, nn.conv2d, f32, cuda   ([A-Za-z_][A-Za-z0-9_.]*)
  kNumber,  // 3, -2.5, 1e-3
  kString,  // "…" with its quotes
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kEquals,
  kColon,
  kDot,
  kArrow,
  kQuestion,
  kStar,
  kSlash,
  kError,  // text = message; loc = where
};

struct Token {
  Tok kind = Tok::kEnd;
  absl::string_view text;
  uint32_t offset = 0;  // byte offset of the token's first character (the sigil for %/@ names)
  uint32_t end = 0;     // byte offset just past the token
  SourceLoc loc;
};

class Lexer {
 public:
  explicit Lexer(absl::string_view src) : src_(src) {}

  // The next token, read in place in the lookahead: a Token is 40 bytes, and the parser peeks at
  // most tokens only to dispatch on them. The reference stays valid, across a Skip() too, until the
  // next Peek(), Skip() or Next().
  const Token& Peek() {
    if (!has_peek_) {
      Lex(&peek_);
      has_peek_ = true;
    }
    return peek_;
  }
  // Consumes the next token, for callers that need no copy of it.
  void Skip() {
    Peek();
    has_peek_ = false;
    last_line_ = peek_.loc.line;
  }
  // Consumes the next token and returns it, for callers that keep it while reading on.
  Token Next() {
    // One named result (NRVO): without a lookahead the token is lexed into the caller's object.
    Token t;
    if (has_peek_) {
      t = peek_;
      has_peek_ = false;
    } else {
      Lex(&t);
    }
    last_line_ = t.loc.line;
    return t;
  }
  // The line of the last token consumed by Skip() or Next().
  int last_line() const { return last_line_; }
  absl::string_view source() const { return src_; }
  // Location of a byte offset at or after the start of token `anchor` (device literal errors).
  SourceLoc LocAfter(const Token& anchor, uint32_t offset) const;
  // Continues lexing at `offset` >= anchor.offset (after text consumed by another parser, e.g. a
  // device literal, or to re-read a token); drops the lookahead.
  void ResetTo(const Token& anchor, uint32_t offset);
  // Whether the character right after a token (no whitespace between) is `c`.
  bool FollowedBy(const Token& t, char c) const { return t.end < src_.size() && src_[t.end] == c; }

 private:
  void Lex(Token* out);
  void Make(Token* t, Tok kind, size_t start, size_t end, size_t text_start, size_t text_len) const;
  void Error(Token* t, size_t at, std::string_view message) const;

  absl::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  Token peek_;
  bool has_peek_ = false;
  int last_line_ = 0;
};

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_PLANNER_LEXER_H_
