// Load-time decisions per op call: kind, kernel, attributes, constants (see prepared_op.h).
#include "prepared_op.h"

#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "known_ops.h"
#include "vdev/memory/fuse_allreduce.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

std::optional<int64_t> ParseInt(absl::string_view s) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(absl::string_view s) {
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

ir::TypeId TypeOf(const ir::Module& m, const ir::Operand& o) {
  if (!o.is_local()) return ir::kNoType;
  return o.value.is_param() ? m.params[o.value.index].type : m.bindings[o.value.index].type;
}

// Decodes every attribute but `out` (and device literals, which no kernel reads).
absl::Status DecodeAttrs(const LoweredProgram& program, const ir::Expr& expr, PreparedOp& op) {
  const ir::Module& m = program.module;
  absl::Span<const ir::Attr> attrs = m.Attrs(expr);
  for (size_t i = 0; i < attrs.size(); ++i) {
    const ir::Attr& a = attrs[i];
    std::string key(m.Name(a.key));
    const ir::Operand& v = a.value;
    if (key == "out") {
      if (!v.is_local()) return absl::InvalidArgumentError(Located(program, a.loc, "`out=` must name a tensor"));
      op.out_arg = static_cast<int>(i);
      continue;
    }
    switch (v.kind) {
      case ir::OperandKind::kNumber: {
        absl::string_view text = m.Name(v.symbol);
        if (std::optional<int64_t> n = ParseInt(text)) {
          op.attrs.Set(key, *n);
        } else if (std::optional<double> d = ParseDouble(text)) {
          op.attrs.Set(key, *d);
        } else {
          return absl::InvalidArgumentError(Located(program, v.loc, absl::StrCat("cannot read number '", text, "'")));
        }
        break;
      }
      case ir::OperandKind::kIntList: {
        absl::Span<const int64_t> ints = m.Ints(v);
        op.attrs.Set(key, std::vector<int64_t>(ints.begin(), ints.end()));
        break;
      }
      case ir::OperandKind::kIdent: op.attrs.Set(key, std::string(m.Name(v.symbol))); break;
      case ir::OperandKind::kString: {
        absl::string_view s = m.Name(v.symbol);
        op.attrs.Set(key, std::string(s.substr(1, s.size() - 2)));
        break;
      }
      case ir::OperandKind::kBool: op.attrs.Set(key, v.index != 0); break;
      default: break;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReduceOp> ReduceOpOf(const LoweredProgram& program, const ir::Expr& expr, const PreparedOp& op) {
  std::string name = op.attrs.Text("op").value_or("sum");
  if (name == "sum") return ReduceOp::kSum;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  if (name == "prod") return ReduceOp::kProd;
  if (name == "avg") return ReduceOp::kAvg;
  return absl::InvalidArgumentError(Located(program, expr.loc, absl::StrCat("unknown reduction '", name, "'")));
}

// A number operand as a 0-d tensor of `dtype` in host memory, then on the op's device.
absl::StatusOr<std::shared_ptr<DeviceBuffer>> MakeConstant(const LoweredProgram& program, const ir::Operand& o,
                                                           ir::DType dtype, const VirtualDevice& device,
                                                           ExecutionBackend& backend) {
  absl::string_view text = program.module.Name(o.symbol);
  std::optional<double> value = ParseDouble(text);
  if (!value)
    return absl::InvalidArgumentError(Located(program, o.loc, absl::StrCat("cannot read number '", text, "'")));
  HostTensor host = HostTensor::Zeros(dtype, {});
  void* p = host.bytes.data();
  switch (dtype) {
    case ir::DType::kF64: {
      double v = *value;
      std::memcpy(p, &v, 8);
      break;
    }
    case ir::DType::kF32: {
      float v = static_cast<float>(*value);
      std::memcpy(p, &v, 4);
      break;
    }
    case ir::DType::kF16: {
      uint16_t v = FloatToHalf(static_cast<float>(*value));
      std::memcpy(p, &v, 2);
      break;
    }
    case ir::DType::kBF16: {
      uint16_t v = FloatToBF16(static_cast<float>(*value));
      std::memcpy(p, &v, 2);
      break;
    }
    case ir::DType::kI64: {
      int64_t v = static_cast<int64_t>(*value);
      std::memcpy(p, &v, 8);
      break;
    }
    case ir::DType::kI32: {
      int32_t v = static_cast<int32_t>(*value);
      std::memcpy(p, &v, 4);
      break;
    }
    default: {
      uint8_t v = static_cast<uint8_t>(*value);
      std::memcpy(p, &v, 1);
      break;
    }
  }
  VDEV_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer, backend.Allocate(device, host.bytes.size()));
  VDEV_RETURN_IF_ERROR(backend.CopyFromHost(buffer->data, host.bytes.data(), host.bytes.size()));
  return buffer;
}

// The ops the executor runs itself; every other op is a kernel's. A function's static, not a
// constexpr array: under UBSan a string_view of a named array is no constant expression, and a
// dynamically initialised global could be read before its initialiser runs.
absl::Span<const std::pair<absl::string_view, OpKind>> ExecutorOps() {
  static const std::pair<absl::string_view, OpKind> kExecutorOps[] = {
      {"memory.alloc_storage", OpKind::kAllocStorage},
      {"vdev.ipc.alloc_storage", OpKind::kAllocStorage},
      {"memory.alloc_tensor", OpKind::kAllocTensor},
      {"reshape", OpKind::kView},
      {"vm.reshape_tensor", OpKind::kView},
      {"memory.view", OpKind::kView},
      {"on_device", OpKind::kAlias},
      {"device_copy", OpKind::kCopy},
      {"vdev.allreduce", OpKind::kIpcAllReduce},
      {"allreduce", OpKind::kAllReduce},
      {"vm.shape_of", OpKind::kShapeOf},
      {kFusedAllReduceOp, OpKind::kFusedAllReduce},
  };
  return kExecutorOps;
}

}  // namespace

OpKind KindOf(absl::string_view name) {
  for (const auto& [op, kind] : ExecutorOps())
    if (op == name) return kind;
  return OpKind::kKernel;
}

std::vector<std::string> ExecutorOpNames() {
  std::vector<std::string> names;
  for (const auto& [op, kind] : ExecutorOps()) names.emplace_back(op);
  return names;
}

absl::StatusOr<KernelFn> FindKernel(const LoweredProgram& program, ir::BindingId b, DeviceType type,
                                    absl::string_view backend) {
  const ir::Module& m = program.module;
  const ir::Expr& expr = m.bindings[b].expr;
  const absl::string_view name = m.OpName(expr);
  KernelFn kernel = KernelRegistry::Global().Find(name, type);
  if (kernel != nullptr) return kernel;
  const ir::DeviceId device = b < program.binding_devices.size() ? program.binding_devices[b] : ir::kNoDevice;
  return absl::InvalidArgumentError(
      Located(program, expr.loc,
              absl::StrCat("op '", name, "' has no kernel on ", DeviceTypeName(type), " (planned on ",
                           device == ir::kNoDevice ? "?" : m.Device(device).ToString(), "; the ", backend,
                           " backend has kernels for: ", absl::StrJoin(KernelRegistry::Global().Ops(type), ", "), ")",
                           DidYouMean(name))));
}

std::string Located(const LoweredProgram& program, SourceLoc loc, absl::string_view message) {
  std::string text = FormatDiagnostic(program.file, program.source, {Severity::kError, loc, std::string(message)});
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

absl::StatusOr<Shape> StaticShape(const ir::Module& module, ir::TypeId type, absl::string_view what) {
  if (type == ir::kNoType || module.types.kind(type) != ir::TypeKind::kTensor)
    return absl::InvalidArgumentError(absl::StrCat(what, " has no known tensor type (write one: `%x: f32[4] = ...`)"));
  Shape shape;
  for (int64_t d : module.types.dims(type)) {
    if (d == ir::kDynamicDim)
      return absl::InvalidArgumentError(absl::StrCat(what, " has a dynamic shape ", module.types.ToString(type),
                                                     "; the executor needs static shapes"));
    shape.push_back(d);
  }
  return shape;
}

absl::StatusOr<PreparedOp> PrepareOp(const LoweredProgram& program, ir::BindingId b, ExecutionBackend& backend) {
  const ir::Module& m = program.module;
  const ir::Binding& binding = m.bindings[b];
  const ir::Expr& expr = binding.expr;
  PreparedOp op;
  op.name = std::string(m.OpName(expr));
  op.kind = KindOf(op.name);
  op.type = binding.type;
  const ir::DeviceId device = b < program.binding_devices.size() ? program.binding_devices[b] : ir::kNoDevice;
  if (device == ir::kNoDevice)
    return absl::InvalidArgumentError(
        Located(program, expr.loc, absl::StrCat("'", op.name, "' was not given a device by the planner")));
  op.device = m.Device(device);
  VDEV_RETURN_IF_ERROR(DecodeAttrs(program, expr, op));
  switch (op.kind) {
    case OpKind::kFusedAllReduce: {
      const DeviceType type = backend.KernelDevice(op.device);
      op.kernel = KernelRegistry::Global().Find(kAddRmsNormKernel, type);
      if (op.kernel == nullptr)
        return absl::InvalidArgumentError(Located(
            program, expr.loc,
            absl::StrCat("the fused all-reduce has no ", kAddRmsNormKernel, " kernel on ", DeviceTypeName(type))));
      [[fallthrough]];
    }
    case OpKind::kIpcAllReduce:
    case OpKind::kAllReduce: {
      VDEV_RETURN_IF_ERROR(CheckDeclaredWorkers(program, b, backend.world_size()));
      VDEV_ASSIGN_OR_RETURN(op.reduce, ReduceOpOf(program, expr, op));
      if (std::optional<std::string> s = op.attrs.Text("strategy")) {
        std::optional<AllReduceStrategy> strategy = AllReduceStrategyFromName(*s);
        if (!strategy)
          return absl::InvalidArgumentError(
              Located(program, expr.loc, absl::StrCat("unknown all-reduce strategy '", *s, "'")));
        op.strategy = *strategy;
      } else if (op.kind != OpKind::kIpcAllReduce) {
        op.strategy = AllReduceStrategy::kNccl;
      }
      break;
    }
    case OpKind::kKernel: {
      VDEV_ASSIGN_OR_RETURN(op.kernel, FindKernel(program, b, backend.KernelDevice(op.device), backend.name()));
      break;
    }
    default: break;
  }
  // Number operands of kernels become 0-d tensors of the first tensor operand's dtype.
  absl::Span<const ir::Operand> args = m.Args(expr);
  op.constants.resize(args.size());
  if (op.kind == OpKind::kKernel) {
    ir::DType dtype = ir::DType::kF32;
    for (const ir::Operand& a : args) {
      ir::TypeId t = TypeOf(m, a);
      if (t != ir::kNoType && m.types.kind(t) == ir::TypeKind::kTensor) {
        dtype = m.types.node(t).dtype;
        break;
      }
    }
    op.constant_dtype = dtype;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].kind != ir::OperandKind::kNumber) continue;
      VDEV_ASSIGN_OR_RETURN(op.constants[i], MakeConstant(program, args[i], dtype, op.device, backend));
    }
  }
  return op;
}

