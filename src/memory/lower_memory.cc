// Lowering to explicit allocation, the IPC all-reduce rewrite and IPC storage lowering; see
// vdev/memory/lower_memory.h and docs/memory-planning.md.
#include "vdev/memory/lower_memory.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ir_walk.h"
#include "vdev/ir/builtin_ops.h"
#include "vdev/memory/fuse_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

constexpr absl::string_view kGlobalScope = "global";
constexpr absl::string_view kIpcScope = "ipc_memory";

bool IsViewOp(absl::string_view op) { return op == "reshape" || op == "vm.reshape_tensor" || op == "memory.view"; }

bool IsAllocOp(absl::string_view op) {
  return op == "memory.alloc_storage" || op == "memory.alloc_tensor" || op == "vdev.ipc.alloc_storage";
}

// What one value of the function body refers to, as far as memory goes.
struct ValueMemory {
  // Every tensor of this function whose memory the value may share (views, tuples, call results):
  // a use of the value keeps all of them alive.
  std::vector<int> roots;
  // The one tensor reached through aliases, views and tuple projections only; -1 when there is none,
  // with `why` saying what was met instead.
  int direct = -1;
  std::string why;
};

void AddRoots(std::vector<int>& into, const std::vector<int>& from) {
  if (from.empty()) return;
  into.insert(into.end(), from.begin(), from.end());
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

struct Candidate {
  ir::BindingId binding = ir::kNoBinding;
  int pos = 0;
  int64_t bytes = 0;
  PoolKey pool;
  int last_use = 0;
  bool result = false;
};

// Analyses and lowers one global function.
class FunctionLowering {
 public:
  FunctionLowering(ir::Module& m, std::vector<ir::DeviceId>& devices, const LowerOptions& options, ir::FuncId func)
      : m_(m), devices_(devices), options_(options), func_(func), body_(m.functions[func].body) {}

  absl::StatusOr<FunctionMemory> Run() {
    out_.func = func_;
    VDEV_RETURN_IF_ERROR(Analyse());
    VDEV_ASSIGN_OR_RETURN(out_.plan, PlanStorage(out_.lifetimes, options_.storage));
    VDEV_RETURN_IF_ERROR(VerifyStoragePlan(out_.lifetimes, out_.plan, options_.storage));
    Emit();
    return std::move(out_);
  }

 private:
  std::string BindingName(ir::BindingId b) const { return absl::StrCat("%", m_.Name(m_.bindings[b].name)); }

  // The memory facts of a local operand; a parameter or a value defined outside the body has none.
  ValueMemory Lookup(const ir::Operand& o) const {
    ValueMemory none;
    if (!o.is_local()) {
      none.why = "a constant";
      return none;
    }
    if (o.value.is_param()) {
      none.why =
          absl::StrCat("the parameter %", m_.Name(m_.params[o.value.index].name), ", whose memory the caller owns");
      return none;
    }
    auto it = pos_.find(o.value.index);
    if (it == pos_.end()) {
      none.why = "a value defined in a nested block";
      return none;
    }
    return values_[it->second];
  }

  // Every local operand that binding `b` reads: arguments, attribute values, nested blocks.
  std::vector<ir::Operand> Uses(ir::BindingId b) const {
    const ir::Expr& e = m_.bindings[b].expr;
    std::vector<ir::Operand> uses;
    ir::ForEachLocalRead(m_, e, [&](const ir::Operand& o) { uses.push_back(o); });
    for (const ir::Operand& o : NestedLocalOperands(m_, e)) {
      // Values of the nested blocks themselves have no memory here; outer ones are kept alive.
      if (o.value.is_param() || pos_.contains(o.value.index)) uses.push_back(o);
    }
    return uses;
  }

  void Unplanned(ir::BindingId b, std::string reason) { out_.unplanned.push_back({b, std::move(reason)}); }

  // The pool a tensor produced by `b` lives in, from its planned device.
  absl::StatusOr<PoolKey> PoolOf(ir::BindingId b) const {
    ir::DeviceId d = b < devices_.size() ? devices_[b] : ir::kNoDevice;
    if (d == ir::kNoDevice) {
      return absl::InvalidArgumentError(absl::StrCat(BindingName(b), " has no planned device"));
    }
    const VirtualDevice& vd = m_.Device(d);
    absl::StatusOr<Device> device = vd.ToDevice();
    if (!device.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(BindingName(b), " is planned on ", vd.ToString(), ", which names no concrete device"));
    }
    return PoolKey{*device, vd.has_memory_scope() ? vd.memory_scope() : std::string(kGlobalScope)};
  }

  // A new tensor for op binding `b` at position `pos`, or the reason it is not planned.
  absl::StatusOr<int> MaybeTensor(ir::BindingId b, int pos, std::string* reason) {
    const ir::TypeId t = m_.bindings[b].type;
    bool overflow = false;
    const std::optional<int64_t> bytes = TensorBytes(m_.types, t, &overflow);
    if (overflow) {
      const SourceLoc loc = m_.bindings[b].loc;
      return absl::InvalidArgumentError(absl::StrCat(loc.line, ":", loc.col, ": %", m_.Name(m_.bindings[b].name), ": ",
                                                     m_.types.ToString(t), " is larger than 2^63-1 bytes"));
    }
    if (!bytes) {
      if (t == ir::kNoType) {
        *reason = "its type is unknown (write it on the binding)";
      } else if (m_.types.kind(t) != ir::TypeKind::kTensor) {
        *reason = "it is not a tensor";
      } else {
        *reason = absl::StrCat("its shape ", m_.types.ToString(t), " is dynamic");
      }
      return -1;
    }
    VDEV_ASSIGN_OR_RETURN(PoolKey pool, PoolOf(b));
    candidates_.push_back(Candidate{b, pos, *bytes, std::move(pool), pos, false});
    return static_cast<int>(candidates_.size()) - 1;
  }

  bool IsKernelCall(const ir::Expr& e) const {
    return e.kind == ir::ExprKind::kCallGlobal && e.func != ir::kNoFunc &&
           m_.functions[e.func].kind == ir::FuncKind::kKernel;
  }

  // Binding `b` (an op or kernel call) produces a tensor the function allocates, when it can be sized.
  absl::Status Produce(ir::BindingId b, int pos, ValueMemory& v) {
    std::string reason;
    VDEV_ASSIGN_OR_RETURN(int k, MaybeTensor(b, pos, &reason));
    if (k < 0) {
      Unplanned(b, std::move(reason));
      v.why = absl::StrCat(BindingName(b), ", which is not planned");
    } else {
      v.roots = {k};
      v.direct = k;
    }
    return absl::OkStatus();
  }

  absl::Status Analyse() {
    const std::vector<ir::BindingId>& order = m_.blocks[body_].bindings;
    values_.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) pos_[order[i]] = static_cast<int>(i);
    for (size_t i = 0; i < order.size(); ++i) {
      const int pos = static_cast<int>(i);
      const ir::BindingId b = order[i];
      const ir::Expr& e = m_.bindings[b].expr;
      for (const ir::Operand& use : Uses(b)) {
        for (int r : Lookup(use).roots) candidates_[r].last_use = pos;
      }
      ValueMemory& v = values_[i];
      switch (e.kind) {
        case ir::ExprKind::kOpCall: {
          absl::string_view op = m_.OpName(e);
          if (IsAllocOp(op)) {
            return absl::InvalidArgumentError(absl::StrCat("@", m_.Name(m_.functions[func_].name),
                                                           " is already lowered (", BindingName(b), " = ", op, ")"));
          }
          if (IsViewOp(op) && e.args.count > 0) {
            v = Lookup(m_.Args(e)[0]);
            break;
          }
          VDEV_RETURN_IF_ERROR(Produce(b, pos, v));
          if (op == "allreduce" || op == kFusedAllReduceOp) RewriteAllReduce(b);
          break;
        }
        case ir::ExprKind::kAlias: v = Lookup(m_.Args(e)[0]); break;
        case ir::ExprKind::kTuple:
          for (const ir::Operand& field : m_.Args(e)) AddRoots(v.roots, Lookup(field).roots);
          v.why = absl::StrCat("the tuple ", BindingName(b));
          break;
        case ir::ExprKind::kProject: {
          const ir::Operand& tuple = m_.Args(e)[0];
          const ir::Expr* tuple_expr = tuple.is_local() && tuple.value.is_binding() && pos_.contains(tuple.value.index)
                                           ? &m_.bindings[tuple.value.index].expr
                                           : nullptr;
          if (tuple_expr != nullptr && tuple_expr->kind == ir::ExprKind::kTuple && e.index < tuple_expr->args.count) {
            v = Lookup(m_.Args(*tuple_expr)[e.index]);
          } else {
            v.roots = Lookup(tuple).roots;
            v.why = absl::StrCat("a field of ", PrintLocal(tuple), ", which is not a tuple of this function");
          }
          break;
        }
        case ir::ExprKind::kCallGlobal:
          if (IsKernelCall(e)) {
            // A lowered kernel writes its result where it is told, like an op.
            VDEV_RETURN_IF_ERROR(Produce(b, pos, v));
            break;
          }
          [[fallthrough]];
        case ir::ExprKind::kCallValue:
        case ir::ExprKind::kIf:
        case ir::ExprKind::kFn:
          // The result may be (or hold) any tensor the binding reads: a callee may return its
          // argument, an arm an outer value, a closure keeps what it captures.
          for (const ir::Operand& use : Uses(b)) AddRoots(v.roots, Lookup(use).roots);
          v.why = absl::StrCat(BindingName(b), e.kind == ir::ExprKind::kIf   ? ", the result of an if"
                                               : e.kind == ir::ExprKind::kFn ? ", a function"
                                                                             : ", the result of a call");
          Unplanned(b, e.kind == ir::ExprKind::kIf   ? "an if: its arms are not lowered"
                       : e.kind == ir::ExprKind::kFn ? "a local function: its body is not lowered"
                                                     : "a call of a function: the callee allocates its result");
          break;
        case ir::ExprKind::kConst:
          v.why = absl::StrCat(BindingName(b), ", a constant");
          Unplanned(b, "a constant");
          break;
      }
    }
    const ir::Operand& result = m_.blocks[body_].result;
    if (result.is_local()) {
      for (int r : Lookup(result).roots) {
        candidates_[r].result = true;
        candidates_[r].last_use = static_cast<int>(order.size());
      }
    }
    for (const Candidate& c : candidates_) {
      out_.lifetimes.push_back(TensorLifetime{c.bytes, c.pool, c.pos, c.last_use, !c.result});
      out_.tensors.push_back(PlannedTensor{c.binding, ir::kNoBinding, -1, 0, c.bytes});
    }
    return absl::OkStatus();
  }

  std::string PrintLocal(const ir::Operand& o) const {
    return o.is_local() ? absl::StrCat("%", m_.Name(m_.ValueName(o.value))) : std::string("a constant");
  }

  // Decides whether the all-reduce at `b` (already a tensor candidate, or not) uses IPC memory.
  void RewriteAllReduce(ir::BindingId b) {
    const ir::Expr& e = m_.bindings[b].expr;
    AllReduceInfo info;
    info.binding = b;
    info.fused = m_.OpName(e) == kFusedAllReduceOp;
    const ir::Attr* op = m_.FindAttr(e, "op");
    info.op = op == nullptr ? "sum"
                            : std::string(op->value.kind == ir::OperandKind::kIdent ? m_.Name(op->value.symbol)
                                                                                    : absl::string_view("?"));
    auto stay = [&](std::string reason) {
      info.reason = std::move(reason);
      out_.allreduces.push_back(info);
    };
    if (!options_.ipc_allreduce) return stay("the IPC all-reduce rewrite is off");
    if (info.op != "sum") return stay(absl::StrCat("op=", info.op, ": the custom all-reduce only sums"));
    if (e.args.count == 0) return stay("it has no input");
    ValueMemory input = Lookup(m_.Args(e)[0]);
    if (input.direct < 0) return stay(absl::StrCat("its input traces to ", input.why));
    Candidate& source = candidates_[input.direct];
    if (source.pool.device.type != DeviceType::kCUDA) {
      return stay(absl::StrCat("its input lives on ", source.pool.ToString(), "; IPC memory is CUDA memory"));
    }
    if (source.pool.scope != kGlobalScope && source.pool.scope != kIpcScope) {
      return stay(absl::StrCat("its input's allocation is planned in scope ", source.pool.scope));
    }
    source.pool.scope = std::string(kIpcScope);
    info.ipc = true;
    info.strategy = options_.strategy;
    info.input_producer = source.binding;
    out_.allreduces.push_back(info);
  }

  ir::BindingId NewBinding(absl::string_view hint, ir::Expr expr, ir::TypeId type, const VirtualDevice& device) {
    ir::BindingId b = m_.AddBinding(body_, m_.FreshName(hint), std::move(expr));
    m_.bindings[b].declared_type = type;
    m_.bindings[b].type = type;
    if (devices_.size() <= b) devices_.resize(b + 1, ir::kNoDevice);
    devices_[b] = m_.devices.Intern(device);
    return b;
  }

  static VirtualDevice PoolDevice(const PoolKey& pool) {
    return *VirtualDevice::Make(pool.device.type, pool.device.id, std::nullopt, pool.scope);
  }

  void Emit() {
    std::vector<ir::BindingId> lowered;
    const ir::Operand alignment = m_.NumberOperand(absl::StrCat(options_.storage.alignment));
    for (size_t s = 0; s < out_.plan.storages.size(); ++s) {
      const Storage& storage = out_.plan.storages[s];
      ir::Expr expr =
          ir::MakeAllocStorage(m_, m_.NumberOperand(absl::StrCat(storage.bytes)), alignment, PoolDevice(storage.pool));
      ir::BindingId sb =
          NewBinding(absl::StrCat("s", s), std::move(expr), m_.types.Storage(), PoolDevice(storage.pool));
      out_.storage_bindings.push_back(sb);
      lowered.push_back(sb);
    }
    absl::flat_hash_map<ir::BindingId, int> tensor_of;
    for (size_t k = 0; k < out_.tensors.size(); ++k) tensor_of[out_.tensors[k].binding] = static_cast<int>(k);
    absl::flat_hash_map<ir::BindingId, const AllReduceInfo*> allreduce_of;
    for (const AllReduceInfo& info : out_.allreduces) allreduce_of[info.binding] = &info;

    const std::vector<ir::BindingId> order = m_.blocks[body_].bindings;
    for (ir::BindingId b : order) {
      auto it = tensor_of.find(b);
      if (it == tensor_of.end()) {
        // A fused all-reduce has two results, which it allocates itself; it still takes its strategy.
        if (allreduce_of.contains(b) && allreduce_of[b]->fused) AddStrategy(b, *allreduce_of[b]);
        lowered.push_back(b);
        continue;
      }
      PlannedTensor& tensor = out_.tensors[it->second];
      tensor.storage = out_.plan.storage_of[it->second];
      tensor.offset = 0;  // tensors sharing a storage never live at once
      const ir::TypeId type = m_.bindings[b].type;
      const std::vector<int64_t> dims(m_.types.dims(type).begin(), m_.types.dims(type).end());
      ir::Expr alloc = m_.MakeOpCall("memory.alloc_tensor",
                                     {m_.LocalOperand(ir::ValueRef::Binding(out_.storage_bindings[tensor.storage])),
                                      m_.NumberOperand(absl::StrCat(tensor.offset)), m_.IntListOperand(dims)});
      tensor.alloc = NewBinding(absl::StrCat("t", it->second), std::move(alloc), type,
                                PoolDevice(out_.plan.storages[tensor.storage].pool));
      lowered.push_back(tensor.alloc);
      lowered.push_back(b);
      WriteInto(b, tensor.alloc, allreduce_of.contains(b) ? allreduce_of[b] : nullptr);
    }
    m_.blocks[body_].bindings = std::move(lowered);
  }

  // `strategy="S"`: a string, since strategy names ("one-shot") are not identifiers of the text form.
  ir::Attr StrategyAttr(const AllReduceStrategy& s) {
    ir::Operand strategy;
    strategy.kind = ir::OperandKind::kString;
    strategy.symbol = m_.symbols.Intern(absl::StrCat("\"", AllReduceStrategyName(s), "\""));
    return m_.MakeAttr("strategy", strategy);
  }

  // A fused all-reduce's strategy: the rewrite's when its input moved to ipc_memory, else NCCL.
  void AddStrategy(ir::BindingId b, const AllReduceInfo& info) {
    const ir::Expr old = m_.bindings[b].expr;
    std::vector<ir::Attr> attrs(m_.Attrs(old).begin(), m_.Attrs(old).end());
    attrs.push_back(StrategyAttr(info.ipc ? info.strategy : AllReduceStrategy(AllReduceStrategy::kNccl)));
    const std::vector<ir::Operand> args(m_.Args(old).begin(), m_.Args(old).end());
    const std::string op(m_.OpName(old));
    ir::Expr expr = m_.MakeOpCall(op, args, attrs);
    expr.loc = old.loc;
    m_.bindings[b].expr = std::move(expr);
  }

  // Rebuilds op or kernel-call binding `b` to write into `alloc` (`out=%t`); a rewritten all-reduce
  // becomes the runtime's custom all-reduce with its strategy.
  void WriteInto(ir::BindingId b, ir::BindingId alloc, const AllReduceInfo* allreduce) {
    const ir::Expr old = m_.bindings[b].expr;
    std::vector<ir::Operand> args;
    std::string op(m_.OpName(old));
    if (IsKernelCall(old)) {
      // `@k(args)` becomes `vdev.call_kernel(@k, args, out=%t)`: a call has no attributes.
      ir::Operand kernel;
      kernel.kind = ir::OperandKind::kGlobal;
      kernel.symbol = m_.functions[old.func].name;
      kernel.index = old.func;
      args.push_back(kernel);
      op = "vdev.call_kernel";
    }
    args.insert(args.end(), m_.Args(old).begin(), m_.Args(old).end());
    std::vector<ir::Attr> attrs(m_.Attrs(old).begin(), m_.Attrs(old).end());
    if (allreduce != nullptr && allreduce->ipc) {
      op = "vdev.allreduce";
      if (m_.FindAttr(old, "op") == nullptr) attrs.push_back(m_.MakeAttr("op", m_.IdentOperand("sum")));
      attrs.push_back(StrategyAttr(allreduce->strategy));
    }
    attrs.push_back(m_.MakeAttr("out", m_.LocalOperand(ir::ValueRef::Binding(alloc))));
    ir::Expr expr = m_.MakeOpCall(op, args, attrs);
    expr.loc = old.loc;
    m_.bindings[b].expr = std::move(expr);
    m_.bindings[b].declared_type = m_.bindings[b].type;
  }

  ir::Module& m_;
  std::vector<ir::DeviceId>& devices_;
  const LowerOptions& options_;
  const ir::FuncId func_;
  const ir::BlockId body_;
  absl::flat_hash_map<ir::BindingId, int> pos_;  // top-level bindings of the body
  std::vector<ValueMemory> values_;              // by position
  std::vector<Candidate> candidates_;
  FunctionMemory out_;
};

}  // namespace

