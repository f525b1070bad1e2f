// Parser of the IR text: blocks, bindings, expressions, atoms and device
// literals (see internal/parser.h).
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "internal/parser.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::ir::internal {

bool Parser::ParseDevice(const Token& first, DeviceId* out) {
  if (first.kind == Tok::kError) return Fail(first.loc, std::string(first.text));
  if (first.kind == Tok::kEnd) return Unexpected(first, "a device literal");
  absl::string_view rest = lex_.source().substr(first.offset);
  // Programs repeat a few literals (an on_device every few bindings), and parsing and interning one
  // took ~750 instructions. ParseVirtualDevicePrefix reads nothing past the byte after the literal,
  // so the same bytes up to and including that one make the same device.
  for (const RecentDevice& recent : recent_devices_) {
    if (!recent.spelling.empty() && absl::StartsWith(rest, recent.spelling)) {
      *out = recent.device;
      lex_.ResetTo(first, first.offset + static_cast<uint32_t>(recent.spelling.size() - 1));
      return true;
    }
  }
  size_t consumed = 0;
  size_t error_offset = 0;
  absl::StatusOr<VirtualDevice> vd = ParseVirtualDevicePrefix(rest, &consumed, &error_offset);
  if (!vd.ok()) {
    return Fail(lex_.LocAfter(first, first.offset + static_cast<uint32_t>(error_offset)),
                std::string(vd.status().message()));
  }
  *out = module.devices.Intern(*vd);
  if (consumed < rest.size()) {
    recent_devices_[next_recent_device_++ % recent_devices_.size()] = {rest.substr(0, consumed + 1), *out};
  }
  lex_.ResetTo(first, first.offset + static_cast<uint32_t>(consumed));
  return true;
}

// `t` may be the lexer's lookahead (see ParseAtom): it is read before any further token.
bool Parser::ParseAtomFrom(const Token& t, Operand* out) {
  switch (t.kind) {
    case Tok::kLocal: return Resolve(t, out);
    case Tok::kGlobal:
      out->kind = OperandKind::kGlobal;
      out->symbol = module.symbols.Intern(t.text);
      out->index = kNoFunc;
      out->loc = t.loc;
      return true;
    case Tok::kNumber:
      out->kind = OperandKind::kNumber;
      out->symbol = module.symbols.Intern(t.text);
      out->loc = t.loc;
      return true;
    case Tok::kLBracket: {
      out->kind = OperandKind::kIntList;
      out->index = static_cast<uint32_t>(module.ints.size());
      out->loc = t.loc;
      if (PeekIs(Tok::kRBracket)) {
        lex_.Skip();
      } else {
        while (true) {
          Token n = lex_.Next();
          if (n.kind != Tok::kNumber) return Unexpected(n, "an integer");
          int64_t v;
          if (!ParseInt(n, &v)) return false;
          module.ints.push_back(v);
          Token sep = lex_.Next();
          if (sep.kind == Tok::kRBracket) break;
          if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ']'");
        }
      }
      out->count = static_cast<uint32_t>(module.ints.size()) - out->index;
      return true;
    }
    default: return Unexpected(t, "an atom (%name, @name, a number or [integers])");
  }
}

bool Parser::ParseAttrValue(Operand* out) {
  const Token& v = lex_.Peek();
  switch (v.kind) {
    case Tok::kLocal:
    case Tok::kGlobal:
    case Tok::kNumber:
    case Tok::kLBracket: return ParseAtom(out);
    case Tok::kString:
      lex_.Skip();
      out->kind = OperandKind::kString;
      out->symbol = module.symbols.Intern(v.text);
      out->loc = v.loc;
      return true;
    case Tok::kQuestion:
    case Tok::kStar:
    case Tok::kSlash: return ParseDeviceOperand(v, out);
    case Tok::kIdent:
      if (v.text == "true" || v.text == "false") {
        lex_.Skip();
        out->kind = OperandKind::kBool;
        out->index = v.text == "true" ? 1 : 0;
        out->loc = v.loc;
        return true;
      }
      // A device type, or a word that continues like a device literal (gpu:0), is a device.
      if (DeviceTypeFromName(v.text) || lex_.FollowedBy(v, ':') || lex_.FollowedBy(v, '[') || lex_.FollowedBy(v, '/')) {
        return ParseDeviceOperand(v, out);
      }
      lex_.Skip();
      out->kind = OperandKind::kIdent;
      out->symbol = module.symbols.Intern(v.text);
      out->loc = v.loc;
      return true;
    default: return Unexpected(v, "an attribute value");
  }
}

