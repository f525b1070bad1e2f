// The op runner of the executor: one op-call binding (kernels, views, storages, copies, all-reduces).
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "executor_impl.h"
#include "vdev/support/status_macros.h"

namespace vdev {

namespace internal {

ExecValue TensorValue(std::shared_ptr<DeviceBuffer> buffer, size_t offset, ir::DType dtype, Shape shape) {
  ExecValue v;
  v.kind = ExecValue::Kind::kTensor;
  v.tensor = TensorRef{static_cast<char*>(buffer->data) + offset, dtype, std::move(shape)};
  v.buffer = std::move(buffer);
  v.offset = offset;
  return v;
}

}  // namespace internal

namespace {

using internal::Activation;
using internal::Env;
using internal::ExecValue;
using internal::OpKind;
using internal::PreparedOp;
using internal::TensorValue;

}  // namespace

absl::StatusOr<std::vector<std::shared_ptr<DeviceBuffer>>> Executor::Impl::OutputBuffers(Activation& act,
                                                                                         ir::BindingId b,
                                                                                         const PreparedOp& op,
                                                                                         std::vector<TensorRef>* outs) {
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
  if (act.outermost) kept[b] = buffers;
  return buffers;
}

// vdev.allreduce_add_rms_norm(x, residual, gamma) -> (h, n): one fused kernel where the backend has
// one for the call (CUDA, one-shot sizes); otherwise the all-reduce of x lands in h's buffer, then
// one kernel pass adds the residual in place and writes the normalised n.
absl::Status Executor::Impl::RunFusedAllReduce(Activation& act, ir::BindingId b, const PreparedOp& op,
                                               ExecValue* result) {
  const ir::Module& m = program->module;
  absl::Span<const ir::Operand> args = m.Args(m.bindings[b].expr);
  if (args.size() != 3 || op.type == ir::kNoType || m.types.kind(op.type) != ir::TypeKind::kTuple)
    return absl::InvalidArgumentError(absl::StrCat(Where(b), "the fused all-reduce needs 3 operands and a tuple type"));
  std::vector<ExecValue> in;
  for (const ir::Operand& a : args) {
    VDEV_ASSIGN_OR_RETURN(ExecValue v, Lookup(*act.env, a));
    if (v.kind != ExecValue::Kind::kTensor)
      return absl::InvalidArgumentError(absl::StrCat(Where(b), "an operand is not a tensor"));
    in.push_back(std::move(v));
  }
  std::vector<TensorRef> outs;
  for (ir::TypeId t : m.types.fields(op.type)) {
    VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, t, "the fused all-reduce's result"));
    outs.push_back(TensorRef{nullptr, m.types.node(t).dtype, shape});
  }
  VDEV_ASSIGN_OR_RETURN(auto buffers, OutputBuffers(act, b, op, &outs));
  auto tuple_result = [&] {
    result->kind = ExecValue::Kind::kTuple;
    result->fields = std::make_shared<std::vector<ExecValue>>();
    for (size_t i = 0; i < outs.size(); ++i)
      result->fields->push_back(TensorValue(buffers[i], 0, outs[i].dtype, outs[i].shape));
    return absl::OkStatus();
  };
  const float epsilon = static_cast<float>(op.attrs.FloatOr("epsilon", 1e-6));
  absl::StatusOr<bool> fused = backend->AllReduceAddRmsNorm(in[0].tensor, in[1].tensor, in[2].tensor, outs[0], outs[1],
                                                            epsilon, op.strategy, op.device);
  if (!fused.ok()) return absl::Status(fused.status().code(), absl::StrCat(Where(b), fused.status().message()));
  if (*fused) return tuple_result();
  IPCBuffer ipc;
  const bool in_ipc = in[0].buffer != nullptr && in[0].buffer->ipc != nullptr;
  if (in_ipc) ipc = IPCBuffer{in[0].buffer->ipc, in[0].offset};
  const TensorRef sum{outs[0].data, in[0].tensor.dtype, in[0].tensor.shape};
  if (absl::Status s =
          backend->AllReduce(in[0].tensor, in_ipc ? &ipc : nullptr, sum, op.reduce, op.strategy, op.device);
      !s.ok())
    return absl::Status(s.code(), absl::StrCat(Where(b), s.message()));
  VDEV_ASSIGN_OR_RETURN(KernelContext * context, backend->Context(op.device));
  const TensorRef kernel_in[] = {in[1].tensor, outs[0], in[2].tensor};
  KernelCall call{.inputs = kernel_in, .outputs = outs, .attrs = &op.attrs, .context = context};
  if (absl::Status s = op.kernel(call); !s.ok()) return absl::Status(s.code(), absl::StrCat(Where(b), s.message()));
  return tuple_result();
}

