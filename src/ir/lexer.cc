// Tokenizer of the IR text.
#include "internal/lexer.h"

#include <array>
#include <utility>

namespace vdev::ir::internal {
namespace {

// Character classes by table: a name is one load and test a byte instead of five compares (the
// name loops were over a quarter of the lexer's instructions on a million-binding file).
enum : uint8_t { kBlank = 1, kAlpha = 2, kDigit = 4 };
constexpr std::array<uint8_t, 256> kClass = [] {
  std::array<uint8_t, 256> t{};
  t[' '] = t['\t'] = t['\r'] = kBlank;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kAlpha;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kAlpha;
  t['_'] = kAlpha;
  for (int c = '0'; c <= '9'; ++c) t[c] = kDigit;
  return t;
}();
bool Is(char c, uint8_t classes) { return (kClass[static_cast<unsigned char>(c)] & classes) != 0; }
bool IsAlpha(char c) { return Is(c, kAlpha); }
bool IsDigit(char c) { return Is(c, kDigit); }
bool IsNameChar(char c) { return Is(c, kAlpha | kDigit); }

// The one-character tokens; kEnd for every other byte.
constexpr std::array<Tok, 256> kSingle = [] {
  constexpr std::pair<char, Tok> kTokens[] = {
      {'(', Tok::kLParen},   {')', Tok::kRParen}, {'{', Tok::kLBrace}, {'}', Tok::kRBrace}, {'[', Tok::kLBracket},
      {']', Tok::kRBracket}, {',', Tok::kComma},  {'=', Tok::kEquals}, {':', Tok::kColon},  {'.', Tok::kDot},
      {'?', Tok::kQuestion}, {'*', Tok::kStar},   {'/', Tok::kSlash}};
  std::array<Tok, 256> t{};
  for (auto [c, kind] : kTokens) t[static_cast<unsigned char>(c)] = kind;
  return t;
}();

// Static messages only, so that an error token's text needs no storage.
constexpr std::string_view kBadNameMsg = "expected a name ([A-Za-z0-9_]+) after the sigil";
constexpr std::string_view kBadCharMsg = "unexpected character";
constexpr std::string_view kBadNumberMsg = "malformed number";
constexpr std::string_view kUnterminatedMsg = "unterminated string";

}  // namespace

// Inline (out of line it was a sixth of the lexer's instructions): Lex calls it once a token.
inline void Lexer::Make(Token* t, Tok kind, size_t start, size_t end, size_t text_start, size_t text_len) const {
  t->kind = kind;
  t->offset = static_cast<uint32_t>(start);
  t->end = static_cast<uint32_t>(end);
  t->text = absl::string_view(src_.data() + text_start, text_len);
  t->loc = {line_, static_cast<int>(start - line_start_) + 1};
}

void Lexer::Error(Token* t, size_t at, std::string_view message) const {
  t->kind = Tok::kError;
  t->offset = static_cast<uint32_t>(at);
  t->end = t->offset;
  t->text = absl::string_view(message.data(), message.size());
  t->loc = {line_, static_cast<int>(at - line_start_) + 1};
}

SourceLoc Lexer::LocAfter(const Token& anchor, uint32_t offset) const {
  int line = anchor.loc.line;
  size_t line_start = anchor.offset - (anchor.loc.col - 1);
  for (size_t i = anchor.offset; i < offset && i < src_.size(); ++i) {
    if (src_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<int>(offset - line_start) + 1};
}

void Lexer::ResetTo(const Token& anchor, uint32_t offset) {
  SourceLoc loc = LocAfter(anchor, offset);
  line_ = loc.line;
  line_start_ = offset - (loc.col - 1);
  pos_ = offset;
  has_peek_ = false;
  last_line_ = loc.line;
}

void Lexer::Lex(Token* out) {
  const size_t n = src_.size();
  // Skip whitespace and comments.
  while (pos_ < n) {
    char c = src_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (Is(c, kBlank)) {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < n && src_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
  if (pos_ >= n) return Make(out, Tok::kEnd, pos_, pos_, pos_, 0);
  // Every other token ends in the one Make call below: inlined once, not once per kind of token.
  const size_t start = pos_;
  size_t end = start + 1;     // just past the token
  size_t text_start = start;  // past the sigil of a name
  Tok kind;
  const char c = src_[start];
  if (const Tok single = kSingle[static_cast<unsigned char>(c)]; single != Tok::kEnd) {
    kind = single;
  } else if (c == '%' || c == '@') {
    while (end < n && IsNameChar(src_[end])) ++end;
    if (end == start + 1) return Error(out, start + 1, kBadNameMsg);
    kind = c == '%' ? Tok::kLocal : Tok::kGlobal;
    text_start = start + 1;
  } else if (c == '"') {
    size_t p = start + 1;
    while (p < n && src_[p] != '"' && src_[p] != '\n') {
      if (src_[p] == '\\' && p + 1 < n && src_[p + 1] != '\n') ++p;
      ++p;
    }
    if (p >= n || src_[p] != '"') return Error(out, start, kUnterminatedMsg);
    kind = Tok::kString;
    end = p + 1;
  } else if (c == '-' && start + 1 < n && src_[start + 1] == '>') {
    kind = Tok::kArrow;
    end = start + 2;
  } else if (IsDigit(c) || (c == '-' && start + 1 < n && IsDigit(src_[start + 1]))) {
    size_t p = start + 1;
    while (p < n && IsDigit(src_[p])) ++p;
    if (p + 1 < n && src_[p] == '.' && IsDigit(src_[p + 1])) {
      p += 2;
      while (p < n && IsDigit(src_[p])) ++p;
    }
    if (p < n && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < n && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q >= n || !IsDigit(src_[q])) return Error(out, p, kBadNumberMsg);
      while (q < n && IsDigit(src_[q])) ++q;
      p = q;
    }
    if (p < n && IsAlpha(src_[p])) return Error(out, p, kBadNumberMsg);
    kind = Tok::kNumber;
    end = p;
  } else if (IsAlpha(c)) {
    // Dots join identifier parts (nn.conv2d) only when a letter follows.
    while (end < n && (IsNameChar(src_[end]) || (src_[end] == '.' && end + 1 < n && IsAlpha(src_[end + 1])))) {
      ++end;
    }
    kind = Tok::kIdent;
  } else {
    return Error(out, start, kBadCharMsg);
  }
  pos_ = end;
  Make(out, kind, start, end, text_start, end - text_start);
}

}  // namespace vdev::ir::internal
