// The activation stack of the executor: values by name, blocks entered for calls and `if`, and the
// loop that runs @main without recursing (a deep call chain or a long program needs no deep C++ stack).
#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "executor_impl.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using internal::Activation;
using internal::CallPools;
using internal::Env;
using internal::EnvPtr;
using internal::ExecValue;
using internal::Key;
using internal::OpKind;
using internal::TensorValue;

}  // namespace

absl::StatusOr<ExecValue> Executor::Impl::Lookup(const Env& env, const ir::Operand& o) const {
  if (o.kind == ir::OperandKind::kGlobal) {
    ExecValue v;
    v.kind = ExecValue::Kind::kFunc;
    v.func = o.index;
    return v;
  }
  if (!o.is_local()) return absl::InvalidArgumentError("expected a value");
  const uint64_t key = Key(o.value);
  for (const Env* e = &env; e != nullptr; e = e->parent.get()) {
    auto it = e->values.find(key);
    if (it != e->values.end()) return it->second;
  }
  return absl::InternalError(absl::StrCat("value %", program->module.Name(program->module.ValueName(o.value)),
                                          " used before it was computed"));
}

// Runs one binding of the top activation, or enters a block (call, if) and lets the loop continue.
absl::Status Executor::Impl::Step(std::vector<Activation>& stack) {
  const ir::Module& m = program->module;
  Activation& act = stack.back();
  const ir::Block& block = m.blocks[act.block];
  if (act.pc == block.bindings.size()) {
    VDEV_ASSIGN_OR_RETURN(ExecValue result, Lookup(*act.env, block.result));
    const ir::BindingId target = act.target;
    stack.pop_back();
    if (stack.empty()) {
      main_result = std::move(result);
      return absl::OkStatus();
    }
    Activation& caller = stack.back();
    caller.env->values[Key(ir::ValueRef::Binding(target))] = std::move(result);
    ++caller.pc;
    return absl::OkStatus();
  }
  const ir::BindingId b = block.bindings[act.pc];
  const ir::Expr& e = m.bindings[b].expr;
  absl::Span<const ir::Operand> args = m.Args(e);
  ExecValue result;
  switch (e.kind) {
    case ir::ExprKind::kOpCall: VDEV_RETURN_IF_ERROR(RunTimedOp(act, b, &result)); break;
    case ir::ExprKind::kAlias: {
      VDEV_ASSIGN_OR_RETURN(result, Lookup(*act.env, args[0]));
      break;
    }
    case ir::ExprKind::kTuple: {
      result.kind = ExecValue::Kind::kTuple;
      result.fields = std::make_shared<std::vector<ExecValue>>();
      for (const ir::Operand& a : args) {
        VDEV_ASSIGN_OR_RETURN(ExecValue v, Lookup(*act.env, a));
        result.fields->push_back(std::move(v));
      }
      break;
    }
    case ir::ExprKind::kProject: {
      VDEV_ASSIGN_OR_RETURN(ExecValue tuple, Lookup(*act.env, args[0]));
      if (tuple.kind != ExecValue::Kind::kTuple || e.index >= tuple.fields->size())
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "projection of a value that has no field ", e.index));
      result = (*tuple.fields)[e.index];
      break;
    }
    case ir::ExprKind::kFn: {
      result.kind = ExecValue::Kind::kFunc;
      result.func = e.func;
      result.env = act.env;
      captured_envs.push_back(act.env);
      break;
    }
    case ir::ExprKind::kConst: VDEV_RETURN_IF_ERROR(MakeConst(b, &result)); break;
    case ir::ExprKind::kIf: return PushArm(stack, b);
    case ir::ExprKind::kCallGlobal:
    case ir::ExprKind::kCallValue: return PushCall(stack, b);
  }
  act.env->values[Key(ir::ValueRef::Binding(b))] = std::move(result);
  ++act.pc;
  return absl::OkStatus();
}

// An op call; with a profile, timed when it enqueues work (allocations and views do not).
absl::Status Executor::Impl::RunTimedOp(Activation& act, ir::BindingId b, ExecValue* result) {
  const int index = op_index[b];
  // Allocation and views enqueue no work: only ops that do are timed.
  const OpKind kind = ops[index].kind;
  const bool timed = profile != nullptr && kind != OpKind::kAllocStorage && kind != OpKind::kAllocTensor &&
                     kind != OpKind::kView && kind != OpKind::kAlias;
  const int from = timed ? backend->Mark() : 0;
  VDEV_RETURN_IF_ERROR(RunOp(act, b, result));
  if (timed) {
    const std::string& name = ops[index].name;
    auto [it, fresh] = profile_index.try_emplace(name, static_cast<int>(profile->size()));
    if (fresh) profile->push_back(OpProfile{name, 0, 0});
    ++(*profile)[it->second].calls;
    marks.push_back({it->second, {from, backend->Mark()}});
  }
  return absl::OkStatus();
}

