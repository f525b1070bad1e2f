// The op registry, OpCall's attribute accessors and the registration of the built-in and standard
// ops; the standard ops' type rules are in type_rules.cc (element-wise, reductions, nn) and
// shape_rules.cc (reshaping and indexing).
#include "vdev/ir/op_registry.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "absl/strings/str_cat.h"
#include "internal/type_rules.h"
#include "vdev/support/status_macros.h"

namespace vdev::ir {

// ---------------------------------------------------------------------------------------------
// OpCall

const Operand* OpCall::attr(absl::string_view key) const {
  const Attr* a = module_.FindAttr(expr_, key);
  return a == nullptr ? nullptr : &a->value;
}

namespace {

std::optional<int64_t> AsInt(const Module& m, const Operand& o) {
  if (o.kind != OperandKind::kNumber) return std::nullopt;
  absl::string_view s = m.Name(o.symbol);
  int64_t v;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> OpCall::IntAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> v = AsInt(module_, *o);
  if (!v) return Error(absl::StrCat("attribute '", key, "' must be an integer"), o->loc);
  return v;
}

absl::StatusOr<std::optional<std::vector<int64_t>>> OpCall::IntsAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<std::vector<int64_t>>();
  if (o->kind == OperandKind::kIntList) {
    absl::Span<const int64_t> v = module_.Ints(*o);
    return std::optional<std::vector<int64_t>>(std::vector<int64_t>(v.begin(), v.end()));
  }
  std::optional<int64_t> v = AsInt(module_, *o);
  if (!v) return Error(absl::StrCat("attribute '", key, "' must be an integer or a list of integers"), o->loc);
  return std::optional<std::vector<int64_t>>(std::vector<int64_t>{*v});
}

absl::StatusOr<std::optional<std::string>> OpCall::TextAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<std::string>();
  if (o->kind == OperandKind::kIdent) return std::optional<std::string>(std::string(module_.Name(o->symbol)));
  if (o->kind == OperandKind::kString) {
    absl::string_view s = module_.Name(o->symbol);
    return std::optional<std::string>(std::string(s.substr(1, s.size() - 2)));
  }
  return Error(absl::StrCat("attribute '", key, "' must be a name or a string"), o->loc);
}

absl::StatusOr<std::optional<bool>> OpCall::BoolAttr(absl::string_view key) const {
  const Operand* o = attr(key);
  if (o == nullptr) return std::optional<bool>();
  if (o->kind != OperandKind::kBool) return Error(absl::StrCat("attribute '", key, "' must be true or false"), o->loc);
  return std::optional<bool>(o->index != 0);
}

absl::Status OpCall::Error(std::string message, SourceLoc loc) const {
  error_loc_ = loc.valid() ? loc : expr_.loc;
  return absl::InvalidArgumentError(absl::StrCat("'", module_.Name(expr_.op), "': ", message));
}

// ---------------------------------------------------------------------------------------------
// Registry

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    AddBuiltinOps(*r);
    AddStandardOps(*r);
    return r;
  }();
  return *registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  absl::MutexLock lock(&mutex_);
  std::string name = def.name;
  auto [it, inserted] = ops_.try_emplace(name, nullptr);
  if (!inserted) return absl::AlreadyExistsError(absl::StrCat("op '", name, "' is already registered"));
  it->second = std::make_unique<OpDef>(std::move(def));
  return absl::OkStatus();
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mutex_);
    for (const auto& [name, def] : ops_) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

