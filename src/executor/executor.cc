// The executor of vdev/executor/executor.h: an interpreter of lowered programs with an explicit stack. This
// file loads a program (kernels, pools, parameters) and drives runs; activation.cc interprets the
// bindings, op_runner.cc runs one op.
#include "vdev/executor/executor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "executor_impl.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using internal::CallPools;
using internal::ExecValue;
using internal::FunctionPlan;
using internal::OpKind;
using internal::PoolDevice;
using internal::PreparedOp;
using internal::StorageSlot;
using internal::TensorValue;

// The tensors of a value in order (a tuple's fields flattened).
absl::Status Flatten(const ExecValue& v, std::vector<const ExecValue*>* out) {
  std::vector<const ExecValue*> stack = {&v};
  while (!stack.empty()) {
    const ExecValue* top = stack.back();
    stack.pop_back();
    if (top->kind == ExecValue::Kind::kTensor) {
      out->push_back(top);
    } else if (top->kind == ExecValue::Kind::kTuple) {
      for (auto it = top->fields->rbegin(); it != top->fields->rend(); ++it) stack.push_back(&*it);
    } else {
      return absl::InvalidArgumentError("@main returns a value that is not a tensor or a tuple of tensors");
    }
  }
  return absl::OkStatus();
}

std::vector<TensorRef> Views(absl::Span<const HostTensor> tensors) {
  std::vector<TensorRef> views;
  views.reserve(tensors.size());
  for (const HostTensor& t : tensors) views.push_back(t.Ref());
  return views;
}

}  // namespace

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
      return absl::InvalidArgumentError(
          internal::Located(*program, e.loc,
                            absl::StrCat("kernel @", m.Name(m.functions[e.func].name),
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
    if (op.kind == OpKind::kFusedAllReduce &&
        (backend->KernelDevice(op.device) != DeviceType::kCUDA || op.type == ir::kNoType ||
         m.types.kind(op.type) != ir::TypeKind::kTuple ||
         !backend->CanCaptureAllReduce(op.reduce, m.types.node(m.types.fields(op.type)[0]).dtype)))
      return absl::OkStatus();
  }
  capturable = true;
  return absl::OkStatus();
}

absl::Status Executor::Impl::CopyIn(absl::Span<const TensorRef> inputs) {
  const ir::Module& m = program->module;
  absl::Span<const ir::Param> ps = m.Params(m.functions[main]);
  if (inputs.size() != ps.size())
    return absl::InvalidArgumentError(absl::StrCat("@main takes ", ps.size(), " inputs; ", inputs.size(), " given"));
  for (size_t i = 0; i < ps.size(); ++i) {
    const ir::TypeNode& node = m.types.node(ps[i].type);
    absl::Span<const int64_t> dims = m.types.dims(ps[i].type);
    if (inputs[i].dtype != node.dtype ||
        !std::equal(dims.begin(), dims.end(), inputs[i].shape.begin(), inputs[i].shape.end()))
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " (%", m.Name(ps[i].name), "): expected ", m.types.ToString(ps[i].type), ", got ",
                       ir::DTypeName(inputs[i].dtype), "[", absl::StrJoin(inputs[i].shape, ","), "]"));
    VDEV_RETURN_IF_ERROR(
        backend->CopyFromHost(params[i]->data, inputs[i].data, static_cast<size_t>(inputs[i].NumBytes())));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HostTensor>> Executor::Impl::CopyOut(const ExecValue& result) {
  std::vector<const ExecValue*> tensors;
  VDEV_RETURN_IF_ERROR(Flatten(result, &tensors));
  VDEV_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<HostTensor> out;
  for (const ExecValue* v : tensors) {
    HostTensor h = HostTensor::Zeros(v->tensor.dtype, v->tensor.shape);
    VDEV_RETURN_IF_ERROR(backend->CopyToHost(h.bytes.data(), v->tensor.data, h.bytes.size()));
    out.push_back(std::move(h));
  }
  return out;
}

absl::Status Executor::Impl::Enqueue() {
  const ir::Module& m = program->module;
  std::vector<ExecValue> args;
  absl::Span<const ir::Param> ps = m.Params(m.functions[main]);
  for (size_t i = 0; i < ps.size(); ++i) {
    Shape shape(m.types.dims(ps[i].type).begin(), m.types.dims(ps[i].type).end());
    args.push_back(TensorValue(params[i], 0, m.types.node(ps[i].type).dtype, shape));
  }
  // The first run is eager (kernels set up their plans); the second captures @main, later ones replay.
  if (capturable && profile == nullptr && runs >= 1) {
    if (!captured) {
      VDEV_RETURN_IF_ERROR(backend->BeginCapture());
      absl::StatusOr<ExecValue> r = Execute(args);
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

absl::StatusOr<std::vector<HostTensor>> Executor::Impl::RunOnce(absl::Span<const TensorRef> inputs) {
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
  return impl_->RunOnce(Views(inputs));
}

absl::StatusOr<std::vector<HostTensor>> Executor::RunViews(absl::Span<const TensorRef> inputs) {
  return impl_->RunOnce(inputs);
}

absl::Status Executor::SetInputs(absl::Span<const HostTensor> inputs) { return impl_->CopyIn(Views(inputs)); }
absl::Status Executor::Enqueue() { return impl_->Enqueue(); }
absl::StatusOr<std::vector<HostTensor>> Executor::Outputs() { return impl_->CopyOut(impl_->main_result); }

absl::StatusOr<std::vector<HostTensor>> Executor::RunProfiled(absl::Span<const HostTensor> inputs,
                                                              std::vector<OpProfile>* profile) {
  profile->clear();
  impl_->profile = profile;
  impl_->profile_index.clear();
  impl_->marks.clear();
  impl_->backend->ResetMarks();
  VDEV_RETURN_IF_ERROR(impl_->backend->LineUpForProfile());
  absl::StatusOr<std::vector<HostTensor>> out = impl_->RunOnce(Views(inputs));
  impl_->profile = nullptr;
  VDEV_RETURN_IF_ERROR(out.status());
  for (const auto& [entry, span] : impl_->marks)
    (*profile)[entry].seconds += impl_->backend->Seconds(span.first, span.second);
  return out;
}

}  // namespace vdev