std::string AllReduceStrategyName(const AllReduceStrategy& strategy) {
  switch (strategy.kind) {
    case AllReduceStrategy::kAuto: return "auto";
    case AllReduceStrategy::kOneShot: return "one-shot";
    case AllReduceStrategy::kTwoShot: return "two-shot";
    case AllReduceStrategy::kNccl: return "nccl";
    case AllReduceStrategy::kPlan: return absl::StrCat("plan:", strategy.plan);
  }
  return "auto";
}

std::ostream& operator<<(std::ostream& os, const AllReduceStrategy& strategy) {
  return os << AllReduceStrategyName(strategy);
}

std::optional<AllReduceStrategy> AllReduceStrategyFromName(absl::string_view name, std::string* note) {
  constexpr absl::string_view kPlanPrefix = "plan:";
  std::optional<AllReduceStrategy> strategy;
  if (absl::StartsWith(name, kPlanPrefix)) {
    const absl::string_view plan = name.substr(kPlanPrefix.size());
    if (plan.empty()) return std::nullopt;
    for (char c : plan) {
      if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '_' && c != '-') return std::nullopt;
    }
    // Plan names are identifiers (`one_shot_ll`): a hyphen is the other spelling of their underscore.
    strategy = AllReduceStrategy::Plan(absl::StrReplaceAll(plan, {{"-", "_"}}));
  } else {
    // Built-in strategies are spelled with hyphens (`one-shot`); `one_shot` is accepted too.
    const std::string hyphenated = absl::StrReplaceAll(name, {{"_", "-"}});
    for (AllReduceStrategy::Kind k : {AllReduceStrategy::kAuto, AllReduceStrategy::kOneShot,
                                      AllReduceStrategy::kTwoShot, AllReduceStrategy::kNccl}) {
      if (AllReduceStrategyName(k) == hyphenated) strategy = k;
    }
    if (!strategy) return std::nullopt;
  }
  const std::string canonical = AllReduceStrategyName(*strategy);
  if (note != nullptr) {
    *note =
        canonical == name ? "" : absl::StrCat("note: all-reduce strategy '", name, "' is spelled '", canonical, "'");
  }
  return strategy;
}

