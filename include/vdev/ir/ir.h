// The vdev IR: the in-memory form of the text format of docs/spec/ir-text.md.
//
// Data model. A `Module` owns flat arenas; everything else is a small struct that refers to other
// entities by 32-bit index, so a million bindings cost a few flat vectors and no per-node allocation:
//
//   Module::functions  Function   every `def`, `kernel` and local `fn`, in the order their headers
//                                 appear in the text (a local fn comes after its enclosing function).
//   Module::params     Param      parameters; a function owns the range Function::params.
//   Module::blocks     Block      `{ … return atom }` bodies: function bodies and `if` arms. A block
//                                 lists its bindings in program order (Block::bindings).
//   Module::bindings   Binding    `%name [: type] = expr`; its Expr is stored inline.
//   Module::operands   Operand    atoms, device literals and attribute values; an Expr owns ranges.
//   Module::attrs      Attr       `key=value` of op calls.
//   Module::ints       int64_t    elements of `[1, 2, 3]` constants.
// Names (`%x`, `@f`, op names, attribute keys, number spellings) are interned in Module::symbols as
// `Symbol`s that keep the source spelling (without the sigil). Types are hash-consed in
// Module::types (equal types have equal `TypeId`s); virtual devices are interned in Module::devices.
//
// Local names are resolved: an Operand of kind kLocal carries the ValueRef (parameter or binding) it
// names, so passes never look names up. `@name` operands and global calls carry the callee's FuncId.
//
// Editing. Entities are never moved or deleted, so ids stay valid across edits:
//   * change a binding in place: `m.bindings[b].expr = m.MakeOpCall("device_copy", {…}, {…})`;
//   * insert a binding: `BindingId b = m.AddBinding(block, m.FreshName("st"), expr)`, then insert b
//     into that Block::bindings (or build a new vector for the block and swap it in, for many);
//   * set a device: `m.params[p].device = m.devices.Intern(vd)`, `m.functions[f].result_device = …`.
// Operand/attr ranges are append-only: rebuilding an expression appends new ranges; the old ones
// become unreferenced (harmless garbage until the module is dropped). Attributes are never written
// through a range, so expressions may share one (PlanDevices gives all its copies between the same
// two devices one `src=…, dst=…` pair); to change an expression's attributes, give it a new range.
//
// Traversal. Blocks nest (fn closures, if arms) to any depth; `WalkModule` visits everything in
// program order with an explicit stack, never recursing.
//
// Text, checks and types: ir_text.h (ParseModule, VerifyModule, PrintModule); VerifyModule also
// fills Binding::type and Function::type from op_registry.h's rules. builtin_ops.h reads and
// makes on_device/device_copy/alloc_storage calls; ir_builder.h builds modules from C++.
#ifndef VDEV_IR_H_
#define VDEV_IR_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "vdev/lattice/target.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/support/diagnostic.h"

namespace vdev::ir {

using Symbol = uint32_t;
using TypeId = uint32_t;
using DeviceId = uint32_t;
using FuncId = uint32_t;
using ParamId = uint32_t;
using BlockId = uint32_t;
using BindingId = uint32_t;

inline constexpr uint32_t kNone = UINT32_MAX;
inline constexpr Symbol kNoSymbol = kNone;
inline constexpr TypeId kNoType = kNone;  // not written / not (yet) known
inline constexpr DeviceId kNoDevice = kNone;
inline constexpr FuncId kNoFunc = kNone;
inline constexpr BlockId kNoBlock = kNone;
inline constexpr BindingId kNoBinding = kNone;

// A half-open range [begin, begin + count) of one of the Module arenas.
struct Range {
  uint32_t begin = 0;
  uint32_t count = 0;
  friend bool operator==(const Range&, const Range&) = default;
};

// Interned strings; a Symbol's spelling never changes and stays valid for the table's lifetime.
class SymbolTable {
 public:
  SymbolTable() = default;
  SymbolTable(const SymbolTable&) = delete;
  SymbolTable& operator=(const SymbolTable&) = delete;
  SymbolTable(SymbolTable&&) = default;
  SymbolTable& operator=(SymbolTable&&) = default;