// ---------------------------------------------------------------------------------------------
// Blocks and bindings

bool Parser::ParseBlocks() {
  while (!frames_.empty()) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kLocal) {
      if (!ParseBinding()) return false;
    } else if (t.kind == Tok::kIdent && t.text == "return") {
      if (!ParseReturn()) return false;
    } else if (t.kind == Tok::kRBrace) {
      return Fail(t.loc, "missing 'return': a block must end in 'return ATOM'");
    } else {
      return Unexpected(t, "a binding '%name = …' or 'return'");
    }
  }
  return true;
}

bool Parser::ParseBinding() {
  const int previous_line = lex_.last_line();
  const Token& name = lex_.Peek();
  if (name.loc.line == previous_line) return Fail(name.loc, "a binding must start on its own line");
  const BlockId block = frames_.back().block;
  BindingId b = static_cast<BindingId>(module.bindings.size());
  // Filled in place, here and by ParseSimpleExpr (a Binding is 76 bytes): nothing appends to the
  // bindings before this one is complete, so the reference stays valid.
  Binding& binding = module.bindings.emplace_back();
  binding.name = module.symbols.Intern(name.text);
  binding.loc = name.loc;
  lex_.Skip();
  binding.block = block;
  open_bindings_.push_back(b);
  if (PeekIs(Tok::kColon)) {
    lex_.Skip();
    if (!ParseType(&binding.declared_type)) return false;
  }
  if (!Expect(Tok::kEquals, "'='")) return false;
  const Token& head = lex_.Peek();
  FuncId func = module.blocks[block].func;
  Expr& e = binding.expr;
  if (head.kind == Tok::kIdent && head.text == "if") {
    e.kind = ExprKind::kIf;
    e.loc = head.loc;
    lex_.Skip();
    e.args = {static_cast<uint32_t>(module.operands.size()), 1};
    if (!ParseAtom(&module.operands.emplace_back())) return false;
    Token lb;
    if (!Expect(Tok::kLBrace, "'{'", &lb)) return false;
    e.then_block = NewBlock(func, b, lb.loc);
    frames_.push_back({FrameKind::kIfThen, e.then_block, b, scopes_.Mark(), open_bindings_.size()});
    return true;
  }
  if (head.kind == Tok::kIdent && head.text == "fn") {
    e.kind = ExprKind::kFn;
    e.loc = head.loc;
    lex_.Skip();
    FuncId f = static_cast<FuncId>(module.functions.size());
    Function fn;
    fn.kind = FuncKind::kLocal;
    fn.name = binding.name;
    fn.loc = e.loc;
    fn.parent = func;
    fn.binding = b;
    module.functions.push_back(fn);
    if (PeekIs(Tok::kLBracket)) {
      lex_.Skip();
      Token word = lex_.Next();
      if (word.kind != Tok::kIdent || word.text != "primitive") return Unexpected(word, "'primitive'");
      if (!Expect(Tok::kRBracket, "']'")) return false;
      module.functions[f].primitive = true;
    }
    scopes_.OpenFunction(f);
    if (!ParseParams(f) || !ParseResult(f)) return false;
    Token lb;
    if (!Expect(Tok::kLBrace, "'{'", &lb)) return false;
    BlockId body = NewBlock(f, kNoBinding, lb.loc);
    module.functions[f].body = body;
    e.func = f;
    frames_.push_back({FrameKind::kFunctionBody, body, b, scopes_.Mark(), open_bindings_.size()});
    return true;
  }
  if (head.kind == Tok::kIdent) {
    if (!ParseOpCall(&e)) return false;
  } else if (!ParseSimpleExpr(&e)) {
    return false;
  }
  return FinishBinding(b);
}

