// The executor of vdev/executor.h: an interpreter of lowered programs with an explicit stack.
#include "vdev/executor.h"

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prepared_op.h"
#include "vdev/status_macros.h"

namespace vdev {
namespace {

using internal::OpKind;
using internal::PreparedOp;

struct Env;
using EnvPtr = std::shared_ptr<Env>;

struct Value {
  enum class Kind : uint8_t { kNone, kTensor, kStorage, kTuple, kFunc };
  Kind kind = Kind::kNone;
  std::shared_ptr<DeviceBuffer> buffer;  // kTensor, kStorage: the memory it lies in
  size_t offset = 0;                     // kTensor, kStorage: bytes into `buffer`
  TensorRef tensor;                      // kTensor
  std::shared_ptr<std::vector<Value>> fields;  // kTuple
  ir::FuncId func = ir::kNoFunc;               // kFunc
  EnvPtr env;                                  // kFunc: what a local function captured
};

uint64_t Key(ir::ValueRef v) { return (uint64_t{static_cast<uint8_t>(v.kind)} << 32) | v.index; }

// The values of one function call; a local function's environment chains to its definer's.
struct Env {
  absl::flat_hash_map<uint64_t, Value> values;
  EnvPtr parent;
};

// The storages of one call of a lowered function: its pools, allocated at entry.
struct CallPools {
  std::vector<std::shared_ptr<DeviceBuffer>> pools;  // per StoragePlan::pools
};

struct Activation {
  ir::BlockId block = ir::kNoBlock;
  size_t pc = 0;
  EnvPtr env;
  std::shared_ptr<CallPools> pools;
  ir::BindingId target = ir::kNoBinding;  // the binding of the caller that receives the result
  bool outermost = false;  // @main's own body (and its if arms): allocations are kept across runs
};

// Where a storage binding's memory is: pool index and offset, per lowered function.
struct StorageSlot {
  int pool = 0;
  int64_t offset = 0;
};

struct FunctionPlan {
  const FunctionMemory* memory = nullptr;
  std::vector<VirtualDevice> pool_devices;  // per StoragePlan::pools
};

VirtualDevice PoolDevice(const PoolKey& key) {
  absl::StatusOr<VirtualDevice> vd = VirtualDevice::Make(key.device.type, key.device.id, std::nullopt, key.scope);
  return vd.ok() ? *vd : VirtualDevice::ForDevice(key.device.type, key.device.id);
}

}  // namespace

struct Executor::Impl {
  const LoweredProgram* program = nullptr;
  ExecutionBackend* backend = nullptr;
  ir::FuncId main = ir::kNoFunc;
  std::vector<ir::TypeId> param_types;
  std::vector<std::shared_ptr<DeviceBuffer>> params;  // @main's, on their planned devices
  std::vector<int32_t> op_index;                      // per binding: index into ops, or -1
  std::vector<PreparedOp> ops;
  absl::flat_hash_map<ir::FuncId, FunctionPlan> functions;
  absl::flat_hash_map<ir::BindingId, StorageSlot> storage_slots;
  std::shared_ptr<CallPools> main_pools;
  // Results of unplanned bindings of @main's body, kept so every run writes the same memory.
  absl::flat_hash_map<ir::BindingId, std::vector<std::shared_ptr<DeviceBuffer>>> kept;
  bool capturable = false;
  bool captured = false;
  int runs = 0;
  Value main_result;
  // Profiling: marks around each op of one run.
  std::vector<OpProfile>* profile = nullptr;
  std::vector<std::pair<int, std::pair<int, int>>> marks;  // (profile entry, (from, to))
  absl::flat_hash_map<std::string, int> profile_index;