  Symbol Intern(absl::string_view text);
  // kNoSymbol when `text` was never interned.
  Symbol Find(absl::string_view text) const;
  // Prepares for about `n` symbols (saves rehashing while a large text is read).
  void Reserve(size_t n);
  absl::string_view Name(Symbol s) const {
    const char* p = names_[s];
    size_t n = static_cast<unsigned char>(p[-1]);
    if (n == kLongName) {
      uint32_t long_size;
      std::memcpy(&long_size, p - 5, sizeof long_size);
      n = long_size;
    }
    return absl::string_view(p, n);
  }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t chunk_left_ = 0;
  char* chunk_next_ = nullptr;
  // Names that end in digits (%0, %b17) hash so that consecutive numbers share a probe group:
  // programs define them in order, and a million-name table then stays cache-friendly.
  struct NameHash {
    size_t operator()(absl::string_view name) const;
  };
  // A direct-mapped cache of recent short names (<= 8 bytes, keyed by their bytes): texts use a
  // few names (ops, a parameter, the previous binding) over and over.
  struct CacheEntry {
    uint64_t key = 0;
    uint32_t size = UINT32_MAX;
    Symbol symbol = kNoSymbol;
  };
  static constexpr size_t kCacheSize = 256;
  static bool CacheKey(absl::string_view text, uint64_t* key, size_t* slot) {
    const size_t n = text.size();
    if (n > 8) return false;
    // A key unique among spellings of one size, read with fixed-size loads (a memcpy of variable
    // size is a library call): 4..8 bytes as the first and the last four (overlapping), 1..3 bytes
    // as the first, middle and last.
    const unsigned char* p = reinterpret_cast<const unsigned char*>(text.data());
    uint64_t k = 0;
    if (n >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + n - 4, 4);
      k = lo | (uint64_t{hi} << 32);
    } else if (n > 0) {
      k = p[0] | (uint64_t{p[n / 2]} << 8) | (uint64_t{p[n - 1]} << 16);
    }
    *key = k;
    *slot = static_cast<size_t>(((k ^ text.size()) * 0x9E3779B97F4A7C15ull) >> 56);
    return true;
  }

  // Names made of a short prefix and a decimal number (%0, %b17, %a9: what generators and
  // frontends emit by the million) skip the hash table: a family per prefix maps the number to the
  // symbol through a dense vector (4 bytes a name instead of a hash slot, no hashing, no compare).
  // A number too far beyond its family's count goes to index_ (hashed_max keeps lookups exact).
  struct Family {
    uint64_t prefix = 0;  // the prefix's bytes (at most 8)
    uint32_t prefix_size = 0;
    uint32_t count = 0;       // names held in by_number
    int64_t hashed_max = -1;  // the largest number of this family held in index_ instead
    std::vector<Symbol> by_number;
  };
  static constexpr size_t kMaxFamilies = 16;
  Family* FindFamily(uint64_t prefix, uint32_t prefix_size, bool create);
  Symbol InternNumbered(Family& family, uint32_t number, absl::string_view text);
  Symbol InternHashed(absl::string_view text);
  Symbol Store(absl::string_view text);

  // A spelling is stored right after its size: one byte, or kLongName after a 4-byte size; so a
  // symbol costs a pointer here (8 bytes, not a 16-byte string_view) and a byte in the chunk.
  static constexpr unsigned char kLongName = 0xFF;
  std::vector<const char*> names_;
  absl::flat_hash_map<absl::string_view, Symbol, NameHash> index_;
  std::vector<Family> families_;
  size_t family_reserve_ = 0;  // numbers each new family is sized for up front (Reserve)
  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(kCacheSize);  // written by Intern only
};

// ---------------------------------------------------------------------------------------------
// Types: tensors with static or dynamic (`?`) dims, tuples, functions, storage. Hash-consed.

enum class DType : uint8_t { kF64, kF32, kF16, kBF16, kI64, kI32, kI8, kU8, kBool };
absl::string_view DTypeName(DType dtype);
// Bytes of one element; 1 for bool, u8 and i8.
constexpr size_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64: return 8;
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool: return 1;
  }
  return 1;
}
std::optional<DType> DTypeFromName(absl::string_view name);

enum class TypeKind : uint8_t { kTensor, kTuple, kFunc, kStorage };

inline constexpr int64_t kDynamicDim = -1;  // `?`

struct TypeNode {
  TypeKind kind = TypeKind::kStorage;
  DType dtype = DType::kF32;  // kTensor only
  Range items;                // kTensor: dims in TypeTable; kTuple: fields; kFunc: params then result
};

