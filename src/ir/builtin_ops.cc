// Typed views and builders of the built-in ops.
#include "vdev/ir/builtin_ops.h"

namespace vdev::ir {
namespace {

// The arguments of `e` when it calls op `name` with `count` of them; nullopt otherwise.
std::optional<absl::Span<const Operand>> ArgsOfOp(const Module& m, const Expr& e, absl::string_view name,
                                                  uint32_t count) {
  if (e.kind != ExprKind::kOpCall || m.OpName(e) != name || e.args.count != count) return std::nullopt;
  return m.Args(e);
}

// The device of attribute `key`, kNoDevice when absent; false when present but not a device.
bool DeviceAttr(const Module& m, const Expr& e, absl::string_view key, DeviceId* out) {
  const Attr* a = m.FindAttr(e, key);
  *out = kNoDevice;
  if (a == nullptr) return true;
  if (a->value.kind != OperandKind::kDevice) return false;
  *out = a->value.index;
  return true;
}

bool BoolAttr(const Module& m, const Expr& e, absl::string_view key, bool* out) {
  const Attr* a = m.FindAttr(e, key);
  if (a == nullptr) return true;
  if (a->value.kind != OperandKind::kBool) return false;
  *out = a->value.index != 0;
  return true;
}

}  // namespace

std::optional<OnDeviceCall> AsOnDevice(const Module& m, const Expr& e) {
  const std::optional<absl::Span<const Operand>> args = ArgsOfOp(m, e, "on_device", 2);
  if (!args || !(*args)[1].is_device()) return std::nullopt;
  OnDeviceCall call{.value = (*args)[0], .device = (*args)[1].index};
  if (!BoolAttr(m, e, "constrain_body", &call.constrain_body) ||
      !BoolAttr(m, e, "constrain_result", &call.constrain_result))
    return std::nullopt;
  return call;
}

std::optional<DeviceCopyCall> AsDeviceCopy(const Module& m, const Expr& e) {
  const std::optional<absl::Span<const Operand>> args = ArgsOfOp(m, e, "device_copy", 1);
  if (!args) return std::nullopt;
  DeviceCopyCall call{.value = (*args)[0]};
  if (!DeviceAttr(m, e, "src", &call.src) || !DeviceAttr(m, e, "dst", &call.dst) || call.src == kNoDevice ||
      call.dst == kNoDevice)
    return std::nullopt;
  return call;
}

std::optional<AllocStorageCall> AsAllocStorage(const Module& m, const Expr& e) {
  const std::optional<absl::Span<const Operand>> args = ArgsOfOp(m, e, "memory.alloc_storage", 2);
  if (!args) return std::nullopt;
  AllocStorageCall call{.size = (*args)[0], .alignment = (*args)[1]};
  if (!DeviceAttr(m, e, "device", &call.device) || call.device == kNoDevice) return std::nullopt;
  return call;
}

Expr MakeDeviceCopy(Module& m, const Operand& value, const VirtualDevice& src, const VirtualDevice& dst) {
  Attr attrs[] = {m.MakeAttr("src", m.DeviceOperand(src)), m.MakeAttr("dst", m.DeviceOperand(dst))};
  return m.MakeOpCall("device_copy", {&value, 1}, attrs);
}

Expr MakeOnDevice(Module& m, const Operand& value, const VirtualDevice& device, bool constrain_body,
                  bool constrain_result) {
  Operand args[] = {value, m.DeviceOperand(device)};
  std::vector<Attr> attrs;
  if (!constrain_body) attrs.push_back(m.MakeAttr("constrain_body", m.BoolOperand(false)));
  if (constrain_result) attrs.push_back(m.MakeAttr("constrain_result", m.BoolOperand(true)));
  return m.MakeOpCall("on_device", args, attrs);
}

Expr MakeAllocStorage(Module& m, const Operand& size, const Operand& alignment, const VirtualDevice& device) {
  Operand args[] = {size, alignment};
  Attr attrs[] = {m.MakeAttr("device", m.DeviceOperand(device))};
  return m.MakeOpCall("memory.alloc_storage", args, attrs);
}

}  // namespace vdev::ir