bool Parser::FinishBinding(BindingId b) {
  const Binding& binding = module.bindings[b];
  if (!Define(binding.name, ValueRef::Binding(b), binding.loc)) return false;
  const Token& next = lex_.Peek();
  if (next.kind != Tok::kEnd && next.loc.line == lex_.last_line())
    return Unexpected(next, "the end of the line after the binding");
  return true;
}

// `op(…)` or `const(T)`, the most common expressions: their first token is read in place.
bool Parser::ParseOpCall(Expr* e) {
  const Token& name = lex_.Peek();
  const absl::string_view op = name.text;  // outlives `name`, which the next token overwrites
  e->loc = name.loc;
  lex_.Skip();
  if (!PeekIs(Tok::kLParen)) return Unexpected(lex_.Peek(), absl::StrCat("'(' after op '", op, "'"));
  lex_.Skip();
  if (op == "const") {
    e->kind = ExprKind::kConst;
    if (!ParseType(&e->const_type)) return false;
    return Expect(Tok::kRParen, "')'");
  }
  e->kind = ExprKind::kOpCall;
  e->op = module.symbols.Intern(op);
  return ParseOpArgs(e);
}

// Any other expression: its first token is kept while the parser looks past it.
bool Parser::ParseSimpleExpr(Expr* e) {
  Token t = lex_.Next();
  e->loc = t.loc;
  switch (t.kind) {
    case Tok::kGlobal:
      if (PeekIs(Tok::kLParen)) {
        lex_.Skip();
        e->kind = ExprKind::kCallGlobal;
        e->op = module.symbols.Intern(t.text);
        return ParseAtomArgs(e, static_cast<uint32_t>(module.operands.size()));
      }
      break;
    case Tok::kLocal:
      if (PeekIs(Tok::kLParen)) {
        uint32_t begin = static_cast<uint32_t>(module.operands.size());
        if (!Resolve(t, &module.operands.emplace_back())) return false;
        lex_.Skip();
        e->kind = ExprKind::kCallValue;
        return ParseAtomArgs(e, begin);
      }
      if (PeekIs(Tok::kDot)) {
        e->args = {static_cast<uint32_t>(module.operands.size()), 1};
        if (!Resolve(t, &module.operands.emplace_back())) return false;
        lex_.Skip();
        Token index = lex_.Next();
        int64_t i;
        if (index.kind != Tok::kNumber) return Unexpected(index, "a field index");
        if (!ParseInt(index, &i)) return false;
        if (i < 0 || i > INT32_MAX) return Fail(index.loc, "a field index must be a non-negative integer");
        e->kind = ExprKind::kProject;
        e->index = static_cast<uint32_t>(i);
        return true;
      }
      break;
    case Tok::kLParen:
      e->kind = ExprKind::kTuple;
      return ParseAtomArgs(e, static_cast<uint32_t>(module.operands.size()));
    case Tok::kNumber:
    case Tok::kLBracket: break;
    default: return Unexpected(t, "an expression");
  }
  e->kind = ExprKind::kAlias;
  e->args = {static_cast<uint32_t>(module.operands.size()), 1};
  return ParseAtomFrom(t, &module.operands.emplace_back());
}

