// Parser of the IR text: one pass, names resolved on the fly, explicit stacks for nested blocks
// and types so that no input depth reaches the C++ stack.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "internal/huge_pages.h"
#include "internal/lexer.h"
#include "internal/scope.h"
#include "vdev/ir.h"
#include "vdev/ir_text.h"
#include "vdev/virtual_device.h"

namespace vdev::ir {
namespace {

using internal::Lexer;
using internal::Tok;
using internal::Token;

std::string LocText(SourceLoc loc) { return absl::StrCat(loc.line, ":", loc.col); }

// Newlines + 1, eight bytes at a time (a byte loop was 5% of parsing a million-line file): a byte
// of x = word ^ "\n\n…" is zero exactly where the word has a newline, and the high bit of
// ((x & 0x7F…) + 0x7F…) | x is clear exactly for the zero bytes. Those bits, moved to the bottom of
// their bytes, are summed by one multiply (a popcount compiled for baseline x86-64 is a libgcc call,
// 2% of parse + verify).
size_t CountLines(absl::string_view text) {
  constexpr uint64_t kNewlines = 0x0A0A0A0A0A0A0A0Aull;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
  size_t lines = 1;
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    uint64_t x = word ^ kNewlines;
    uint64_t nonzero = ((x & kLow7) + kLow7) | x;
    uint64_t newline_bytes = (~nonzero & ~kLow7) >> 7;  // 1 in each byte that held a newline
    lines += static_cast<size_t>((newline_bytes * 0x0101010101010101ull) >> 56);
  }
  for (; i < text.size(); ++i) lines += text[i] == '\n';
  return lines;
}

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
  bool ParseInt(const Token& t, int64_t* out);
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

// ---------------------------------------------------------------------------------------------

bool Parser::Define(Symbol s, ValueRef v, SourceLoc loc) {
  ValueRef prev = scopes_.Define(s, v);
  if (!prev.valid()) return true;
  return Fail(loc, absl::StrCat("duplicate name '%", module.Name(s), "' (already defined at ",
                                LocText(module.ValueLoc(prev)), ")"));
}

bool Parser::Resolve(const Token& t, Operand* out) {
  // Intern, not Find: its cache makes the names used over and over cheap. An undefined name is an
  // error, so the extra symbol it may create never reaches a module.
  Symbol s = module.symbols.Intern(t.text);
  ValueRef v = scopes_.Lookup(s);
  if (!v.valid()) return Fail(t.loc, absl::StrCat("undefined name '%", t.text, "'"));
  out->kind = OperandKind::kLocal;
  out->symbol = s;
  out->value = v;
  out->loc = t.loc;
  return true;
}

BlockId Parser::NewBlock(FuncId f, BindingId owner, SourceLoc loc) {
  Block b;
  b.func = f;
  b.owner = owner;
  b.loc = loc;
  BlockId id = static_cast<BlockId>(module.blocks.size());
  module.blocks.push_back(std::move(b));
  return id;
}

// ---------------------------------------------------------------------------------------------

bool Parser::Run() {
  if (lex_.source().size() >= UINT32_MAX) return Fail({}, "input larger than 4 GiB");
  // A binding per line at most: reserving up front saves the arenas' regrowth copies.
  size_t lines = CountLines(lex_.source());
  module.bindings.reserve(lines);
  module.operands.reserve(2 * lines);
  internal::AdviseHugePages(module.bindings);
  internal::AdviseHugePages(module.operands);
  module.symbols.Reserve(lines + 64);
  scopes_.Reserve(lines + 64);
  while (true) {
    const Token& t = lex_.Peek();
    if (t.kind == Tok::kEnd) break;
    bool ok;
    if (t.kind == Tok::kIdent && t.text == "def") {
      ok = ParseDef();
    } else if (t.kind == Tok::kIdent && t.text == "kernel") {
      ok = ParseKernel();
    } else if (t.kind == Tok::kIdent && t.text == "config") {
      ok = ParseConfig();
    } else {
      ok = Unexpected(t, "'def', 'kernel' or 'config'");
    }
    if (!ok) return false;
  }
  return ResolveGlobals();
}

bool Parser::ParseConfig() {
  Token kw = lex_.Next();
  Config& c = module.config;
  if (c.present) return Fail(kw.loc, "duplicate config");
  c.present = true;
  c.loc = kw.loc;
  if (!Expect(Tok::kLBrace, "'{'")) return false;
  while (true) {
    Token key = lex_.Next();
    if (key.kind != Tok::kIdent || (key.text != "targets" && key.text != "default" && key.text != "host"))
      return Unexpected(key, "'targets', 'default' or 'host'");
    if (!Expect(Tok::kEquals, "'='")) return false;
    if (key.text == "targets") {
      if (c.targets) return Fail(key.loc, "duplicate config entry 'targets'");
      c.targets_loc = key.loc;
      c.targets.emplace();
      if (!Expect(Tok::kLBracket, "'['")) return false;
      while (!PeekIs(Tok::kRBracket) || !c.targets->empty()) {
        Token kind = lex_.Next();
        if (kind.kind != Tok::kIdent) return Unexpected(kind, "a target kind");
        std::optional<TargetKind> k = TargetKindFromName(kind.text);
        if (!k) return Fail(kind.loc, absl::StrCat("unknown target kind '", kind.text, "'"));
        c.targets->push_back(*k);
        Token sep = lex_.Next();
        if (sep.kind == Tok::kRBracket) break;
        if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ']'");
      }
      if (c.targets->empty()) lex_.Skip();  // `[]`
    } else {
      bool is_default = key.text == "default";
      std::optional<VirtualDevice>& slot = is_default ? c.default_device : c.host_device;
      if (slot) return Fail(key.loc, absl::StrCat("duplicate config entry '", key.text, "'"));
      (is_default ? c.default_loc : c.host_loc) = key.loc;
      const Token& first = lex_.Peek();
      DeviceId d;
      if (!ParseDevice(first, &d)) return false;
      slot = module.Device(d);
    }
    Token sep = lex_.Next();
    if (sep.kind == Tok::kRBrace) return true;
    if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or '}'");
  }
}

// Consumes `def`/`kernel` and `@name`, registers the global and opens its scope.
bool Parser::DeclareGlobal(FuncKind kind, FuncId* out) {
  lex_.Skip();
  Token name;
  if (!Expect(Tok::kGlobal, "'@name'", &name)) return false;
  Symbol s = module.symbols.Intern(name.text);
  if (auto it = module.globals.find(s); it != module.globals.end())
    return Fail(name.loc, absl::StrCat("duplicate global '@", name.text, "' (already defined at ",
                                       LocText(module.functions[it->second].loc), ")"));
  FuncId f = static_cast<FuncId>(module.functions.size());
  Function fn;
  fn.kind = kind;
  fn.name = s;
  fn.loc = name.loc;
  module.functions.push_back(fn);
  module.globals.emplace(s, f);
  module.items.push_back(f);
  scopes_.OpenFunction(f);
  *out = f;
  return true;
}

bool Parser::ParseKernel() {
  FuncId f;
  if (!DeclareGlobal(FuncKind::kKernel, &f) || !ParseParams(f)) return false;
  if (!PeekIs(Tok::kArrow)) return Unexpected(lex_.Peek(), "'->' and the kernel's result type");
  if (!ParseResult(f)) return false;
  scopes_.CloseFunction();
  return true;
}

bool Parser::ParseDef() {
  FuncId f;
  if (!DeclareGlobal(FuncKind::kGlobal, &f) || !ParseParams(f) || !ParseResult(f)) return false;
  Token lb;
  if (!Expect(Tok::kLBrace, "'{'", &lb)) return false;
  BlockId body = NewBlock(f, kNoBinding, lb.loc);
  module.functions[f].body = body;
  frames_.push_back({FrameKind::kFunctionBody, body, kNoBinding, scopes_.Mark()});
  return ParseBlocks();
}

bool Parser::ParseParams(FuncId f) {
  if (!Expect(Tok::kLParen, "'('")) return false;
  uint32_t begin = static_cast<uint32_t>(module.params.size());
  if (PeekIs(Tok::kRParen)) {
    lex_.Skip();
  } else {
    while (true) {
      Token name;
      if (!Expect(Tok::kLocal, "a parameter '%name'", &name)) return false;
      if (!Expect(Tok::kColon, "':' and the parameter's type")) return false;
      ParamId id = static_cast<ParamId>(module.params.size());
      Param& p = module.params.emplace_back();
      p.name = module.symbols.Intern(name.text);
      p.loc = name.loc;
      p.func = f;
      if (!ParseType(&p.type)) return false;
      if (PeekIdent("on")) {
        lex_.Skip();
        const Token& first = lex_.Peek();
        p.device_loc = first.loc;
        if (!ParseDevice(first, &p.device)) return false;
      }
      if (!Define(p.name, ValueRef::Param(id), p.loc)) return false;
      Token sep = lex_.Next();
      if (sep.kind == Tok::kRParen) break;
      if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ')'");
    }
  }
  module.functions[f].params = {begin, static_cast<uint32_t>(module.params.size()) - begin};
  return true;
}

bool Parser::ParseResult(FuncId f) {
  if (!PeekIs(Tok::kArrow)) return true;
  lex_.Skip();
  TypeId type = kNoType;
  if (PeekIs(Tok::kQuestion)) {
    lex_.Skip();  // `-> ?`: result type not known (written only to carry `on vd`)
  } else if (!ParseType(&type)) {
    return false;
  }
  module.functions[f].result_type = type;
  if (PeekIdent("on")) {
    lex_.Skip();
    const Token& first = lex_.Peek();
    module.functions[f].result_device_loc = first.loc;
    DeviceId d;
    if (!ParseDevice(first, &d)) return false;
    module.functions[f].result_device = d;
  }
  return true;
}

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

bool Parser::ParseInt(const Token& t, int64_t* out) {
  absl::string_view s = t.text;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || ptr != s.data() + s.size())
    return Fail(t.loc, absl::StrCat("expected an integer, found ", Describe(t)));
  return true;
}

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
      if (!Expect(Tok::kLBracket, "'[' and the tensor's dimensions")) return false;
      dims_.clear();
      if (PeekIs(Tok::kRBracket)) {
        lex_.Skip();
      } else {
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
          if (sep.kind == Tok::kRBracket) break;
          if (sep.kind != Tok::kComma) return Unexpected(sep, "',' or ']'");
        }
      }
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
    // Reduce: hand the finished type to the enclosing tuple or function type.
    bool more = false;
    while (!more) {
      if (type_frames_.size() == frame_base) {
        *out = leaf;
        return true;
      }
      TypeFrame& f = type_frames_.back();
      if (f.kind == 2) {
        absl::Span<const TypeId> params(type_items_.data() + f.base, type_items_.size() - f.base);
        leaf = types.Func(params, leaf);
        type_items_.resize(f.base);
        type_frames_.pop_back();
        continue;
      }
      type_items_.push_back(leaf);
      Token sep = lex_.Next();
      if (sep.kind == Tok::kComma) {
        more = true;
      } else if (sep.kind == Tok::kRParen) {
        if (f.kind == 0) {
          absl::Span<const TypeId> fields(type_items_.data() + f.base, type_items_.size() - f.base);
          leaf = types.Tuple(fields);
          type_items_.resize(f.base);
          type_frames_.pop_back();
        } else {
          if (!Expect(Tok::kArrow, "'->' and the function's result type")) return false;
          f.kind = 2;
          more = true;
        }
      } else {
        return Unexpected(sep, "',' or ')'");
      }
    }
  }
}