// `const(T)`: zeros of T on the binding's planned device (the text carries no value).
absl::Status Executor::Impl::MakeConst(ir::BindingId b, ExecValue* result) {
  const ir::Module& m = program->module;
  const ir::Expr& e = m.bindings[b].expr;
  VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, e.const_type, "const"));
  const ir::DeviceId d = b < program->binding_devices.size() ? program->binding_devices[b] : ir::kNoDevice;
  if (d == ir::kNoDevice) return absl::InvalidArgumentError(absl::StrCat(Where(b), "const has no planned device"));
  TensorRef probe{nullptr, m.types.node(e.const_type).dtype, shape};
  // The text carries no constant's value: it is zeros (docs/executor.md).
  VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                        backend->Allocate(m.Device(d), std::max<int64_t>(probe.NumBytes(), 1)));
  std::vector<char> zeros(static_cast<size_t>(probe.NumBytes()));
  VDEV_RETURN_IF_ERROR(backend->CopyFromHost(buffer->data, zeros.data(), zeros.size()));
  *result = TensorValue(std::move(buffer), 0, probe.dtype, shape);
  return absl::OkStatus();
}

// `if`: the condition read on the host, the chosen arm pushed.
absl::Status Executor::Impl::PushArm(std::vector<Activation>& stack, ir::BindingId b) {
  const ir::Module& m = program->module;
  const ir::Expr& e = m.bindings[b].expr;
  absl::Span<const ir::Operand> args = m.Args(e);
  const Activation& act = stack.back();
  VDEV_ASSIGN_OR_RETURN(ExecValue cond, Lookup(*act.env, args[0]));
  if (cond.kind != ExecValue::Kind::kTensor || cond.tensor.NumElements() != 1)
    return absl::InvalidArgumentError(absl::StrCat(Where(b), "`if` needs a scalar condition"));
  std::vector<std::byte> host(DTypeBytes(cond.tensor.dtype));
  VDEV_RETURN_IF_ERROR(backend->CopyToHost(host.data(), cond.tensor.data, host.size()));
  const bool taken = ReadAsDouble(TensorRef{host.data(), cond.tensor.dtype, {}}, 0) != 0;
  Activation arm{taken ? e.then_block : e.else_block, 0, act.env, act.pools, b, act.outermost};
  stack.push_back(std::move(arm));
  return absl::OkStatus();
}

// A call of a global or of a function value: its parameters bound, a global's pools allocated,
// its body pushed.
absl::Status Executor::Impl::PushCall(std::vector<Activation>& stack, ir::BindingId b) {
  const ir::Module& m = program->module;
  const ir::Expr& e = m.bindings[b].expr;
  absl::Span<const ir::Operand> args = m.Args(e);
  const Activation& act = stack.back();
  ir::FuncId callee = e.func;
  EnvPtr parent;
  size_t first = 0;
  if (e.kind == ir::ExprKind::kCallValue) {
    VDEV_ASSIGN_OR_RETURN(ExecValue f, Lookup(*act.env, args[0]));
    if (f.kind != ExecValue::Kind::kFunc)
      return absl::InvalidArgumentError(absl::StrCat(Where(b), "call of a value that is not a function"));
    callee = f.func;
    parent = f.env;
    first = 1;
  }
  const ir::Function& fn = m.functions[callee];
  if (fn.body == ir::kNoBlock)
    return absl::InvalidArgumentError(absl::StrCat(Where(b), "@", m.Name(fn.name), " has no body to run"));
  absl::Span<const ir::Param> params = m.Params(fn);
  if (params.size() != args.size() - first)
    return absl::InvalidArgumentError(
        absl::StrCat(Where(b), "call with ", args.size() - first, " arguments of a function of ", params.size()));
  auto env = std::make_shared<Env>();
  env->parent = std::move(parent);
  for (size_t i = 0; i < params.size(); ++i) {
    VDEV_ASSIGN_OR_RETURN(ExecValue v, Lookup(*act.env, args[first + i]));
    env->values[Key(ir::ValueRef::Param(fn.params.begin + static_cast<uint32_t>(i)))] = std::move(v);
  }
  std::shared_ptr<CallPools> pools = act.pools;
  if (fn.kind == ir::FuncKind::kGlobal) {
    VDEV_ASSIGN_OR_RETURN(pools, AllocatePools(callee));
  }
  stack.push_back(Activation{fn.body, 0, std::move(env), std::move(pools), b, false});
  return absl::OkStatus();
}

absl::StatusOr<ExecValue> Executor::Impl::Execute(absl::Span<const ExecValue> args) {
  const ir::Module& m = program->module;
  const ir::Function& fn = m.functions[main];
  auto env = std::make_shared<Env>();
  for (size_t i = 0; i < args.size(); ++i)
    env->values[Key(ir::ValueRef::Param(fn.params.begin + static_cast<uint32_t>(i)))] = args[i];
  std::vector<Activation> stack;
  stack.push_back(Activation{fn.body, 0, std::move(env), main_pools, ir::kNoBinding, true});
  // Once the run is over (or failed) nothing reads its environments: empty the captured ones, which
  // frees every closure cycle through them (a leak per run otherwise).
  absl::Cleanup cut_cycles = [this, &stack] {
    stack.clear();
    for (const std::weak_ptr<Env>& weak : captured_envs) {
      if (EnvPtr env = weak.lock()) {
        env->values.clear();
        env->parent.reset();
      }
    }
    captured_envs.clear();
  };
  while (!stack.empty()) VDEV_RETURN_IF_ERROR(Step(stack));
  return main_result;
}

}  // namespace vdev
