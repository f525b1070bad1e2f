// IR tables (symbols, types, devices), Module helpers and the iterative walker.
#include "vdev/ir/ir.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "vdev/support/huge_pages.h"

namespace vdev::ir {

// ---------------------------------------------------------------------------------------------
// SymbolTable

size_t SymbolTable::NameHash::operator()(absl::string_view name) const {
  size_t digits = 0;
  uint64_t suffix = 0;
  while (digits < name.size() && digits < 18 && name[name.size() - 1 - digits] >= '0' &&
         name[name.size() - 1 - digits] <= '9')
    ++digits;
  for (size_t i = name.size() - digits; i < name.size(); ++i) suffix = suffix * 10 + (name[i] - '0');
  // Well mixed over the prefix and the suffix's high part; the suffix's low 4 bits pick the slot
  // within a 16-slot block (bits 7..10 of the hash, which Swiss tables use as the probe start).
  size_t h = absl::HashOf(name.substr(0, name.size() - digits), suffix >> 4, digits);
  return (h & ~size_t{0x7FF}) | ((suffix & 15) << 7) | (h & 0x7F);
}

namespace {

// Splits `text` into a prefix of at most 8 bytes and a decimal number below 10^9 spelled without
// leading zeros (so that the number and the prefix give back the spelling).
bool SplitNumbered(absl::string_view text, uint64_t* prefix, uint32_t* prefix_size, uint32_t* number) {
  size_t digits = 0;
  while (digits < text.size() && digits < 10 && text[text.size() - 1 - digits] >= '0' &&
         text[text.size() - 1 - digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 9) return false;
  size_t size = text.size() - digits;
  if (size > 8 || (digits > 1 && text[size] == '0')) return false;
  uint32_t n = 0;
  for (size_t i = size; i < text.size(); ++i) n = n * 10 + static_cast<uint32_t>(text[i] - '0');
  uint64_t p = 0;
  if (size > 0) std::memcpy(&p, text.data(), size);
  *prefix = p;
  *prefix_size = static_cast<uint32_t>(size);
  *number = n;
  return true;
}

}  // namespace

SymbolTable::Family* SymbolTable::FindFamily(uint64_t prefix, uint32_t prefix_size, bool create) {
  for (Family& f : families_) {
    if (f.prefix == prefix && f.prefix_size == prefix_size) return &f;
  }
  // Families are never dropped: a prefix without one now never gets one, so its names always
  // take the hashed path.
  if (!create || families_.size() >= kMaxFamilies) return nullptr;
  families_.push_back(Family{prefix, prefix_size});
  // Sized once instead of regrown by doubling (a million names regrew 16 MB): what is never touched
  // costs address space only.
  families_.back().by_number.reserve(family_reserve_);
  AdviseHugePages(families_.back().by_number);
  return &families_.back();
}

Symbol SymbolTable::Store(absl::string_view text) {
  // Spellings live in large chunks so that interning a million names costs few allocations.
  constexpr size_t kChunk = 64 * 1024;
  size_t header = text.size() < kLongName ? 1 : 5;
  size_t need = header + text.size();
  if (need > chunk_left_) {
    size_t size = std::max(kChunk, need);
    chunks_.push_back(std::make_unique<char[]>(size));
    chunk_next_ = chunks_.back().get();
    chunk_left_ = size;
  }
  char* spelling = chunk_next_ + header;
  if (header == 1) {
    spelling[-1] = static_cast<char>(text.size());
  } else {
    uint32_t long_size = static_cast<uint32_t>(text.size());
    std::memcpy(spelling - 5, &long_size, sizeof long_size);
    spelling[-1] = static_cast<char>(kLongName);
  }
  if (!text.empty()) std::memcpy(spelling, text.data(), text.size());
  names_.push_back(spelling);
  chunk_next_ += need;
  chunk_left_ -= need;
  return static_cast<Symbol>(names_.size() - 1);
}

Symbol SymbolTable::InternHashed(absl::string_view text) {
  // One probe: insert with the caller's view, then point the key at the stored copy (equal bytes,
  // so equal hash and equality).
  auto [it, inserted] = index_.try_emplace(text, static_cast<Symbol>(names_.size()));
  if (inserted) const_cast<absl::string_view&>(it->first) = Name(Store(text));
  return it->second;
}

Symbol SymbolTable::InternNumbered(Family& family, uint32_t number, absl::string_view text) {
  std::vector<Symbol>& dense = family.by_number;
  if (number < dense.size() && dense[number] != kNoSymbol) return dense[number];
  if (static_cast<int64_t>(number) <= family.hashed_max) {
    auto it = index_.find(text);
    if (it != index_.end()) return it->second;
  }
  // Dense while the vector stays within 16 slots per name (plus slack): `%b999999999` alone must
  // not allocate gigabytes.
  if (number < dense.size() || number < 16 * (static_cast<uint64_t>(family.count) + 64)) {
    if (number >= dense.size()) dense.resize(number + 1, kNoSymbol);
    Symbol s = Store(text);
    dense[number] = s;
    ++family.count;
    return s;
  }
  family.hashed_max = std::max<int64_t>(family.hashed_max, number);
  return InternHashed(text);
}

Symbol SymbolTable::Intern(absl::string_view text) {
  uint64_t key;
  size_t slot;
  bool cacheable = CacheKey(text, &key, &slot);
  if (cacheable && cache_[slot].key == key && cache_[slot].size == text.size()) return cache_[slot].symbol;
  uint64_t prefix;
  uint32_t prefix_size, number;
  Family* family =
      SplitNumbered(text, &prefix, &prefix_size, &number) ? FindFamily(prefix, prefix_size, true) : nullptr;
  Symbol s = family != nullptr ? InternNumbered(*family, number, text) : InternHashed(text);
  if (cacheable) cache_[slot] = {key, static_cast<uint32_t>(text.size()), s};
  return s;
}

Symbol SymbolTable::Find(absl::string_view text) const {
  uint64_t key;
  size_t slot;
  if (CacheKey(text, &key, &slot) && cache_[slot].key == key && cache_[slot].size == text.size())
    return cache_[slot].symbol;  // only Intern fills the cache
  uint64_t prefix;
  uint32_t prefix_size, number;
  if (SplitNumbered(text, &prefix, &prefix_size, &number)) {
    for (const Family& f : families_) {
      if (f.prefix != prefix || f.prefix_size != prefix_size) continue;
      if (number < f.by_number.size() && f.by_number[number] != kNoSymbol) return f.by_number[number];
      if (static_cast<int64_t>(number) > f.hashed_max) return kNoSymbol;
      break;
    }
  }
  auto it = index_.find(text);
  return it == index_.end() ? kNoSymbol : it->second;
}

void SymbolTable::Reserve(size_t n) {
  // Not index_: most names of a large text are numbered and never reach it.
  names_.reserve(n);
  AdviseHugePages(names_);
  family_reserve_ = n;
}

// ---------------------------------------------------------------------------------------------
// Types

namespace {
constexpr absl::string_view kDTypeNames[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i8", "u8", "bool"};
}  // namespace

absl::string_view DTypeName(DType dtype) { return kDTypeNames[static_cast<int>(dtype)]; }

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (int i = 0; i < static_cast<int>(std::size(kDTypeNames)); ++i) {
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

TypeId TypeTable::Intern(TypeKind kind, DType dtype, absl::Span<const int64_t> dims, absl::Span<const TypeId> kids) {
  std::string key;
  key.reserve(2 + dims.size() * sizeof(int64_t) + kids.size() * sizeof(TypeId));
  key.push_back(static_cast<char>(kind));
  key.push_back(static_cast<char>(dtype));
  key.append(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t));
  key.append(reinterpret_cast<const char*>(kids.data()), kids.size() * sizeof(TypeId));
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  TypeNode node;
  node.kind = kind;
  node.dtype = dtype;
  if (kind == TypeKind::kTensor) {
    node.items = {static_cast<uint32_t>(dims_.size()), static_cast<uint32_t>(dims.size())};
    dims_.insert(dims_.end(), dims.begin(), dims.end());
  } else {
    node.items = {static_cast<uint32_t>(kids_.size()), static_cast<uint32_t>(kids.size())};
    kids_.insert(kids_.end(), kids.begin(), kids.end());
  }
  TypeId id = static_cast<TypeId>(nodes_.size());
  nodes_.push_back(node);
  index_.emplace(std::move(key), id);
  return id;
}

TypeId TypeTable::Tensor(DType dtype, absl::Span<const int64_t> dims) {
  return Intern(TypeKind::kTensor, dtype, dims, {});
}
TypeId TypeTable::Tuple(absl::Span<const TypeId> fields) { return Intern(TypeKind::kTuple, DType::kF32, {}, fields); }
TypeId TypeTable::Func(absl::Span<const TypeId> params, TypeId result) {
  std::vector<TypeId> kids(params.begin(), params.end());
  kids.push_back(result);
  return Intern(TypeKind::kFunc, DType::kF32, {}, kids);
}
TypeId TypeTable::Storage() { return Intern(TypeKind::kStorage, DType::kF32, {}, {}); }

absl::Span<const int64_t> TypeTable::dims(TypeId t) const {
  const TypeNode& n = nodes_[t];
  return {dims_.data() + n.items.begin, n.items.count};
}
absl::Span<const TypeId> TypeTable::fields(TypeId t) const {
  const TypeNode& n = nodes_[t];
  return {kids_.data() + n.items.begin, n.items.count};
}
absl::Span<const TypeId> TypeTable::func_params(TypeId t) const {
  const TypeNode& n = nodes_[t];
  return {kids_.data() + n.items.begin, n.items.count - 1};
}
TypeId TypeTable::func_result(TypeId t) const {
  const TypeNode& n = nodes_[t];
  return kids_[n.items.begin + n.items.count - 1];
}

std::string TypeTable::ToString(TypeId t) const {
  std::string out;
  AppendTo(t, &out);
  return out;
}

void TypeTable::AppendTo(TypeId root, std::string* out) const {
  // Explicit stack of (type, next child to print).
  struct Frame {
    TypeId type;
    uint32_t next;
  };
  std::vector<Frame> stack;
  auto open = [&](TypeId t) {
    if (t == kNoType) {
      out->push_back('?');
      return;
    }
    const TypeNode& n = nodes_[t];
    switch (n.kind) {
      case TypeKind::kStorage: out->append("storage"); return;
      case TypeKind::kTensor: {
        absl::StrAppend(out, DTypeName(n.dtype));
        out->push_back('[');
        for (uint32_t i = 0; i < n.items.count; ++i) {
          if (i > 0) out->push_back(',');
          int64_t d = dims_[n.items.begin + i];
          if (d == kDynamicDim) {
            out->push_back('?');
          } else {
            absl::StrAppend(out, d);
          }
        }
        out->push_back(']');
        return;
      }
      case TypeKind::kTuple:
        out->push_back('(');
        stack.push_back({t, 0});
        return;
      case TypeKind::kFunc:
        out->append("fn(");
        stack.push_back({t, 0});
        return;
    }
  };
  open(root);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const TypeNode& n = nodes_[f.type];
    uint32_t i = f.next++;
    if (n.kind == TypeKind::kTuple) {
      if (i == n.items.count) {
        out->push_back(')');
        stack.pop_back();
        continue;
      }
      if (i > 0) out->append(", ");
      open(kids_[n.items.begin + i]);
    } else {  // kFunc: params, then `) -> ` and the result
      uint32_t num_params = n.items.count - 1;
      if (i > num_params) {
        stack.pop_back();
        continue;
      }
      if (i == num_params) {
        out->append(") -> ");
      } else if (i > 0) {
        out->append(", ");
      }
      open(kids_[n.items.begin + i]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Devices, config

DeviceId DeviceTable::Intern(const VirtualDevice& device) {
  auto it = index_.find(device);
  if (it != index_.end()) return it->second;
  DeviceId id = static_cast<DeviceId>(devices_.size());
  devices_.push_back(device);
  index_.emplace(device, id);
  return id;
}

std::vector<TargetKind> Config::EffectiveTargets() const {
  if (targets) return *targets;
  return {TargetKind::kLLVM, TargetKind::kCUDA};
}
VirtualDevice Config::EffectiveDefault() const {
  return default_device ? *default_device : VirtualDevice::ForDevice(DeviceType::kCUDA, 0);
}
VirtualDevice Config::EffectiveHost() const {
  return host_device ? *host_device : VirtualDevice::ForDevice(DeviceType::kCPU, 0);
}

// ---------------------------------------------------------------------------------------------
// Module

Module Module::Clone() const {
  Module c;
  // Interning the spellings in order gives every symbol its id again.
  c.symbols.Reserve(symbols.size());
  for (Symbol s = 0; s < symbols.size(); ++s) c.symbols.Intern(symbols.Name(s));
  // Every other member is a plain copy.
  std::tie(c.types, c.devices, c.config, c.items, c.globals, c.functions, c.params, c.blocks, c.bindings, c.operands,
           c.attrs, c.ints) =
      std::tie(types, devices, config, items, globals, functions, params, blocks, bindings, operands, attrs, ints);
  return c;
}

FuncId Module::FindGlobal(absl::string_view name) const {
  Symbol s = symbols.Find(name);
  if (s == kNoSymbol) return kNoFunc;
  auto it = globals.find(s);
  return it == globals.end() ? kNoFunc : it->second;
}

const Attr* Module::FindAttr(const Expr& e, absl::string_view key) const {
  Symbol s = symbols.Find(key);
  if (s == kNoSymbol) return nullptr;
  for (const Attr& a : Attrs(e)) {
    if (a.key == s) return &a;
  }
  return nullptr;
}

namespace {

// `field` of the parameter or binding that `v` names; `none` for no value.
template <typename T, typename Field>
T OfValue(const Module& m, ValueRef v, T none, Field field) {
  switch (v.kind) {
    case ValueKind::kParam: return field(m.params[v.index]);
    case ValueKind::kBinding: return field(m.bindings[v.index]);
    case ValueKind::kNone: break;
  }
  return none;
}

// Appends `items` to one of the module's pools; the range they take there.
template <typename T>
Range Append(std::vector<T>& pool, absl::Span<const T> items) {
  Range r{static_cast<uint32_t>(pool.size()), static_cast<uint32_t>(items.size())};
  pool.insert(pool.end(), items.begin(), items.end());
  return r;
}

}  // namespace

Symbol Module::ValueName(ValueRef v) const {
  return OfValue(*this, v, kNoSymbol, [](const auto& value) { return value.name; });
}

SourceLoc Module::ValueLoc(ValueRef v) const {
  return OfValue(*this, v, SourceLoc{}, [](const auto& value) { return value.loc; });
}

absl::string_view Module::OpName(const Expr& e) const {
  return e.kind == ExprKind::kOpCall ? Name(e.op) : absl::string_view();
}

Range Module::AddOperands(absl::Span<const Operand> ops) { return Append(operands, ops); }

Range Module::AddAttrs(absl::Span<const Attr> as) { return Append(attrs, as); }

namespace {
Operand OperandAt(OperandKind kind, SourceLoc loc) {
  Operand o;
  o.kind = kind;
  o.loc = loc;
  return o;
}
}  // namespace

Operand Module::LocalOperand(ValueRef v, SourceLoc loc) const {
  Operand o = OperandAt(OperandKind::kLocal, loc);
  o.symbol = ValueName(v);
  o.value = v;
  return o;
}

Operand Module::DeviceOperand(const VirtualDevice& vd, SourceLoc loc) {
  Operand o = OperandAt(OperandKind::kDevice, loc);
  o.index = devices.Intern(vd);
  return o;
}

Operand Module::NumberOperand(absl::string_view spelling, SourceLoc loc) {
  Operand o = OperandAt(OperandKind::kNumber, loc);
  o.symbol = symbols.Intern(spelling);
  return o;
}

Operand Module::IntListOperand(absl::Span<const int64_t> values, SourceLoc loc) {
  Operand o = OperandAt(OperandKind::kIntList, loc);
  o.index = static_cast<uint32_t>(ints.size());
  o.count = static_cast<uint32_t>(values.size());
  ints.insert(ints.end(), values.begin(), values.end());
  return o;
}

Operand Module::IdentOperand(absl::string_view ident, SourceLoc loc) {
  Operand o = OperandAt(OperandKind::kIdent, loc);
  o.symbol = symbols.Intern(ident);
  return o;
}

Operand Module::BoolOperand(bool value, SourceLoc loc) {
  Operand o = OperandAt(OperandKind::kBool, loc);
  o.index = value ? 1 : 0;
  return o;
}

Attr Module::MakeAttr(absl::string_view key, Operand value) {
  Attr a;
  a.key = symbols.Intern(key);
  a.value = value;
  return a;
}

Expr Module::MakeOpCall(absl::string_view op, absl::Span<const Operand> args, absl::Span<const Attr> as) {
  Expr e;
  e.kind = ExprKind::kOpCall;
  e.op = symbols.Intern(op);
  e.args = AddOperands(args);
  e.attrs = AddAttrs(as);
  return e;
}

BindingId Module::AddBinding(BlockId block, Symbol name, Expr expr, SourceLoc loc) {
  Binding b;
  b.name = name;
  b.loc = loc;
  b.block = block;
  b.expr = expr;
  BindingId id = static_cast<BindingId>(bindings.size());
  bindings.push_back(b);
  return id;
}

Symbol Module::FreshName(absl::string_view hint) {
  if (symbols.Find(hint) == kNoSymbol) return symbols.Intern(hint);
  for (uint64_t i = 1;; ++i) {
    std::string name = absl::StrCat(hint, "_", i);
    if (symbols.Find(name) == kNoSymbol) return symbols.Intern(name);
  }
}

std::string FunctionPath(const Module& m, FuncId func) {
  std::vector<absl::string_view> parts;
  for (FuncId f = func; f != kNoFunc; f = m.functions[f].parent) parts.push_back(m.Name(m.functions[f].name));
  std::string path;
  for (size_t i = parts.size(); i > 0; --i) {
    if (i != parts.size()) path.push_back('/');
    absl::StrAppend(&path, parts[i - 1]);
  }
  return path;
}

// ---------------------------------------------------------------------------------------------
// Walking

void WalkFunction(const Module& m, FuncId root, Visitor& v) {
  // A frame is an open block (with the next binding to visit) or a pending local-function exit.
  struct Frame {
    BlockId block;
    uint32_t next;      // next index in block.bindings
    BindingId pending;  // binding whose nested blocks are being visited; kNoBinding when none
    uint8_t stage;      // for `if`: 0 = then not yet entered, 1 = else not yet entered, 2 = done
  };
  std::vector<Frame> stack;
  v.EnterFunction(root);
  if (m.functions[root].body == kNoBlock) {
    v.ExitFunction(root);
    return;
  }
  if (v.Done()) return;
  v.EnterBlock(m.functions[root].body);
  stack.push_back({m.functions[root].body, 0, kNoBinding, 0});
  while (!stack.empty() && !v.Done()) {
    Frame& f = stack.back();
    if (f.pending != kNoBinding) {
      const Binding& b = m.bindings[f.pending];
      if (b.expr.kind == ExprKind::kIf && f.stage < 2) {
        BlockId arm = f.stage == 0 ? b.expr.then_block : b.expr.else_block;
        ++f.stage;
        v.EnterBlock(arm);
        stack.push_back({arm, 0, kNoBinding, 0});
        continue;
      }
      if (b.expr.kind == ExprKind::kFn && f.stage < 2) {
        f.stage = 2;
        FuncId fn = b.expr.func;
        v.EnterFunction(fn);
        if (v.Done()) return;
        BlockId body = m.functions[fn].body;
        if (body != kNoBlock) {
          v.EnterBlock(body);
          stack.push_back({body, 0, kNoBinding, 0});
          continue;
        }
        v.ExitFunction(fn);
      }
      BindingId done = f.pending;
      f.pending = kNoBinding;
      v.BindingDone(done);
      continue;
    }
    const Block& block = m.blocks[f.block];
    if (f.next == block.bindings.size()) {
      BlockId finished = f.block;
      stack.pop_back();
      v.ExitBlock(finished);
      // A function body closes its function; an `if` arm returns to its binding's frame.
      if (block.owner == kNoBinding) {
        FuncId fn = block.func;
        v.ExitFunction(fn);
      }
      continue;
    }
    BindingId b = block.bindings[f.next++];
    v.Binding(b);
    ExprKind kind = m.bindings[b].expr.kind;
    if (kind == ExprKind::kIf || kind == ExprKind::kFn) {
      f.pending = b;
      f.stage = 0;
    } else {
      v.BindingDone(b);
    }
  }
}

void WalkModule(const Module& m, Visitor& v) {
  for (FuncId f : m.items) WalkFunction(m, f, v);
}

}  // namespace vdev::ir