absl::StatusOr<MemoryPlan> LowerMemory(ir::Module& module, std::vector<ir::DeviceId>& binding_devices,
                                       const LowerOptions& options) {
  MemoryPlan plan;
  if (options.fuse_allreduce) plan.fused = FuseAllReduceAddNorm(module, binding_devices);
  for (ir::FuncId f : module.items) {
    if (module.functions[f].kind != ir::FuncKind::kGlobal || module.functions[f].body == ir::kNoBlock) continue;
    VDEV_ASSIGN_OR_RETURN(FunctionMemory fm, FunctionLowering(module, binding_devices, options, f).Run());
    if (__builtin_add_overflow(plan.tensor_bytes, fm.plan.tensor_bytes, &plan.tensor_bytes) ||
        __builtin_add_overflow(plan.pool_bytes, fm.plan.pool_bytes, &plan.pool_bytes)) {
      return absl::InvalidArgumentError("the functions' memory plans together need more than 2^63-1 bytes");
    }
    plan.functions.push_back(std::move(fm));
  }
  VDEV_RETURN_IF_ERROR(LowerIpcAllocStorage(module).status());
  VDEV_RETURN_IF_ERROR(CheckLoweredMemory(module));
  return plan;
}

absl::StatusOr<int> LowerIpcAllocStorage(ir::Module& module) {
  int rewritten = 0;
  for (ir::Binding& binding : module.bindings) {
    const std::optional<ir::AllocStorageCall> alloc = ir::AsAllocStorage(module, binding.expr);
    if (!alloc) continue;
    const VirtualDevice& vd = module.Device(alloc->device);
    if (vd.memory_scope() != kIpcScope) continue;
    if (vd.device_type() != DeviceType::kCUDA || !vd.has_id()) {
      return absl::InvalidArgumentError(absl::StrCat("%", module.Name(binding.name), ": ipc_memory storage on ",
                                                     vd.ToString(), " (the IPC allocator needs a CUDA device id)"));
    }
    // Same operands (the exact byte size and the alignment) and the same device attribute: the
    // collective allocator learns the device from `device`, never from an operand.
    const ir::Expr old = binding.expr;
    const std::vector<ir::Operand> args(module.Args(old).begin(), module.Args(old).end());
    const std::vector<ir::Attr> attrs(module.Attrs(old).begin(), module.Attrs(old).end());
    ir::Expr expr = module.MakeOpCall("vdev.ipc.alloc_storage", args, attrs);
    expr.loc = old.loc;
    binding.expr = std::move(expr);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace vdev