class TypeTable {
 public:
  TypeId Tensor(DType dtype, absl::Span<const int64_t> dims);
  TypeId Tuple(absl::Span<const TypeId> fields);
  TypeId Func(absl::Span<const TypeId> params, TypeId result);
  TypeId Storage();

  const TypeNode& node(TypeId t) const { return nodes_[t]; }
  TypeKind kind(TypeId t) const { return nodes_[t].kind; }
  absl::Span<const int64_t> dims(TypeId t) const;        // kTensor
  absl::Span<const TypeId> fields(TypeId t) const;       // kTuple
  absl::Span<const TypeId> func_params(TypeId t) const;  // kFunc
  TypeId func_result(TypeId t) const;                    // kFunc
  size_t size() const { return nodes_.size(); }

  // Canonical text: `f32[5,?]`, `(f32[2], bool[])`, `fn(f32[2]) -> f32[2]`, `storage`; `?` for
  // kNoType. Iterative: types nested 10^4 deep print without recursion.
  std::string ToString(TypeId t) const;
  void AppendTo(TypeId t, std::string* out) const;

 private:
  TypeId Intern(TypeKind kind, DType dtype, absl::Span<const int64_t> dims, absl::Span<const TypeId> kids);
  std::vector<TypeNode> nodes_;
  std::vector<int64_t> dims_;
  std::vector<TypeId> kids_;
  absl::flat_hash_map<std::string, TypeId> index_;  // key: kind, dtype and items, as bytes
};

// Interned virtual devices: equal devices get equal ids. References stay valid (deque storage).
class DeviceTable {
 public:
  DeviceId Intern(const VirtualDevice& device);
  const VirtualDevice& Get(DeviceId id) const { return devices_[id]; }
  size_t size() const { return devices_.size(); }

 private:
  std::deque<VirtualDevice> devices_;
  absl::flat_hash_map<VirtualDevice, DeviceId> index_;
};

// ---------------------------------------------------------------------------------------------
// Values and operands.

enum class ValueKind : uint8_t { kNone, kParam, kBinding };

// A local value: a parameter (index into Module::params) or a binding (into Module::bindings).
// `index` comes first so that the padding after `kind` is at the end, where Operand reuses it.
struct ValueRef {
  uint32_t index = 0;
  ValueKind kind = ValueKind::kNone;

  static ValueRef Param(ParamId p) { return {p, ValueKind::kParam}; }
  static ValueRef Binding(BindingId b) { return {b, ValueKind::kBinding}; }
  bool valid() const { return kind != ValueKind::kNone; }
  bool is_param() const { return kind == ValueKind::kParam; }
  bool is_binding() const { return kind == ValueKind::kBinding; }
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ValueRef& v) {
    return H::combine(std::move(h), v.kind, v.index);
  }
};

// An atom, a device literal or an attribute value.
enum class OperandKind : uint8_t {
  kLocal,    // %name          symbol = name, value = what it names
  kGlobal,   // @name          symbol = name, index = FuncId (kNoFunc until resolved)
  kNumber,   // 3, -2.5, 1e-3  symbol = the spelling, printed verbatim
  kIntList,  // [1, 2, 3]      index/count = range of Module::ints (an i64 tensor constant)
  kDevice,   // cuda:0, ?      index = DeviceId
  kIdent,    // sum, NCHW      symbol (attribute values only)
  kBool,     // true, false    index = 0 or 1 (attribute values only)
  kString,   // "text"         symbol = the spelling with quotes and escapes, verbatim
};

struct Operand {
  // `kind` lives in the tail padding of `value`: 28 bytes an operand instead of 32 (two per
  // binding in typical programs).
  [[no_unique_address]] ValueRef value;
  OperandKind kind = OperandKind::kLocal;
  Symbol symbol = kNoSymbol;
  uint32_t index = kNone;
  uint32_t count = 0;
  SourceLoc loc;

  bool is_local() const { return kind == OperandKind::kLocal; }
  bool is_device() const { return kind == OperandKind::kDevice; }
};
static_assert(sizeof(Operand) == 28, "Operand::kind is expected in ValueRef's tail padding");

// `key=value` of an op call. Attributes are kept as written, in order.
struct Attr {
  Symbol key = kNoSymbol;
  Operand value;
  SourceLoc loc;  // of the key
};

// ---------------------------------------------------------------------------------------------
// Expressions, bindings, blocks, functions.