  absl::Status Load();
  absl::Status PrepareFunctionPlans();
  absl::StatusOr<std::shared_ptr<CallPools>> AllocatePools(ir::FuncId func);
  absl::Status CheckCapturable();
  absl::StatusOr<Value> Execute(absl::Span<const Value> args);
  absl::Status Step(std::vector<Activation>& stack);
  absl::StatusOr<Value> Lookup(const Env& env, const ir::Operand& o) const;
  absl::Status RunOp(Activation& act, ir::BindingId b, Value* result);
  absl::StatusOr<std::vector<std::shared_ptr<DeviceBuffer>>> OutputBuffers(Activation& act, ir::BindingId b,
                                                                          const PreparedOp& op,
                                                                          std::vector<TensorRef>* outs);
  absl::StatusOr<std::vector<HostTensor>> CopyOut(const Value& result);
  absl::Status CopyIn(absl::Span<const HostTensor> inputs);
  absl::StatusOr<std::vector<HostTensor>> RunOnce(absl::Span<const HostTensor> inputs);
  absl::Status Enqueue();
  // `FILE:LINE:COL: ` of binding b's expression, to prefix what went wrong running it.
  std::string Where(ir::BindingId b) const {
    const SourceLoc loc = program->module.bindings[b].expr.loc;
    if (!loc.valid()) return absl::StrCat(program->file, ": ");
    return absl::StrCat(program->file, ":", loc.line, ":", loc.col, ": ");
  }
};

namespace {

Value TensorValue(std::shared_ptr<DeviceBuffer> buffer, size_t offset, ir::DType dtype, Shape shape) {
  Value v;
  v.kind = Value::Kind::kTensor;
  v.tensor = TensorRef{static_cast<char*>(buffer->data) + offset, dtype, std::move(shape)};
  v.buffer = std::move(buffer);
  v.offset = offset;
  return v;
}

// The tensors of a value in order (a tuple's fields flattened).
absl::Status Flatten(const Value& v, std::vector<const Value*>* out) {
  std::vector<const Value*> stack = {&v};
  while (!stack.empty()) {
    const Value* top = stack.back();
    stack.pop_back();
    if (top->kind == Value::Kind::kTensor) {
      out->push_back(top);
    } else if (top->kind == Value::Kind::kTuple) {
      for (auto it = top->fields->rbegin(); it != top->fields->rend(); ++it) stack.push_back(&*it);
    } else {
      return absl::InvalidArgumentError("@main returns a value that is not a tensor or a tuple of tensors");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Value> Executor::Impl::Lookup(const Env& env, const ir::Operand& o) const {
  if (o.kind == ir::OperandKind::kGlobal) {
    Value v;
    v.kind = Value::Kind::kFunc;
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

absl::Status Executor::Impl::PrepareFunctionPlans() {
  for (const FunctionMemory& fm : program->memory.functions) {
    FunctionPlan plan;
    plan.memory = &fm;
    for (const PoolSize& pool : fm.plan.pools) plan.pool_devices.push_back(PoolDevice(pool.pool));
    for (size_t s = 0; s < fm.plan.storages.size(); ++s) {
      const Storage& storage = fm.plan.storages[s];
      int pool = 0;
      while (pool < static_cast<int>(fm.plan.pools.size()) && !(fm.plan.pools[pool].pool == storage.pool)) ++pool;
      if (pool == static_cast<int>(fm.plan.pools.size()))
        return absl::InternalError("a storage of the memory plan has no pool");
      storage_slots[fm.storage_bindings[s]] = StorageSlot{pool, storage.pool_offset};
    }
    functions[fm.func] = std::move(plan);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<CallPools>> Executor::Impl::AllocatePools(ir::FuncId func) {
  auto pools = std::make_shared<CallPools>();
  auto it = functions.find(func);
  if (it == functions.end()) return pools;
  const StoragePlan& plan = it->second.memory->plan;
  for (size_t p = 0; p < plan.pools.size(); ++p) {
    // A pool of 0 bytes still gets a buffer, so its (empty) storages have an address.
    VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                          backend->Allocate(it->second.pool_devices[p], std::max<int64_t>(plan.pools[p].bytes, 1)));
    pools->pools.push_back(std::move(buffer));
  }
  return pools;
}

absl::Status Executor::Impl::Load() {
  const ir::Module& m = program->module;
  main = m.FindGlobal("main");
  if (main == ir::kNoFunc || m.functions[main].kind != ir::FuncKind::kGlobal)
    return absl::InvalidArgumentError(absl::StrCat(program->file, ": error: the program has no function @main to run"));
  VDEV_RETURN_IF_ERROR(PrepareFunctionPlans());
  // Every op call, nested ones included, is classified and its kernel found before anything runs.
  op_index.assign(m.bindings.size(), -1);
  struct Collect : ir::Visitor {
    std::vector<ir::BindingId> calls;
    const ir::Module* m;
    void Binding(ir::BindingId b) override {
      const ir::Expr& e = m->bindings[b].expr;
      if (e.kind == ir::ExprKind::kOpCall) calls.push_back(b);
      if (e.kind == ir::ExprKind::kCallGlobal && e.func != ir::kNoFunc &&
          m->functions[e.func].kind == ir::FuncKind::kKernel)
        calls.push_back(b);
    }
  } collect;
  collect.m = &m;
  ir::WalkModule(m, collect);
  for (ir::BindingId b : collect.calls) {
    const ir::Expr& e = m.bindings[b].expr;
    if (e.kind == ir::ExprKind::kCallGlobal)
      return absl::InvalidArgumentError(internal::Located(
          *program, e.loc, absl::StrCat("kernel @", m.Name(m.functions[e.func].name),
                                        " is declared without a body; the executor has no implementation of it")));
    VDEV_ASSIGN_OR_RETURN(PreparedOp op, internal::PrepareOp(*program, b, *backend));
    op_index[b] = static_cast<int32_t>(ops.size());
    ops.push_back(std::move(op));
  }
  for (const ir::Param& p : m.Params(m.functions[main])) {
    const std::string what = absl::StrCat("parameter %", m.Name(p.name), " of @main");
    VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, p.type, what));
    if (p.device == ir::kNoDevice) return absl::InvalidArgumentError(absl::StrCat(what, " has no planned device"));
    TensorRef probe{nullptr, m.types.node(p.type).dtype, shape};
    VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                          backend->Allocate(m.Device(p.device), std::max<int64_t>(probe.NumBytes(), 1)));
    params.push_back(std::move(buffer));
    param_types.push_back(p.type);
  }
  VDEV_ASSIGN_OR_RETURN(main_pools, AllocatePools(main));
  return CheckCapturable();
}

// @main can be captured as one CUDA graph when it is straight-line and every op runs on the GPU
// (copies to and from host memory included; no CPU kernel would see their bytes in time).
absl::Status Executor::Impl::CheckCapturable() {
  capturable = false;
  if (!backend->SupportsCapture()) return absl::OkStatus();
  const ir::Module& m = program->module;
  for (ir::BindingId b : m.blocks[m.functions[main].body].bindings) {
    const ir::Expr& e = m.bindings[b].expr;
    if (e.kind == ir::ExprKind::kIf || e.kind == ir::ExprKind::kCallGlobal || e.kind == ir::ExprKind::kCallValue ||
        e.kind == ir::ExprKind::kConst)
      return absl::OkStatus();
    if (e.kind != ir::ExprKind::kOpCall) continue;
    const PreparedOp& op = ops[op_index[b]];
    if (op.kind == OpKind::kShapeOf) return absl::OkStatus();
    if (op.kind == OpKind::kKernel && backend->KernelDevice(op.device) != DeviceType::kCUDA) return absl::OkStatus();
    if ((op.kind == OpKind::kAllReduce || op.kind == OpKind::kIpcAllReduce) &&
        (op.type == ir::kNoType || m.types.kind(op.type) != ir::TypeKind::kTensor ||
         !backend->CanCaptureAllReduce(op.reduce, m.types.node(op.type).dtype)))
      return absl::OkStatus();
  }
  capturable = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::shared_ptr<DeviceBuffer>>> Executor::Impl::OutputBuffers(
    Activation& act, ir::BindingId b, const PreparedOp& op, std::vector<TensorRef>* outs) {
  const ir::Module& m = program->module;
  if (act.outermost) {
    auto it = kept.find(b);
    if (it != kept.end()) {
      // Same types every run: rebuild the refs over the kept buffers.
      size_t i = 0;
      for (TensorRef& t : *outs) t.data = it->second[i++]->data;
      return it->second;
    }
  }
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  for (TensorRef& t : *outs) {
    VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                          backend->Allocate(op.device, std::max<int64_t>(t.NumBytes(), 1)));
    t.data = buffer->data;
    buffers.push_back(std::move(buffer));
  }
  (void)m;
  if (act.outermost) kept[b] = buffers;
  return buffers;
}

absl::Status Executor::Impl::RunOp(Activation& act, ir::BindingId b, Value* result) {
  const ir::Module& m = program->module;
  const ir::Expr& e = m.bindings[b].expr;
  const PreparedOp& op = ops[op_index[b]];
  absl::Span<const ir::Operand> args = m.Args(e);
  const Env& env = *act.env;
  auto input = [&](size_t i) -> absl::StatusOr<Value> {
    if (i >= args.size()) return absl::InvalidArgumentError(absl::StrCat(Where(b), "missing operand"));
    return Lookup(env, args[i]);
  };
  auto out_tensor = [&]() -> absl::StatusOr<std::optional<Value>> {
    if (op.out_arg < 0) return std::optional<Value>();
    VDEV_ASSIGN_OR_RETURN(Value t, Lookup(env, m.Attrs(e)[op.out_arg].value));
    if (t.kind != Value::Kind::kTensor) return absl::InvalidArgumentError(absl::StrCat(Where(b), "out= is not a tensor"));
    return std::optional<Value>(std::move(t));
  };
  // The result's memory: `out=%t`, or a new buffer of the binding's type on the op's device.
  auto fresh_output = [&](ir::DType dtype, const Shape& shape) -> absl::StatusOr<Value> {
    VDEV_ASSIGN_OR_RETURN(std::optional<Value> out, out_tensor());
    if (out) return *out;
    std::vector<TensorRef> refs = {TensorRef{nullptr, dtype, shape}};
    VDEV_ASSIGN_OR_RETURN(auto buffers, OutputBuffers(act, b, op, &refs));
    return TensorValue(buffers[0], 0, dtype, shape);
  };
  switch (op.kind) {
    case OpKind::kAllocStorage: {
      auto slot = storage_slots.find(b);
      if (slot == storage_slots.end() || act.pools == nullptr || slot->second.pool >= static_cast<int>(act.pools->pools.size()))
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "a storage outside the memory plan"));
      result->kind = Value::Kind::kStorage;
      result->buffer = act.pools->pools[slot->second.pool];
      result->offset = static_cast<size_t>(slot->second.offset);
      return absl::OkStatus();
    }
    case OpKind::kAllocTensor: {
      VDEV_ASSIGN_OR_RETURN(Value storage, input(0));
      VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, op.type, "memory.alloc_tensor"));
      const ir::Operand& offset = args[1];
      int64_t at = 0;
      if (offset.kind == ir::OperandKind::kNumber) at = std::strtoll(std::string(m.Name(offset.symbol)).c_str(), nullptr, 10);
      *result = TensorValue(storage.buffer, storage.offset + static_cast<size_t>(at), m.types.node(op.type).dtype, shape);
      return absl::OkStatus();
    }
    case OpKind::kView: {
      VDEV_ASSIGN_OR_RETURN(Value in, input(0));
      VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, op.type, op.name));
      *result = TensorValue(in.buffer, in.offset, in.tensor.dtype, shape);
      return absl::OkStatus();
    }
    case OpKind::kAlias: {
      VDEV_ASSIGN_OR_RETURN(*result, input(0));
      return absl::OkStatus();
    }
    case OpKind::kShapeOf: {
      VDEV_ASSIGN_OR_RETURN(Value in, input(0));
      Shape dims = {static_cast<int64_t>(in.tensor.shape.size())};
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(ir::DType::kI64, dims));
      std::vector<int64_t> host(in.tensor.shape.begin(), in.tensor.shape.end());
      return backend->CopyFromHost(result->tensor.data, host.data(), host.size() * sizeof(int64_t));
    }
    case OpKind::kCopy: {
      VDEV_ASSIGN_OR_RETURN(Value in, input(0));
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(in.tensor.dtype, in.tensor.shape));
      return backend->Copy(result->tensor.data, in.tensor.data, static_cast<size_t>(in.tensor.NumBytes()));
    }
    case OpKind::kIpcAllReduce:
    case OpKind::kAllReduce: {
      VDEV_ASSIGN_OR_RETURN(Value in, input(0));
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(in.tensor.dtype, in.tensor.shape));
      IPCBuffer ipc;
      const bool in_ipc = in.buffer != nullptr && in.buffer->ipc != nullptr;
      if (in_ipc) ipc = IPCBuffer{in.buffer->ipc, in.offset};
      absl::Status s = backend->AllReduce(in.tensor, in_ipc ? &ipc : nullptr, result->tensor, op.reduce, op.strategy, op.device);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat(Where(b), s.message()));
      return absl::OkStatus();
    }
    case OpKind::kKernel:
      break;
  }
  std::vector<TensorRef> inputs;
  inputs.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (op.constants[i] != nullptr) {
      inputs.push_back(TensorRef{op.constants[i]->data, op.constant_dtype, {}});
      continue;
    }
    if (args[i].kind == ir::OperandKind::kDevice) continue;
    VDEV_ASSIGN_OR_RETURN(Value v, Lookup(env, args[i]));
    if (v.kind != Value::Kind::kTensor)
      return absl::InvalidArgumentError(absl::StrCat(Where(b), "operand ", i, " of '", op.name, "' is not a tensor"));
    inputs.push_back(v.tensor);
  }
  std::vector<TensorRef> outs;
  const bool tuple = op.type != ir::kNoType && m.types.kind(op.type) == ir::TypeKind::kTuple;
  std::vector<ir::TypeId> out_types = tuple ? std::vector<ir::TypeId>(m.types.fields(op.type).begin(), m.types.fields(op.type).end())
                                            : std::vector<ir::TypeId>{op.type};
  for (ir::TypeId t : out_types) {
    VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, t, absl::StrCat("the result of '", op.name, "'")));
    outs.push_back(TensorRef{nullptr, m.types.node(t).dtype, shape});
  }
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  VDEV_ASSIGN_OR_RETURN(std::optional<Value> out, out_tensor());
  if (out && !tuple) {
    outs[0].data = out->tensor.data;
  } else {
    VDEV_ASSIGN_OR_RETURN(buffers, OutputBuffers(act, b, op, &outs));
  }
  VDEV_ASSIGN_OR_RETURN(KernelContext * context, backend->Context(op.device));
  KernelCall call{.inputs = inputs, .outputs = outs, .attrs = &op.attrs, .context = context};
  if (absl::Status s = op.kernel(call); !s.ok()) return absl::Status(s.code(), absl::StrCat(Where(b), s.message()));
  if (out && !tuple) {
    *result = *out;
  } else if (!tuple) {
    *result = TensorValue(buffers[0], 0, outs[0].dtype, outs[0].shape);
  } else {
    result->kind = Value::Kind::kTuple;
    result->fields = std::make_shared<std::vector<Value>>();
    for (size_t i = 0; i < outs.size(); ++i) result->fields->push_back(TensorValue(buffers[i], 0, outs[i].dtype, outs[i].shape));
  }
  return absl::OkStatus();
}