absl::Status Executor::Impl::RunOp(Activation& act, ir::BindingId b, ExecValue* result) {
  const ir::Module& m = program->module;
  const ir::Expr& e = m.bindings[b].expr;
  const PreparedOp& op = ops[op_index[b]];
  absl::Span<const ir::Operand> args = m.Args(e);
  const Env& env = *act.env;
  auto input = [&](size_t i) -> absl::StatusOr<ExecValue> {
    if (i >= args.size()) return absl::InvalidArgumentError(absl::StrCat(Where(b), "missing operand"));
    return Lookup(env, args[i]);
  };
  // The result's memory: `out=%t`, or a new buffer of the binding's type on the op's device.
  auto fresh_output = [&](ir::DType dtype, const Shape& shape) -> absl::StatusOr<ExecValue> {
    VDEV_ASSIGN_OR_RETURN(std::optional<ExecValue> out, OutTensor(env, b, op));
    if (out) return *out;
    std::vector<TensorRef> refs = {TensorRef{nullptr, dtype, shape}};
    VDEV_ASSIGN_OR_RETURN(auto buffers, OutputBuffers(act, b, op, &refs));
    return TensorValue(buffers[0], 0, dtype, shape);
  };
  switch (op.kind) {
    case OpKind::kAllocStorage: {
      auto slot = storage_slots.find(b);
      if (slot == storage_slots.end() || act.pools == nullptr ||
          slot->second.pool >= static_cast<int>(act.pools->pools.size()))
        return absl::InvalidArgumentError(absl::StrCat(Where(b), "a storage outside the memory plan"));
      result->kind = ExecValue::Kind::kStorage;
      result->buffer = act.pools->pools[slot->second.pool];
      result->offset = static_cast<size_t>(slot->second.offset);
      return absl::OkStatus();
    }
    case OpKind::kAllocTensor: {
      VDEV_ASSIGN_OR_RETURN(ExecValue storage, input(0));
      VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, op.type, "memory.alloc_tensor"));
      const ir::Operand& offset = args[1];
      int64_t at = 0;
      if (offset.kind == ir::OperandKind::kNumber)
        at = std::strtoll(std::string(m.Name(offset.symbol)).c_str(), nullptr, 10);
      *result =
          TensorValue(storage.buffer, storage.offset + static_cast<size_t>(at), m.types.node(op.type).dtype, shape);
      return absl::OkStatus();
    }
    case OpKind::kView: {
      VDEV_ASSIGN_OR_RETURN(ExecValue in, input(0));
      VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, op.type, op.name));
      *result = TensorValue(in.buffer, in.offset, in.tensor.dtype, shape);
      return absl::OkStatus();
    }
    case OpKind::kAlias: {
      VDEV_ASSIGN_OR_RETURN(*result, input(0));
      return absl::OkStatus();
    }
    case OpKind::kShapeOf: {
      VDEV_ASSIGN_OR_RETURN(ExecValue in, input(0));
      Shape dims = {static_cast<int64_t>(in.tensor.shape.size())};
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(ir::DType::kI64, dims));
      std::vector<int64_t> host(in.tensor.shape.begin(), in.tensor.shape.end());
      return backend->CopyFromHost(result->tensor.data, host.data(), host.size() * sizeof(int64_t));
    }
    case OpKind::kCopy: {
      VDEV_ASSIGN_OR_RETURN(ExecValue in, input(0));
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(in.tensor.dtype, in.tensor.shape));
      return backend->Copy(result->tensor.data, in.tensor.data, static_cast<size_t>(in.tensor.NumBytes()));
    }
    case OpKind::kIpcAllReduce:
    case OpKind::kAllReduce: {
      VDEV_ASSIGN_OR_RETURN(ExecValue in, input(0));
      VDEV_ASSIGN_OR_RETURN(*result, fresh_output(in.tensor.dtype, in.tensor.shape));
      IPCBuffer ipc;
      const bool in_ipc = in.buffer != nullptr && in.buffer->ipc != nullptr;
      if (in_ipc) ipc = IPCBuffer{in.buffer->ipc, in.offset};
      absl::Status s =
          backend->AllReduce(in.tensor, in_ipc ? &ipc : nullptr, result->tensor, op.reduce, op.strategy, op.device);
      if (!s.ok()) return absl::Status(s.code(), absl::StrCat(Where(b), s.message()));
      return absl::OkStatus();
    }
    case OpKind::kFusedAllReduce: return RunFusedAllReduce(act, b, op, result);
    case OpKind::kKernel: break;
  }
  return RunKernel(act, b, op, result);
}