std::vector<ir::BindingId> OpCallBindings(const ir::Module& m) {
  struct Collect : ir::Visitor {
    const ir::Module* m;
    std::vector<ir::BindingId> calls;
    void Binding(ir::BindingId b) override {
      if (m->bindings[b].expr.kind == ir::ExprKind::kOpCall) calls.push_back(b);
    }
  } collect;
  collect.m = &m;
  ir::WalkModule(m, collect);
  return std::move(collect.calls);
}

absl::Status CheckDeclaredWorkers(const LoweredProgram& program, ir::BindingId b, int workers) {
  const ir::Module& m = program.module;
  const ir::Expr& expr = m.bindings[b].expr;
  const ir::Attr* attr = m.FindAttr(expr, "workers");
  if (attr == nullptr || attr->value.kind != ir::OperandKind::kNumber) return absl::OkStatus();
  const std::optional<int64_t> declared = ParseInt(m.Name(attr->value.symbol));
  if (!declared || *declared == workers) return absl::OkStatus();
  return absl::InvalidArgumentError(
      Located(program, attr->loc,
              absl::StrCat("the all-reduce %", m.Name(m.bindings[b].name), " is written for ", *declared,
                           " workers (workers=", *declared, "); it cannot run on ", workers)));
}

}  // namespace vdev::internal