// Runs one binding of the top activation, or enters a block (call, if) and lets the loop continue.
absl::Status Executor::Impl::Step(std::vector<Activation>& stack) {
  const ir::Module& m = program->module;
  Activation& act = stack.back();
  const ir::Block& block = m.blocks[act.block];
  if (act.pc == block.bindings.size()) {
    VDEV_ASSIGN_OR_RETURN(Value result, Lookup(*act.env, block.result));
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
  Value result;
  switch (e.kind) {
    case ir::ExprKind::kOpCall: {
      const int index = op_index[b];
      // Allocation and views enqueue no work: only ops that do are timed.
      const OpKind kind = ops[index].kind;
      const bool timed = profile != nullptr && kind != OpKind::kAllocStorage && kind != OpKind::kAllocTensor &&
                         kind != OpKind::kView && kind != OpKind::kAlias;
      const int from = timed ? backend->Mark() : 0;
      VDEV_RETURN_IF_ERROR(RunOp(act, b, &result));
      if (timed) {
        const std::string& name = ops[index].name;
        auto [it, fresh] = profile_index.try_emplace(name, static_cast<int>(profile->size()));
        if (fresh) profile->push_back(OpProfile{name, 0, 0});
        ++(*profile)[it->second].calls;
        marks.push_back({it->second, {from, backend->Mark()}});
      }
      break;
    }
    case ir::ExprKind::kAlias: {
      VDEV_ASSIGN_OR_RETURN(result, Lookup(*act.env, args[0]));
      break;
    }
    case ir::ExprKind::kTuple: {
      result.kind = Value::Kind::kTuple;
      result.fields = std::make_shared<std::vector<Value>>();
      for (const ir::Operand& a : args) {
        VDEV_ASSIGN_OR_RETURN(Value v, Lookup(*act.env, a));
        result.fields->push_back(std::move(v));
      }
      break;
    }
    case ir::ExprKind::kProject: {
      VDEV_ASSIGN_OR_RETURN(Value tuple, Lookup(*act.env, args[0]));
      if (tuple.kind != Value::Kind::kTuple || e.index >= tuple.fields->size())
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "projection of a value that has no field ", e.index));
      result = (*tuple.fields)[e.index];
      break;
    }
    case ir::ExprKind::kFn: {
      result.kind = Value::Kind::kFunc;
      result.func = e.func;
      result.env = act.env;
      break;
    }
    case ir::ExprKind::kConst: {
      VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, e.const_type, "const"));
      const ir::DeviceId d = b < program->binding_devices.size() ? program->binding_devices[b] : ir::kNoDevice;
      if (d == ir::kNoDevice) return absl::InvalidArgumentError(absl::StrCat(Where(b), "const has no planned device"));
      TensorRef probe{nullptr, m.types.node(e.const_type).dtype, shape};
      // The text carries no constant's value: it is zeros (docs/executor.md).
      VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                            backend->Allocate(m.Device(d), std::max<int64_t>(probe.NumBytes(), 1)));
      std::vector<char> zeros(static_cast<size_t>(probe.NumBytes()));
      VDEV_RETURN_IF_ERROR(backend->CopyFromHost(buffer->data, zeros.data(), zeros.size()));
      result = TensorValue(std::move(buffer), 0, probe.dtype, shape);
      break;
    }
    case ir::ExprKind::kIf: {
      VDEV_ASSIGN_OR_RETURN(Value cond, Lookup(*act.env, args[0]));
      if (cond.kind != Value::Kind::kTensor || cond.tensor.NumElements() != 1)
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "`if` needs a scalar condition"));
      std::vector<std::byte> host(DTypeBytes(cond.tensor.dtype));
      VDEV_RETURN_IF_ERROR(backend->CopyToHost(host.data(), cond.tensor.data, host.size()));
      const bool taken = ReadAsDouble(TensorRef{host.data(), cond.tensor.dtype, {}}, 0) != 0;
      Activation arm{taken ? e.then_block : e.else_block, 0, act.env, act.pools, b, act.outermost};
      stack.push_back(std::move(arm));
      return absl::OkStatus();
    }
    case ir::ExprKind::kCallGlobal:
    case ir::ExprKind::kCallValue: {
      ir::FuncId callee = e.func;
      EnvPtr parent;
      size_t first = 0;
      if (e.kind == ir::ExprKind::kCallValue) {
        VDEV_ASSIGN_OR_RETURN(Value f, Lookup(*act.env, args[0]));
        if (f.kind != Value::Kind::kFunc) return absl::InvalidArgumentError(absl::StrCat(Where(b), "call of a value that is not a function"));
        callee = f.func;
        parent = f.env;
        first = 1;
      }
      const ir::Function& fn = m.functions[callee];
      if (fn.body == ir::kNoBlock)
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "@", m.Name(fn.name), " has no body to run"));
      absl::Span<const ir::Param> params = m.Params(fn);
      if (params.size() != args.size() - first)
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "call with ", args.size() - first, " arguments of a function of ", params.size()));
      auto env = std::make_shared<Env>();
      env->parent = std::move(parent);
      for (size_t i = 0; i < params.size(); ++i) {
        VDEV_ASSIGN_OR_RETURN(Value v, Lookup(*act.env, args[first + i]));
        env->values[Key(ir::ValueRef::Param(fn.params.begin + static_cast<uint32_t>(i)))] = std::move(v);
      }
      std::shared_ptr<CallPools> pools = act.pools;
      if (fn.kind == ir::FuncKind::kGlobal) {
        VDEV_ASSIGN_OR_RETURN(pools, AllocatePools(callee));
      }
      stack.push_back(Activation{fn.body, 0, std::move(env), std::move(pools), b, false});
      return absl::OkStatus();
    }
  }
  act.env->values[Key(ir::ValueRef::Binding(b))] = std::move(result);
  ++act.pc;
  return absl::OkStatus();
}

