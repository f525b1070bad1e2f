// Parser of the IR text: the module level (config, functions, their parameters and results) and
// the resolution of globals; see internal/parser.h for how the grammar is split over files.
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "internal/parser.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/huge_pages.h"

namespace vdev::ir {
namespace internal {

std::string LocText(SourceLoc loc) { return absl::StrCat(loc.line, ":", loc.col); }

namespace {

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

}  // namespace

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
  AdviseHugePages(module.bindings);
  AdviseHugePages(module.operands);
  open_bindings_.reserve(lines);
  AdviseHugePages(open_bindings_);
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
  frames_.push_back({FrameKind::kFunctionBody, body, kNoBinding, scopes_.Mark(), open_bindings_.size()});
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

// `@name` may name a function defined later: resolve once everything is read, reporting the
// first unresolved use in program order.
bool Parser::ResolveGlobals() {
  SourceLoc first_bad;
  Symbol bad = kNoSymbol;
  auto resolve = [&](Symbol s, SourceLoc loc) -> FuncId {
    auto it = module.globals.find(s);
    if (it != module.globals.end()) return it->second;
    if (bad == kNoSymbol || loc.line < first_bad.line || (loc.line == first_bad.line && loc.col < first_bad.col)) {
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

}  // namespace internal

absl::StatusOr<Module> ParseModule(absl::string_view text, Diagnostic* error) {
  internal::Parser parser(text);
  if (!parser.Run()) {
    if (error != nullptr) *error = parser.error;
    return absl::InvalidArgumentError(
        absl::StrCat(parser.error.loc.line, ":", parser.error.loc.col, ": ", parser.error.message));
  }
  return std::move(parser.module);
}

}  // namespace vdev::ir