// `out=%t` of binding b when its op has one.
absl::StatusOr<std::optional<ExecValue>> Executor::Impl::OutTensor(const Env& env, ir::BindingId b,
                                                                   const PreparedOp& op) const {
  if (op.out_arg < 0) return std::optional<ExecValue>();
  const ir::Module& m = program->module;
  VDEV_ASSIGN_OR_RETURN(ExecValue t, Lookup(env, m.Attrs(m.bindings[b].expr)[op.out_arg].value));
  if (t.kind != ExecValue::Kind::kTensor)
    return absl::InvalidArgumentError(absl::StrCat(Where(b), "out= is not a tensor"));
  return std::optional<ExecValue>(std::move(t));
}

// A kernel's call: operands (numbers as the op's constants), results in `out=` or fresh buffers.
absl::Status Executor::Impl::RunKernel(Activation& act, ir::BindingId b, const PreparedOp& op, ExecValue* result) {
  const ir::Module& m = program->module;
  absl::Span<const ir::Operand> args = m.Args(m.bindings[b].expr);
  const Env& env = *act.env;
  std::vector<TensorRef> inputs;
  inputs.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (op.constants[i] != nullptr) {
      inputs.push_back(TensorRef{op.constants[i]->data, op.constant_dtype, {}});
      continue;
    }
    if (args[i].kind == ir::OperandKind::kDevice) continue;
    VDEV_ASSIGN_OR_RETURN(ExecValue v, Lookup(env, args[i]));
    if (v.kind != ExecValue::Kind::kTensor)
      return absl::InvalidArgumentError(absl::StrCat(Where(b), "operand ", i, " of '", op.name, "' is not a tensor"));
    inputs.push_back(v.tensor);
  }
  std::vector<TensorRef> outs;
  const bool tuple = op.type != ir::kNoType && m.types.kind(op.type) == ir::TypeKind::kTuple;
  std::vector<ir::TypeId> out_types =
      tuple ? std::vector<ir::TypeId>(m.types.fields(op.type).begin(), m.types.fields(op.type).end())
            : std::vector<ir::TypeId>{op.type};
  for (ir::TypeId t : out_types) {
    VDEV_ASSIGN_OR_RETURN(Shape shape, internal::StaticShape(m, t, absl::StrCat("the result of '", op.name, "'")));
    outs.push_back(TensorRef{nullptr, m.types.node(t).dtype, shape});
  }
  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  VDEV_ASSIGN_OR_RETURN(std::optional<ExecValue> out, OutTensor(env, b, op));
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
    result->kind = ExecValue::Kind::kTuple;
    result->fields = std::make_shared<std::vector<ExecValue>>();
    for (size_t i = 0; i < outs.size(); ++i)
      result->fields->push_back(TensorValue(buffers[i], 0, outs[i].dtype, outs[i].shape));
  }
  return absl::OkStatus();
}

}  // namespace vdev
