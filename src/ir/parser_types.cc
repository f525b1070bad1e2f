// Parser of the IR text: types (see internal/parser.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "internal/parser.h"

namespace vdev::ir::internal {

bool Parser::ParseType(TypeId* out) {
  const size_t frame_base = type_frames_.size();
  TypeTable& types = module.types;
  while (true) {
    // A type's first token.
    Token t = lex_.Next();
    TypeId leaf = kNoType;
    if (t.kind == Tok::kIdent && t.text == "storage") {
      leaf = types.Storage();
    } else if (t.kind == Tok::kIdent && t.text == "fn") {
      if (!Expect(Tok::kLParen, "'(' after 'fn'")) return false;
      if (PeekIs(Tok::kRParen)) {
        lex_.Skip();
        if (!Expect(Tok::kArrow, "'->' and the function's result type")) return false;
        type_frames_.push_back({2, static_cast<uint32_t>(type_items_.size())});
      } else {
        type_frames_.push_back({1, static_cast<uint32_t>(type_items_.size())});
      }
      continue;
    } else if (t.kind == Tok::kIdent) {
      std::optional<DType> dtype = DTypeFromName(t.text);
      if (!dtype) return Unexpected(t, "a type (f32[…], (…), fn(…) -> …, storage)");
      if (!ParseTensorDims()) return false;
      leaf = types.Tensor(*dtype, dims_);
    } else if (t.kind == Tok::kLParen) {
      if (PeekIs(Tok::kRParen)) {
        lex_.Skip();
        leaf = types.Tuple({});
      } else {
        type_frames_.push_back({0, static_cast<uint32_t>(type_items_.size())});
        continue;
      }
    } else {
      return Unexpected(t, "a type (f32[…], (…), fn(…) -> …, storage)");
    }
    bool done = false;
    if (!CloseTypes(frame_base, &leaf, &done)) return false;
    if (done) {
      *out = leaf;
      return true;
    }
  }
}

bool Parser::ParseTensorDims() {
  if (!Expect(Tok::kLBracket, "'[' and the tensor's dimensions")) return false;
  dims_.clear();
  if (PeekIs(Tok::kRBracket)) {
    lex_.Skip();
    return true;
  }
  while (true) {
    Token d = lex_.Next();
    if (d.kind == Tok::kQuestion) {
      dims_.push_back(kDynamicDim);
    } else if (d.kind == Tok::kNumber) {
      int64_t v;
      if (!ParseInt(d, &v)) return false;
      if (v < 0) return Fail(d.loc, "a dimension must be non-negative or '?'");
      dims_.push_back(v);
    } else {
      return Unexpected(d, "a dimension (a non-negative integer or '?')");
    }
    Token sep = lex_.Next();
    if (sep.kind == Tok::kRBracket) return true;
    if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ']'");
  }
}

bool Parser::CloseTypes(size_t frame_base, TypeId* leaf, bool* done) {
  TypeTable& types = module.types;
  while (true) {
    if (type_frames_.size() == frame_base) {
      *done = true;
      return true;
    }
    TypeFrame& f = type_frames_.back();
    if (f.kind == 2) {
      absl::Span<const TypeId> params(type_items_.data() + f.base, type_items_.size() - f.base);
      *leaf = types.Func(params, *leaf);
      type_items_.resize(f.base);
      type_frames_.pop_back();
      continue;
    }
    type_items_.push_back(*leaf);
    Token sep = lex_.Next();
    if (sep.kind == Tok::kComma) return true;
    if (sep.kind != Tok::kRParen) return Unexpected(sep, "',' or ')'");
    if (f.kind != 0) {
      if (!Expect(Tok::kArrow, "'->' and the function's result type")) return false;
      f.kind = 2;
      return true;
    }
    absl::Span<const TypeId> fields(type_items_.data() + f.base, type_items_.size() - f.base);
    *leaf = types.Tuple(fields);
    type_items_.resize(f.base);
    type_frames_.pop_back();
  }
}

}  // namespace vdev::ir::internal