enum class ExprKind : uint8_t {
  kOpCall,      // op(args…, key=value…)   op; args = positional atoms/devices; attrs
  kCallGlobal,  // @f(args…)               op = callee name; func = callee; args
  kCallValue,   // %f(args…)               args[0] = the callee (a local), args[1..] = arguments
  kTuple,       // (a, b, …)               args = fields
  kProject,     // %t.i                    args[0] = the tuple; index
  kIf,          // if c {…} else {…}       args[0] = condition; then_block, else_block
  kFn,          // fn[primitive](…) {…}    func = the local function
  kConst,       // const(T)                const_type
  kAlias,       // atom                    args[0]
};

// The right-hand side of a binding. Every operand the expression uses is in `args`, whatever the
// kind, except that an op call's attribute may name a local value too (`foo(t=%1)`): a pass that
// needs every read walks both (ForEachLocalRead).
struct Expr {
  ExprKind kind = ExprKind::kAlias;
  Symbol op = kNoSymbol;
  FuncId func = kNoFunc;
  Range args;   // Module::operands
  Range attrs;  // Module::attrs (kOpCall)
  uint32_t index = 0;
  BlockId then_block = kNoBlock;
  BlockId else_block = kNoBlock;
  TypeId const_type = kNoType;
  SourceLoc loc;  // of the expression's first token (the op name, `@f`, `%f`, `(`, `if`, `fn`, …)
};

struct Binding {
  Symbol name = kNoSymbol;
  SourceLoc loc;                   // of `%name`
  TypeId declared_type = kNoType;  // `%x: T = …` (printed)
  TypeId type = kNoType;           // declared or inferred (InferTypes); never printed
  BlockId block = kNoBlock;        // the block that lists it
  Expr expr;
};

struct Param {
  Symbol name = kNoSymbol;
  SourceLoc loc;  // of `%name`
  TypeId type = kNoType;
  DeviceId device = kNoDevice;  // `on vd`, or kNoDevice
  SourceLoc device_loc;         // of the literal after `on`
  FuncId func = kNoFunc;
};

struct Block {
  FuncId func = kNoFunc;            // the function the block belongs to
  BindingId owner = kNoBinding;     // the `if` binding for an arm; kNoBinding for a function body
  std::vector<BindingId> bindings;  // program order
  Operand result;                   // `return atom`
  SourceLoc loc;                    // of `{`
  SourceLoc return_loc;             // of `return`
  bool has_return = false;
};

enum class FuncKind : uint8_t { kGlobal, kKernel, kLocal };

struct Function {
  FuncKind kind = FuncKind::kGlobal;
  bool primitive = false;              // fn[primitive]
  Symbol name = kNoSymbol;             // global/kernel name; for a local fn, its binding's name
  SourceLoc loc;                       // of `@name` (global, kernel) or `fn` (local)
  Range params;                        // Module::params
  TypeId result_type = kNoType;        // written `-> T` (printed)
  DeviceId result_device = kNoDevice;  // written `on vd` after the result type
  SourceLoc result_device_loc;
  BlockId body = kNoBlock;         // kNoBlock for a kernel
  FuncId parent = kNoFunc;         // enclosing function of a local fn
  BindingId binding = kNoBinding;  // the binding whose expression is this local fn
  TypeId type = kNoType;           // the fn type, once inferred
};

// `config { targets = [...], default = vd, host = vd }`; absent entries take the spec defaults.
struct Config {
  bool present = false;
  SourceLoc loc;
  std::optional<std::vector<TargetKind>> targets;
  std::optional<VirtualDevice> default_device;
  std::optional<VirtualDevice> host_device;
  SourceLoc targets_loc, default_loc, host_loc;

  std::vector<TargetKind> EffectiveTargets() const;  // [llvm, cuda] when absent
  VirtualDevice EffectiveDefault() const;            // cuda:0 when absent
  VirtualDevice EffectiveHost() const;               // cpu:0 when absent
};

struct Module {
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;
  // A deep copy with the same ids (symbols, types, devices, entities), e.g. to keep a pass's input.
  Module Clone() const;

  SymbolTable symbols;
  TypeTable types;
  DeviceTable devices;
  Config config;

  std::vector<FuncId> items;  // top-level `def`s and `kernel`s in program order
  absl::flat_hash_map<Symbol, FuncId> globals;

  std::vector<Function> functions;
  std::vector<Param> params;
  std::vector<Block> blocks;
  std::vector<Binding> bindings;
  std::vector<Operand> operands;
  std::vector<Attr> attrs;
  std::vector<int64_t> ints;