// `t` may be the lexer's lookahead (see ParseAtom): it is read before any further token.
bool Parser::ParseAtomFrom(const Token& t, Operand* out) {
  switch (t.kind) {
    case Tok::kLocal:
      return Resolve(t, out);
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
    default:
      return Unexpected(t, "an atom (%name, @name, a number or [integers])");
  }
}

bool Parser::ParseAttrValue(Operand* out) {
  const Token& v = lex_.Peek();
  switch (v.kind) {
    case Tok::kLocal:
    case Tok::kGlobal:
    case Tok::kNumber:
    case Tok::kLBracket:
      return ParseAtom(out);
    case Tok::kString:
      lex_.Skip();
      out->kind = OperandKind::kString;
      out->symbol = module.symbols.Intern(v.text);
      out->loc = v.loc;
      return true;
    case Tok::kQuestion:
    case Tok::kStar:
    case Tok::kSlash:
      return ParseDeviceOperand(v, out);
    case Tok::kIdent:
      if (v.text == "true" || v.text == "false") {
        lex_.Skip();
        out->kind = OperandKind::kBool;
        out->index = v.text == "true" ? 1 : 0;
        out->loc = v.loc;
        return true;
      }
      // A device type, or a word that continues like a device literal (gpu:0), is a device.
      if (DeviceTypeFromName(v.text) || lex_.FollowedBy(v, ':') || lex_.FollowedBy(v, '[') ||
          lex_.FollowedBy(v, '/')) {
        return ParseDeviceOperand(v, out);
      }
      lex_.Skip();
      out->kind = OperandKind::kIdent;
      out->symbol = module.symbols.Intern(v.text);
      out->loc = v.loc;
      return true;
    default:
      return Unexpected(v, "an attribute value");
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
  module.blocks[block].bindings.push_back(b);
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
    frames_.push_back({FrameKind::kIfThen, e.then_block, b, scopes_.Mark()});
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
    frames_.push_back({FrameKind::kFunctionBody, body, b, scopes_.Mark()});
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
    case Tok::kLBracket:
      break;
    default:
      return Unexpected(t, "an expression");
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
        default:
          return Unexpected(a, "an argument (an atom, a device literal or key=value)");
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
  // A long block's list grew by doubling; give back the slack (up to half of it) before the
  // planner runs on the module. Short lists keep theirs: shrinking costs an allocation.
  if (block.bindings.capacity() - block.bindings.size() > 4096) block.bindings.shrink_to_fit();
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
      frames_.push_back({FrameKind::kIfElse, arm, frame.binding, scopes_.Mark()});
      return true;
    }
    case FrameKind::kIfElse:
      return FinishBinding(frame.binding);
  }
  return true;
}

