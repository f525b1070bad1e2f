// Canonical printer of the IR text; iterative over nested blocks.
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_text.h"

namespace vdev::ir {
namespace {

// Deeper blocks keep this indentation: 10^4-deep programs would otherwise print hundreds of MB
// of spaces (see docs/ir.md).
constexpr int kMaxIndentLevels = 32;

// The size of the pieces PrintModule hands to a stream.
constexpr size_t kSinkPiece = 1 << 16;

class Printer {
 public:
  // With a `sink`, the text goes there in pieces of about kSinkPiece bytes as it is printed.
  Printer(const Module& m, const PrintOptions& options, std::string* out, std::ostream* sink = nullptr)
      : m_(m), options_(options), out_(*out), sink_(sink) {}

  void Module();
  void Operand(const ir::Operand& o);
  void ExprHead(const Expr& e);

 private:
  void Name(Symbol s) {
    if (s == kNoSymbol || s >= m_.symbols.size()) {
      out_.push_back('?');
    } else {
      // append, not absl::StrAppend: this is most of what a large program's printing does.
      const absl::string_view name = m_.Name(s);
      out_.append(name.data(), name.size());
    }
  }
  void Indent(int depth) { out_.append(2 * std::min(depth, kMaxIndentLevels), ' '); }
  void Device(DeviceId d) {
    if (d >= device_text_.size()) device_text_.resize(m_.devices.size());
    if (device_text_[d].empty()) device_text_[d] = m_.Device(d).ToString();
    out_ += device_text_[d];
  }
  void Type(TypeId t) { m_.types.AppendTo(t, &out_); }
  void Args(absl::Span<const ir::Operand> args) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (i > 0) out_ += ", ";
      Operand(args[i]);
    }
  }
  void Signature(const Function& f);
  void Binding(BindingId b, int depth);
  void Body(BlockId body, int depth);

  const ir::Module& m_;
  // Hands what is printed so far to the sink, once it is a piece's worth.
  void Flush(bool all = false) {
    if (sink_ == nullptr || (!all && out_.size() < kSinkPiece)) return;
    sink_->write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }

  const PrintOptions& options_;
  std::string& out_;
  std::ostream* sink_;
  std::vector<std::string> device_text_;
};

void Printer::Operand(const ir::Operand& o) {
  switch (o.kind) {
    case OperandKind::kLocal:
      out_.push_back('%');
      Name(o.symbol);
      return;
    case OperandKind::kGlobal:
      out_.push_back('@');
      Name(o.symbol);
      return;
    case OperandKind::kNumber:
    case OperandKind::kIdent:
    case OperandKind::kString: Name(o.symbol); return;
    case OperandKind::kIntList: {
      out_.push_back('[');
      absl::Span<const int64_t> values = m_.Ints(o);
      for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out_ += ", ";
        absl::StrAppend(&out_, values[i]);
      }
      out_.push_back(']');
      return;
    }
    case OperandKind::kDevice: Device(o.index); return;
    case OperandKind::kBool: out_ += o.index != 0 ? "true" : "false"; return;
  }
}

void Printer::Signature(const Function& f) {
  // A kernel always has `-> T` (the grammar requires it), even when T is unknown (`?`).
  bool arrow = f.kind == FuncKind::kKernel || f.result_type != kNoType || f.result_device != kNoDevice;
  out_.push_back('(');
  absl::Span<const Param> params = m_.Params(f);
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (i > 0) out_ += ", ";
    out_.push_back('%');
    Name(p.name);
    out_ += ": ";
    Type(p.type);
    if (p.device != kNoDevice) {
      out_ += " on ";
      Device(p.device);
    }
  }
  out_.push_back(')');
  if (arrow) {
    out_ += " -> ";
    Type(f.result_type);
    if (f.result_device != kNoDevice) {
      out_ += " on ";
      Device(f.result_device);
    }
  }
}

void Printer::ExprHead(const Expr& e) {
  absl::Span<const ir::Operand> args = m_.Args(e);
  switch (e.kind) {
    case ExprKind::kOpCall: {
      Name(e.op);
      out_.push_back('(');
      Args(args);
      bool first = args.empty();
      for (const Attr& a : m_.Attrs(e)) {
        if (!first) out_ += ", ";
        first = false;
        Name(a.key);
        out_.push_back('=');
        Operand(a.value);
      }
      out_.push_back(')');
      return;
    }
    case ExprKind::kCallGlobal:
      out_.push_back('@');
      Name(e.op);
      out_.push_back('(');
      Args(args);
      out_.push_back(')');
      return;
    case ExprKind::kCallValue:
      if (!args.empty()) {
        Operand(args[0]);
        args.remove_prefix(1);
      }
      out_.push_back('(');
      Args(args);
      out_.push_back(')');
      return;
    case ExprKind::kTuple:
      out_.push_back('(');
      Args(args);
      out_.push_back(')');
      return;
    case ExprKind::kProject:
      if (!args.empty()) Operand(args[0]);
      absl::StrAppend(&out_, ".", e.index);
      return;
    case ExprKind::kIf:
      out_ += "if ";
      if (!args.empty()) Operand(args[0]);
      out_ += " {";
      return;
    case ExprKind::kFn:
      out_ += "fn";
      if (e.func != kNoFunc) {
        if (m_.functions[e.func].primitive) out_ += "[primitive]";
        Signature(m_.functions[e.func]);
      }
      out_ += " {";
      return;
    case ExprKind::kConst:
      out_ += "const(";
      Type(e.const_type);
      out_.push_back(')');
      return;
    case ExprKind::kAlias:
      if (!args.empty()) Operand(args[0]);
      return;
  }
}