const OpDef* OpRegistry::Find(absl::string_view name) const {
  absl::MutexLock lock(&mutex_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// The built-in ops

namespace {

using internal::AddOp;
using internal::TensorArg;
using internal::Unary;

absl::StatusOr<TypeId> ShapeOf(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t) return kNoType;
  return c.types().Tensor(DType::kI64, {static_cast<int64_t>(c.types().dims(*t).size())});
}

absl::StatusOr<TypeId> AllocTensor(const OpCall& c) {
  TypeId storage = c.arg_type(0);
  if (storage != kNoType && c.types().kind(storage) != TypeKind::kStorage)
    return c.Error(absl::StrCat("operand 1 must be storage, not ", c.types().ToString(storage)), c.arg(0).loc);
  VDEV_ASSIGN_OR_RETURN(std::optional<std::string> dtype_name, c.TextAttr("dtype"));
  if (!dtype_name || c.arg(2).kind != OperandKind::kIntList) return kNoType;
  std::optional<DType> dtype = DTypeFromName(*dtype_name);
  if (!dtype) return c.Error(absl::StrCat("unknown dtype '", *dtype_name, "'"), c.attr("dtype")->loc);
  return c.types().Tensor(*dtype, c.module().Ints(c.arg(2)));
}

absl::StatusOr<TypeId> ReshapeTensor(const OpCall& c) {
  VDEV_ASSIGN_OR_RETURN(std::optional<TypeId> t, TensorArg(c, 0));
  if (!t || c.arg(1).kind != OperandKind::kIntList) return kNoType;
  return c.types().Tensor(c.types().node(*t).dtype, c.module().Ints(c.arg(1)));
}

absl::StatusOr<TypeId> Storage(const OpCall& c) { return c.types().Storage(); }

absl::StatusOr<TypeId> CheckDeviceAttrs(const OpCall& c, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const Operand* o = c.attr(key);
    if (o != nullptr && o->kind != OperandKind::kDevice)
      return c.Error(absl::StrCat("attribute '", key, "' must be a device literal"), o->loc);
  }
  return kNoType;
}

}  // namespace

absl::StatusOr<TypeId> SameAsFirstArg(const OpCall& call) { return call.num_args() == 0 ? kNoType : call.arg_type(0); }

void OpRegistry::AddBuiltinOps(OpRegistry& r) {
  AddOp(r, {"on_device", 2, 2, {1}, {}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
              VDEV_ASSIGN_OR_RETURN(std::optional<bool> body, c.BoolAttr("constrain_body"));
              VDEV_ASSIGN_OR_RETURN(std::optional<bool> result, c.BoolAttr("constrain_result"));
              (void)body;
              (void)result;
              return c.arg_type(0);
            }});
  AddOp(r, {"device_copy", 1, 1, {}, {"src", "dst"}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
              VDEV_ASSIGN_OR_RETURN(TypeId ignored, CheckDeviceAttrs(c, {"src", "dst"}));
              (void)ignored;
              return c.arg_type(0);
            }});
  AddOp(r, {"vm.shape_of", 1, 1, {}, {}, ShapeOf});
  AddOp(r, {"memory.alloc_storage", 2, 2, {}, {"device"}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
              VDEV_ASSIGN_OR_RETURN(TypeId ignored, CheckDeviceAttrs(c, {"device"}));
              (void)ignored;
              return Storage(c);
            }});
  AddOp(r, {"memory.alloc_tensor", 3, 3, {}, {}, AllocTensor});
  AddOp(r, {"vm.reshape_tensor", 2, 2, {}, {}, ReshapeTensor});
  AddOp(r, {"allreduce", 1, 1, {}, {}, [](const OpCall& c) -> absl::StatusOr<TypeId> {
              VDEV_ASSIGN_OR_RETURN(std::optional<std::string> op, c.TextAttr("op"));
              if (op && *op != "sum" && *op != "max" && *op != "min" && *op != "prod" && *op != "avg")
                return c.Error(absl::StrCat("unknown reduction '", *op, "' (sum, max, min, prod, avg)"),
                               c.attr("op")->loc);
              // `workers=N`: the number of workers the program is written for (the executor refuses others).
              VDEV_ASSIGN_OR_RETURN(std::optional<int64_t> workers, c.IntAttr("workers"));
              if (workers && *workers < 1)
                return c.Error(absl::StrCat("workers must be a positive number of workers, found ", *workers),
                               c.attr("workers")->loc);
              return Unary(c);
            }});
}

void OpRegistry::AddStandardOps(OpRegistry& r) {
  internal::AddElementwiseAndNnOps(r);
  internal::AddShapeOps(r);
  internal::AddSelectOps(r);
}

}  // namespace vdev::ir