absl::StatusOr<Value> Executor::Impl::Execute(absl::Span<const Value> args) {
  const ir::Module& m = program->module;
  const ir::Function& fn = m.functions[main];
  auto env = std::make_shared<Env>();
  for (size_t i = 0; i < args.size(); ++i)
    env->values[Key(ir::ValueRef::Param(fn.params.begin + static_cast<uint32_t>(i)))] = args[i];
  std::vector<Activation> stack;
  stack.push_back(Activation{fn.body, 0, std::move(env), main_pools, ir::kNoBinding, true});
  while (!stack.empty()) VDEV_RETURN_IF_ERROR(Step(stack));
  return main_result;
}

absl::Status Executor::Impl::CopyIn(absl::Span<const HostTensor> inputs) {
  const ir::Module& m = program->module;
  absl::Span<const ir::Param> ps = m.Params(m.functions[main]);
  if (inputs.size() != ps.size())
    return absl::InvalidArgumentError(absl::StrCat("@main takes ", ps.size(), " inputs; ", inputs.size(), " given"));
  for (size_t i = 0; i < ps.size(); ++i) {
    const ir::TypeNode& node = m.types.node(ps[i].type);
    absl::Span<const int64_t> dims = m.types.dims(ps[i].type);
    if (inputs[i].dtype != node.dtype || !std::equal(dims.begin(), dims.end(), inputs[i].shape.begin(), inputs[i].shape.end()))
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " (%", m.Name(ps[i].name), "): expected ", m.types.ToString(ps[i].type), ", got ",
          ir::DTypeName(inputs[i].dtype), "[", absl::StrJoin(inputs[i].shape, ","), "]"));
    VDEV_RETURN_IF_ERROR(backend->CopyFromHost(params[i]->data, inputs[i].bytes.data(), inputs[i].bytes.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HostTensor>> Executor::Impl::CopyOut(const Value& result) {
  std::vector<const Value*> tensors;
  VDEV_RETURN_IF_ERROR(Flatten(result, &tensors));
  VDEV_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<HostTensor> out;
  for (const Value* v : tensors) {
    HostTensor h = HostTensor::Zeros(v->tensor.dtype, v->tensor.shape);
    VDEV_RETURN_IF_ERROR(backend->CopyToHost(h.bytes.data(), v->tensor.data, h.bytes.size()));
    out.push_back(std::move(h));
  }
  return out;
}

absl::Status Executor::Impl::Enqueue() {
  const ir::Module& m = program->module;
  std::vector<Value> args;
  absl::Span<const ir::Param> ps = m.Params(m.functions[main]);
  for (size_t i = 0; i < ps.size(); ++i) {
    Shape shape(m.types.dims(ps[i].type).begin(), m.types.dims(ps[i].type).end());
    args.push_back(TensorValue(params[i], 0, m.types.node(ps[i].type).dtype, shape));
  }
  // The first run is eager (kernels set up their plans); the second captures @main, later ones replay.
  if (capturable && profile == nullptr && runs >= 1) {
    if (!captured) {
      VDEV_RETURN_IF_ERROR(backend->BeginCapture());
      absl::StatusOr<Value> r = Execute(args);
      absl::Status end = backend->EndCapture();
      VDEV_RETURN_IF_ERROR(r.status());
      VDEV_RETURN_IF_ERROR(end);
      captured = true;
    }
    VDEV_RETURN_IF_ERROR(backend->Replay());
  } else {
    VDEV_RETURN_IF_ERROR(Execute(args).status());
  }
  ++runs;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HostTensor>> Executor::Impl::RunOnce(absl::Span<const HostTensor> inputs) {
  VDEV_RETURN_IF_ERROR(CopyIn(inputs));
  VDEV_RETURN_IF_ERROR(Enqueue());
  return CopyOut(main_result);
}

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Executor>> Executor::Load(const LoweredProgram& program, ExecutionBackend* backend) {
  auto impl = std::make_unique<Impl>();
  impl->program = &program;
  impl->backend = backend;
  VDEV_RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

absl::Span<const ir::TypeId> Executor::param_types() const { return impl_->param_types; }
const ir::Module& Executor::module() const { return impl_->program->module; }
bool Executor::replaying() const { return impl_->captured; }

absl::StatusOr<std::vector<HostTensor>> Executor::Run(absl::Span<const HostTensor> inputs) {
  return impl_->RunOnce(inputs);
}

absl::Status Executor::SetInputs(absl::Span<const HostTensor> inputs) { return impl_->CopyIn(inputs); }
absl::Status Executor::Enqueue() { return impl_->Enqueue(); }
absl::StatusOr<std::vector<HostTensor>> Executor::Outputs() { return impl_->CopyOut(impl_->main_result); }

absl::StatusOr<std::vector<HostTensor>> Executor::RunProfiled(absl::Span<const HostTensor> inputs,
                                                              std::vector<OpProfile>* profile) {
  profile->clear();
  impl_->profile = profile;
  impl_->profile_index.clear();
  impl_->marks.clear();
  impl_->backend->ResetMarks();
  absl::StatusOr<std::vector<HostTensor>> out = impl_->RunOnce(inputs);
  impl_->profile = nullptr;
  VDEV_RETURN_IF_ERROR(out.status());
  for (const auto& [entry, span] : impl_->marks)
    (*profile)[entry].seconds += impl_->backend->Seconds(span.first, span.second);
  return out;
}

}  // namespace vdev