  // --- Reading -------------------------------------------------------------------------------
  absl::string_view Name(Symbol s) const { return symbols.Name(s); }
  // The global function or kernel called `name`, or kNoFunc.
  FuncId FindGlobal(absl::string_view name) const;
  absl::Span<const Operand> Args(const Expr& e) const { return Slice(operands, e.args); }
  absl::Span<const Attr> Attrs(const Expr& e) const { return Slice(attrs, e.attrs); }
  absl::Span<const Param> Params(const Function& f) const { return Slice(params, f.params); }
  absl::Span<const int64_t> Ints(const Operand& o) const { return {ints.data() + o.index, o.count}; }
  const VirtualDevice& Device(DeviceId d) const { return devices.Get(d); }
  // The attribute `key` of an op call, or nullptr.
  const Attr* FindAttr(const Expr& e, absl::string_view key) const;
  // Name and location of a local value's definition.
  Symbol ValueName(ValueRef v) const;
  SourceLoc ValueLoc(ValueRef v) const;
  // The op name of a kOpCall binding ("" for other kinds).
  absl::string_view OpName(const Expr& e) const;

  // --- Editing -------------------------------------------------------------------------------
  Range AddOperands(absl::Span<const Operand> ops);
  Range AddAttrs(absl::Span<const Attr> as);
  Operand LocalOperand(ValueRef v, SourceLoc loc = {}) const;
  Operand DeviceOperand(const VirtualDevice& vd, SourceLoc loc = {});
  Operand NumberOperand(absl::string_view spelling, SourceLoc loc = {});
  Operand IntListOperand(absl::Span<const int64_t> values, SourceLoc loc = {});
  Operand IdentOperand(absl::string_view ident, SourceLoc loc = {});
  Operand BoolOperand(bool value, SourceLoc loc = {});
  Attr MakeAttr(absl::string_view key, Operand value);
  // An op call expression; its operands and attributes are appended to the arenas.
  Expr MakeOpCall(absl::string_view op, absl::Span<const Operand> args, absl::Span<const Attr> attrs = {});
  // A new binding of `block`, not yet listed in it: insert the id into Block::bindings.
  BindingId AddBinding(BlockId block, Symbol name, Expr expr, SourceLoc loc = {});
  // A name that no symbol of the module spells yet: `hint`, else `hint_1`, `hint_2`, …
  Symbol FreshName(absl::string_view hint);

 private:
  template <typename T>
  static absl::Span<const T> Slice(const std::vector<T>& v, Range r) {
    return absl::Span<const T>(v.data() + r.begin, r.count);
  }
};

// Calls `f(const Operand&)` for every operand of `e` that names a local value: its arguments, then its
// attribute values. The grammar lets an attribute's value be an atom (`foo(t=%1)`); the planner keeps
// such an attribute verbatim, but the value is read there, so its binding must stay defined (and
// alive) like an argument's. Nested blocks are not visited.
template <typename F>
void ForEachLocalRead(const Module& m, const Expr& e, F&& f) {
  for (const Operand& o : m.Args(e)) {
    if (o.is_local()) f(o);
  }
  for (const Attr& a : m.Attrs(e)) {
    if (a.value.is_local()) f(a.value);
  }
}

// A function's path as plan-json.md names it: `main` for @main, `main/f` for the local function
// bound by %f in @main, `main/f/inner` for one nested in it.
std::string FunctionPath(const Module& module, FuncId func);

// ---------------------------------------------------------------------------------------------
// Traversal in program order, without recursion.
//
// For each top-level item: EnterFunction; for its body (none for a kernel): EnterBlock, then per
// binding Binding (before any nested block), the nested blocks of an `if` (then, else) or the
// function of a `fn` (EnterFunction … ExitFunction), then BindingDone; ExitBlock; ExitFunction.
class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void EnterFunction(FuncId) {}
  virtual void ExitFunction(FuncId) {}
  virtual void EnterBlock(BlockId) {}
  virtual void ExitBlock(BlockId) {}
  virtual void Binding(BindingId) {}
  virtual void BindingDone(BindingId) {}
  // Checked before each step: true stops the walk (e.g. after an error).
  virtual bool Done() const { return false; }
};
void WalkModule(const Module& module, Visitor& visitor);
// Walks one function (and the local functions it contains).
void WalkFunction(const Module& module, FuncId func, Visitor& visitor);

}  // namespace vdev::ir

#endif  // VDEV_IR_H_