void Printer::Binding(BindingId id, int depth) {
  const ir::Binding& b = m_.bindings[id];
  Indent(depth);
  out_.push_back('%');
  Name(b.name);
  TypeId written = b.declared_type;
  if (written == kNoType && options_.inferred_types) written = b.type;
  if (written != kNoType) {
    out_ += ": ";
    Type(written);
  }
  out_ += " = ";
  ExprHead(b.expr);
  out_.push_back('\n');
  Flush();
}

void Printer::Body(BlockId body, int depth) {
  struct Frame {
    BlockId block;
    uint32_t next;
    int depth;
    BindingId pending;  // an `if`/`fn` binding whose blocks are being printed
    uint8_t stage;
  };
  std::vector<Frame> stack{{body, 0, depth, kNoBinding, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.pending != kNoBinding) {
      const Expr& e = m_.bindings[f.pending].expr;
      if (e.kind == ExprKind::kIf && f.stage < 2) {
        BlockId arm = f.stage == 0 ? e.then_block : e.else_block;
        if (f.stage == 1) {
          Indent(f.depth);
          out_ += "} else {\n";
        }
        ++f.stage;
        if (arm != kNoBlock) {
          int inner = f.depth + 1;
          stack.push_back({arm, 0, inner, kNoBinding, 0});
        }
        continue;
      }
      if (e.kind == ExprKind::kFn && f.stage == 0) {
        f.stage = 2;
        BlockId fn_body = e.func != kNoFunc ? m_.functions[e.func].body : kNoBlock;
        if (fn_body != kNoBlock) {
          int inner = f.depth + 1;
          stack.push_back({fn_body, 0, inner, kNoBinding, 0});
        }
        continue;
      }
      Indent(f.depth);
      out_ += "}\n";
      f.pending = kNoBinding;
      continue;
    }
    const Block& block = m_.blocks[f.block];
    if (f.next == block.bindings.size()) {
      Indent(f.depth);
      out_ += "return ";
      Operand(block.result);
      out_.push_back('\n');
      stack.pop_back();
      continue;
    }
    BindingId b = block.bindings[f.next++];
    Binding(b, f.depth);
    ExprKind kind = m_.bindings[b].expr.kind;
    if (kind == ExprKind::kIf || kind == ExprKind::kFn) {
      f.pending = b;
      f.stage = 0;
    }
  }
}

void Printer::Module() {
  const Config& c = m_.config;
  // `config { }` does not parse: an empty config prints as none.
  if (c.present && (c.targets || c.default_device || c.host_device)) {
    out_ += "config {";
    bool first = true;
    auto sep = [&] {
      out_ += first ? " " : ", ";
      first = false;
    };
    if (c.targets) {
      sep();
      out_ += "targets = [";
      for (size_t i = 0; i < c.targets->size(); ++i) {
        if (i > 0) out_ += ", ";
        absl::StrAppend(&out_, TargetKindName((*c.targets)[i]));
      }
      out_ += "]";
    }
    if (c.default_device) {
      sep();
      absl::StrAppend(&out_, "default = ", c.default_device->ToString());
    }
    if (c.host_device) {
      sep();
      absl::StrAppend(&out_, "host = ", c.host_device->ToString());
    }
    out_ += " }\n";
  }
  for (size_t i = 0; i < m_.items.size(); ++i) {
    if (i > 0) out_.push_back('\n');
    const Function& f = m_.functions[m_.items[i]];
    out_ += f.kind == FuncKind::kKernel ? "kernel @" : "def @";
    Name(f.name);
    Signature(f);
    if (f.kind == FuncKind::kKernel) {
      out_.push_back('\n');
      continue;
    }
    out_ += " {\n";
    if (f.body != kNoBlock) Body(f.body, 1);
    out_ += "}\n";
  }
  Flush(/*all=*/true);
}

}  // namespace

std::string PrintModule(const Module& module, const PrintOptions& options) {
  std::string out;
  // About 24 bytes per binding: one allocation for typical programs.
  out.reserve(64 + module.bindings.size() * 24);
  Printer(module, options, &out).Module();
  return out;
}

void PrintModule(const Module& module, std::ostream& out, const PrintOptions& options) {
  std::string piece;
  piece.reserve(2 * kSinkPiece);
  Printer(module, options, &piece, &out).Module();
}

std::string PrintOperand(const Module& module, const Operand& operand) {
  std::string out;
  PrintOptions options;
  Printer(module, options, &out).Operand(operand);
  return out;
}

std::string PrintExprHead(const Module& module, const Expr& expr) {
  std::string out;
  PrintOptions options;
  Printer(module, options, &out).ExprHead(expr);
  return out;
}

}  // namespace vdev::ir
