// Tokenizer of the IR text.
#include "lexer.h"

namespace vdev::ir::internal {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsAlpha(c) || IsDigit(c); }

// Static messages only, so that an error token's text needs no storage.
constexpr std::string_view kBadNameMsg = "expected a name ([A-Za-z0-9_]+) after the sigil";
constexpr std::string_view kBadCharMsg = "unexpected character";
constexpr std::string_view kBadNumberMsg = "malformed number";
constexpr std::string_view kUnterminatedMsg = "unterminated string";

}  // namespace

void Lexer::Make(Token* t, Tok kind, size_t start, size_t end, size_t text_start, size_t text_len) const {
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
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < n && src_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
  if (pos_ >= n) return Make(out, Tok::kEnd, pos_, pos_, pos_, 0);
  const size_t start = pos_;
  const char c = src_[pos_];
  auto single = [&](Tok kind) {
    ++pos_;
    return Make(out, kind, start, pos_, start, 1);
  };
  switch (c) {
    case '(': return single(Tok::kLParen);
    case ')': return single(Tok::kRParen);
    case '{': return single(Tok::kLBrace);
    case '}': return single(Tok::kRBrace);
    case '[': return single(Tok::kLBracket);
    case ']': return single(Tok::kRBracket);
    case ',': return single(Tok::kComma);
    case '=': return single(Tok::kEquals);
    case ':': return single(Tok::kColon);
    case '.': return single(Tok::kDot);
    case '?': return single(Tok::kQuestion);
    case '*': return single(Tok::kStar);
    case '/': return single(Tok::kSlash);
    case '%':
    case '@': {
      size_t p = pos_ + 1;
      while (p < n && IsNameChar(src_[p])) ++p;
      if (p == pos_ + 1) return Error(out, pos_ + 1, kBadNameMsg);
      pos_ = p;
      return Make(out, c == '%' ? Tok::kLocal : Tok::kGlobal, start, p, start + 1, p - start - 1);
    }
    case '"': {
      size_t p = pos_ + 1;
      while (p < n && src_[p] != '"' && src_[p] != '\n') {
        if (src_[p] == '\\' && p + 1 < n && src_[p + 1] != '\n') ++p;
        ++p;
      }
      if (p >= n || src_[p] != '"') return Error(out, start, kUnterminatedMsg);
      pos_ = p + 1;
      return Make(out, Tok::kString, start, pos_, start, pos_ - start);
    }
    default: break;
  }
  if (c == '-' && pos_ + 1 < n && src_[pos_ + 1] == '>') {
    pos_ += 2;
    return Make(out, Tok::kArrow, start, pos_, start, 2);
  }
  if (IsDigit(c) || (c == '-' && pos_ + 1 < n && IsDigit(src_[pos_ + 1]))) {
    size_t p = pos_ + 1;
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
    pos_ = p;
    return Make(out, Tok::kNumber, start, p, start, p - start);
  }
  if (IsAlpha(c)) {
    size_t p = pos_ + 1;
    // Dots join identifier parts (nn.conv2d) only when a letter follows.
    while (p < n && (IsNameChar(src_[p]) || (src_[p] == '.' && p + 1 < n && IsAlpha(src_[p + 1])))) ++p;
    pos_ = p;
    return Make(out, Tok::kIdent, start, p, start, p - start);
  }
  return Error(out, start, kBadCharMsg);
}

}  // namespace vdev::ir::internal
