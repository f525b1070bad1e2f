// ModuleBuilder: builds IR modules from C++ (compiler frontends), the same programs the text builds.
//
// The builder keeps a stack of open blocks; bindings go into the innermost one. Example, the module
// of `def @main(%a: f32[2], %b: f32[2]) -> f32[2] { %0 = add(%a, %b)  return %0 }`:
//
//   ModuleBuilder b;
//   TypeId t = b.TensorType(DType::kF32, {2});
//   b.BeginFunction("main");
//   ValueRef a = b.Param("a", t), c = b.Param("b", t);
//   b.SetResult(t);
//   ValueRef s = b.Op("add", {a, c}, {}, "0");
//   b.Return(s);
//   b.EndFunction();
//   absl::StatusOr<Module> m = std::move(b).Finish();   // resolves @names, verifies
//
// Names are optional: an empty name gets the next free `%N` of the function. `@name` references
// may precede the definition; they are resolved by Finish(), which also runs VerifyModule.
// Misuse (ending a block without Return, EndIf outside an if, …) is reported by Finish().
#ifndef VDEV_IR_BUILDER_H_
#define VDEV_IR_BUILDER_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::ir {

// An operand as a frontend spells it: a local value, a global, a number, an i64 list, a virtual
// device, or (attribute values only) an identifier, a boolean or a string.
class Arg {
 public:
  Arg(ValueRef value) : kind_(OperandKind::kLocal), value_(value) {}                  // NOLINT: implicit by design
  Arg(const VirtualDevice& device) : kind_(OperandKind::kDevice), device_(device) {}  // NOLINT
  static Arg Global(absl::string_view name);
  static Arg Int(int64_t value);
  static Arg Number(absl::string_view spelling);  // e.g. "2.5", printed verbatim
  static Arg IntList(std::vector<int64_t> values);
  static Arg Ident(absl::string_view ident);
  static Arg Bool(bool value);
  static Arg String(absl::string_view contents);  // quoted and escaped when printed

 private:
  friend class ModuleBuilder;
  Arg() = default;
  OperandKind kind_ = OperandKind::kLocal;
  ValueRef value_;
  VirtualDevice device_;
  std::string text_;
  std::vector<int64_t> ints_;
  bool flag_ = false;
};

struct NamedArg {
  std::string key;
  Arg value;
};

class ModuleBuilder {
 public:
  ModuleBuilder() = default;

  // --- Types ---------------------------------------------------------------------------------
  TypeId TensorType(DType dtype, std::initializer_list<int64_t> dims);  // kDynamicDim for `?`
  TypeId TensorType(DType dtype, absl::Span<const int64_t> dims);
  TypeId TupleType(absl::Span<const TypeId> fields);
  TypeId FuncType(absl::Span<const TypeId> params, TypeId result);
  TypeId StorageType();

  // --- Config --------------------------------------------------------------------------------
  void SetTargets(std::vector<TargetKind> targets);
  void SetDefaultDevice(const VirtualDevice& device);
  void SetHostDevice(const VirtualDevice& device);

  // --- Functions -----------------------------------------------------------------------------
  // `def @name(…)`: opens the function and its body block. Parameters follow with Param().
  FuncId BeginFunction(absl::string_view name);
  // `kernel @name(…) -> T`: parameters follow with Param(), then EndKernel().
  FuncId BeginKernel(absl::string_view name);
  void EndKernel();
  ValueRef Param(absl::string_view name, TypeId type, std::optional<VirtualDevice> device = std::nullopt);
  // `-> T [on vd]` of the innermost open function.
  void SetResult(TypeId type, std::optional<VirtualDevice> device = std::nullopt);
  void EndFunction();

  // --- Bindings in the innermost open block ---------------------------------------------------
  ValueRef Op(absl::string_view op, std::vector<Arg> args, std::vector<NamedArg> attrs = {},
              absl::string_view name = "", TypeId declared_type = kNoType);
  ValueRef Call(absl::string_view global, std::vector<Arg> args, absl::string_view name = "");
  ValueRef CallValue(ValueRef callee, std::vector<Arg> args, absl::string_view name = "");
  ValueRef Tuple(std::vector<Arg> fields, absl::string_view name = "");
  ValueRef Project(ValueRef tuple, uint32_t index, absl::string_view name = "");
  ValueRef Const(TypeId type, absl::string_view name = "");
  ValueRef Alias(Arg value, absl::string_view name = "");
  // Sets the written type of the last binding made.
  void DeclareType(TypeId type);

  // `%name = if cond { … } else { … }`: BeginIf opens the then-block, Else() the else-block,
  // EndIf() closes the binding and returns it. Each arm ends with Return().
  void BeginIf(Arg cond, absl::string_view name = "");
  void Else();
  ValueRef EndIf();

  // `%name = fn[primitive](…) { … }`: parameters with Param(), result with SetResult(), body
  // bindings, Return(), then EndFn() returns the binding holding the function.
  FuncId BeginFn(absl::string_view name = "", bool primitive = false);
  ValueRef EndFn();

  // `return atom` of the innermost open block.
  void Return(Arg value);

  // Resolves @names, checks that every block was closed, and verifies. Consumes the builder.
  absl::StatusOr<Module> Finish() &&;

  // The module under construction (e.g. to read names or intern devices while building).
  Module& module() { return module_; }

 private:
  FuncId BeginGlobal(FuncKind kind, absl::string_view name);
  Operand Lower(const Arg& arg);
  Range LowerAll(absl::Span<const Arg> args);
  BindingId NewBinding(absl::string_view name, Expr expr);
  Symbol BindingName(absl::string_view name);
  void Fail(std::string message);

  Module module_;
  std::vector<FuncId> open_funcs_;
  std::vector<BlockId> open_blocks_;
  std::vector<BindingId> open_ifs_;
  std::vector<uint32_t> next_auto_name_;  // per open function
  BindingId last_binding_ = kNoBinding;
  std::string error_;
};

}  // namespace vdev::ir

#endif  // VDEV_IR_BUILDER_H_
