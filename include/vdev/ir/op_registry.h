// Op registry: arity, attributes and type rule of each primitive op, extensible at run time.
//
// VerifyModule checks every call of a registered op against its OpDef and infers the call's type
// with its rule; calls of unregistered ops are accepted as written (a frontend's op set is open)
// and have an unknown type unless one is written. OpRegistry::Global() holds the built-in ops of
// docs/spec/ir-text.md and the standard set (elementwise unary/binary with broadcasting, matmul,
// reshape, split, concat, reductions, conv2d, layout_transform, allreduce). Example:
//
//   OpDef def{.name = "my.gelu", .min_args = 1, .max_args = 1, .infer = SameAsFirstArg};
//   VDEV_RETURN_IF_ERROR(OpRegistry::Global().Register(std::move(def)));
#ifndef VDEV_OP_REGISTRY_H_
#define VDEV_OP_REGISTRY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "vdev/ir/ir.h"

namespace vdev::ir {

// One call site as a type rule sees it.
class OpCall {
 public:
  OpCall(Module& module, const Expr& expr, absl::Span<const TypeId> arg_types)
      : module_(module), expr_(expr), arg_types_(arg_types) {}

  Module& module() const { return module_; }
  TypeTable& types() const { return module_.types; }
  const Expr& expr() const { return expr_; }
  size_t num_args() const { return expr_.args.count; }
  const Operand& arg(size_t i) const { return module_.operands[expr_.args.begin + i]; }
  // kNoType when unknown, and for numbers and device literals.
  TypeId arg_type(size_t i) const { return arg_types_[i]; }
  bool arg_is_number(size_t i) const { return arg(i).kind == OperandKind::kNumber; }

  const Operand* attr(absl::string_view key) const;
  // An integer attribute (`axis=1`); nullopt when absent. InvalidArgument when present but not one.
  absl::StatusOr<std::optional<int64_t>> IntAttr(absl::string_view key) const;
  // `[1, 2]`, or a single integer as a one-element list.
  absl::StatusOr<std::optional<std::vector<int64_t>>> IntsAttr(absl::string_view key) const;
  // An identifier or a string (without quotes).
  absl::StatusOr<std::optional<std::string>> TextAttr(absl::string_view key) const;
  absl::StatusOr<std::optional<bool>> BoolAttr(absl::string_view key) const;

  // An InvalidArgument status that VerifyModule reports at `loc` (default: the op's name).
  absl::Status Error(std::string message, SourceLoc loc = {}) const;
  SourceLoc error_loc() const { return error_loc_; }

 private:
  Module& module_;
  const Expr& expr_;
  absl::Span<const TypeId> arg_types_;
  mutable SourceLoc error_loc_;
};

// The result type of a call, kNoType when it cannot be known from what is known, or an error
// (OpCall::Error) when the operands' types are inconsistent.
using TypeRule = std::function<absl::StatusOr<TypeId>(const OpCall&)>;

struct OpDef {
  std::string name;
  int min_args = 0;
  int max_args = -1;             // -1: no upper bound
  std::vector<int> device_args;  // positions that must be device literals (on_device: 1)
  std::vector<std::string> required_attrs;
  TypeRule infer;  // empty: the result type is unknown
};

// Rules for frontends registering their own ops.
absl::StatusOr<TypeId> SameAsFirstArg(const OpCall& call);

class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Built-in and standard ops; shared by the process, thread-safe.
  static OpRegistry& Global();
  // Adds the built-in ops of ir-text.md and the standard set to a registry.
  static void AddBuiltinOps(OpRegistry& registry);
  static void AddStandardOps(OpRegistry& registry);

  // AlreadyExists when an op of that name is registered.
  absl::Status Register(OpDef def);
  // nullptr when unknown. The pointer stays valid for the registry's lifetime.
  const OpDef* Find(absl::string_view name) const;
  // Every registered op's name, sorted (for "did you mean" suggestions).
  std::vector<std::string> Names() const;

 private:
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::string, std::unique_ptr<OpDef>> ops_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace vdev::ir

#endif  // VDEV_OP_REGISTRY_H_