// `@name` may name a function defined later: resolve once everything is read, reporting the
// first unresolved use in program order.
bool Parser::ResolveGlobals() {
  SourceLoc first_bad;
  Symbol bad = kNoSymbol;
  auto resolve = [&](Symbol s, SourceLoc loc) -> FuncId {
    auto it = module.globals.find(s);
    if (it != module.globals.end()) return it->second;
    if (bad == kNoSymbol || loc.line < first_bad.line ||
        (loc.line == first_bad.line && loc.col < first_bad.col)) {
      bad = s;
      first_bad = loc;
    }
    return kNoFunc;
  };
  for (Operand& o : module.operands) {
    if (o.kind == OperandKind::kGlobal) o.index = resolve(o.symbol, o.loc);
  }
  for (Attr& a : module.attrs) {
    if (a.value.kind == OperandKind::kGlobal) a.value.index = resolve(a.value.symbol, a.value.loc);
  }
  for (Block& b : module.blocks) {
    if (b.result.kind == OperandKind::kGlobal) b.result.index = resolve(b.result.symbol, b.result.loc);
  }
  for (Binding& b : module.bindings) {
    if (b.expr.kind == ExprKind::kCallGlobal) b.expr.func = resolve(b.expr.op, b.expr.loc);
  }
  if (bad != kNoSymbol) return Fail(first_bad, absl::StrCat("undefined global '@", module.Name(bad), "'"));
  return true;
}

}  // namespace

absl::StatusOr<Module> ParseModule(absl::string_view text, Diagnostic* error) {
  Parser parser(text);
  if (!parser.Run()) {
    if (error != nullptr) *error = parser.error;
    return absl::InvalidArgumentError(
        absl::StrCat(parser.error.loc.line, ":", parser.error.loc.col, ": ", parser.error.message));
  }
  return std::move(parser.module);
}

}  // namespace vdev::ir