namespace vdev {

absl::Status CheckWorkerCount(const LoweredProgram& program, int workers) {
  for (ir::BindingId b : internal::OpCallBindings(program.module)) {
    const internal::OpKind kind = internal::KindOf(program.module.OpName(program.module.bindings[b].expr));
    if (kind == internal::OpKind::kAllReduce || kind == internal::OpKind::kIpcAllReduce)
      VDEV_RETURN_IF_ERROR(internal::CheckDeclaredWorkers(program, b, workers));
  }
  return absl::OkStatus();
}

absl::Status CheckKernels(const LoweredProgram& program, absl::string_view backend_name) {
  if (backend_name == "cuda") VDEV_RETURN_IF_ERROR(internal::PrepareCudaBackend());
  const ir::Module& m = program.module;
  for (ir::BindingId b : internal::OpCallBindings(m)) {
    if (internal::KindOf(m.OpName(m.bindings[b].expr)) != internal::OpKind::kKernel) continue;
    DeviceType type = DeviceType::kCPU;
    const ir::DeviceId d = b < program.binding_devices.size() ? program.binding_devices[b] : ir::kNoDevice;
    if (backend_name == "cuda" && d != ir::kNoDevice && m.Device(d).device_type() == DeviceType::kCUDA)
      type = DeviceType::kCUDA;
    VDEV_RETURN_IF_ERROR(internal::FindKernel(program, b, type, backend_name).status());
  }
  return absl::OkStatus();
}

}  // namespace vdev