// `(` already consumed: atoms separated by commas up to `)`, appended to Module::operands. The
// expression's args start at `begin`: before the atoms when the caller has appended a callee.
bool Parser::ParseAtomArgs(Expr* e, uint32_t begin) {
  if (PeekIs(Tok::kRParen)) {
    lex_.Skip();
  } else {
    while (true) {
      if (!ParseAtom(&module.operands.emplace_back())) return false;
      Token sep = lex_.Next();
      if (sep.kind == Tok::kRParen) break;
      if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ')'");
    }
  }
  e->args = {begin, static_cast<uint32_t>(module.operands.size()) - begin};
  return true;
}

// `(` already consumed: positional atoms and devices, and key=value attributes.
bool Parser::ParseOpArgs(Expr* e) {
  uint32_t args_begin = static_cast<uint32_t>(module.operands.size());
  uint32_t attrs_begin = static_cast<uint32_t>(module.attrs.size());
  if (PeekIs(Tok::kRParen)) {
    lex_.Skip();
  } else {
    while (true) {
      const Token& a = lex_.Peek();
      switch (a.kind) {
        case Tok::kIdent: {
          Token word = lex_.Next();  // a copy: the next token decides what it is
          if (PeekIs(Tok::kEquals)) {
            lex_.Skip();
            Attr& attr = module.attrs.emplace_back();
            attr.key = module.symbols.Intern(word.text);
            attr.loc = word.loc;
            if (!ParseAttrValue(&attr.value)) return false;
            break;
          }
          // A positional word is a device literal (cuda, cpu:0[llvm]); re-read it as one.
          lex_.ResetTo(word, word.offset);
          if (!ParseDeviceOperand(word, &module.operands.emplace_back())) return false;
          break;
        }
        case Tok::kQuestion:
        case Tok::kStar:
        case Tok::kSlash:
          if (!ParseDeviceOperand(a, &module.operands.emplace_back())) return false;
          break;
        case Tok::kLocal:
        case Tok::kGlobal:
        case Tok::kNumber:
        case Tok::kLBracket:
          if (!ParseAtom(&module.operands.emplace_back())) return false;
          break;
        default: return Unexpected(a, "an argument (an atom, a device literal or key=value)");
      }
      Token sep = lex_.Next();
      if (sep.kind == Tok::kRParen) break;
      if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ')'");
    }
  }
  e->args = {args_begin, static_cast<uint32_t>(module.operands.size()) - args_begin};
  e->attrs = {attrs_begin, static_cast<uint32_t>(module.attrs.size()) - attrs_begin};
  return true;
}

bool Parser::ParseReturn() {
  const Frame frame = frames_.back();
  Block& block = module.blocks[frame.block];
  block.return_loc = lex_.Peek().loc;
  lex_.Skip();
  if (!ParseAtom(&block.result)) return false;
  if (!Expect(Tok::kRBrace, "'}' after the returned value")) return false;
  block.has_return = true;
  block.bindings.assign(open_bindings_.begin() + static_cast<ptrdiff_t>(frame.bindings_mark), open_bindings_.end());
  open_bindings_.resize(frame.bindings_mark);
  frames_.pop_back();
  scopes_.CloseBlock(frame.visible_mark);
  switch (frame.kind) {
    case FrameKind::kFunctionBody:
      scopes_.CloseFunction();
      return frame.binding == kNoBinding || FinishBinding(frame.binding);
    case FrameKind::kIfThen: {
      Token word = lex_.Next();
      if (word.kind != Tok::kIdent || word.text != "else") return Unexpected(word, "'else'");
      Token lb;
      if (!Expect(Tok::kLBrace, "'{'", &lb)) return false;
      BlockId arm = NewBlock(module.blocks[frame.block].func, frame.binding, lb.loc);
      module.bindings[frame.binding].expr.else_block = arm;
      frames_.push_back({FrameKind::kIfElse, arm, frame.binding, scopes_.Mark(), open_bindings_.size()});
      return true;
    }
    case FrameKind::kIfElse: return FinishBinding(frame.binding);
  }
  return true;
}

}  // namespace vdev::ir::internal
