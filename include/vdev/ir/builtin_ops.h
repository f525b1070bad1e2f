// Typed views of the built-in ops the planner interprets (docs/spec/ir-text.md), and builders.
//
//   if (std::optional<OnDeviceCall> on = AsOnDevice(module, binding.expr)) {
//     const VirtualDevice& vd = module.Device(on->device);  … on->constrain_result …
//   }
//   binding.expr = MakeDeviceCopy(module, value, cpu0, cuda0);
// The views assume a verified module (arities and attribute kinds checked); on anything else they
// return nullopt.
#ifndef VDEV_BUILTIN_OPS_H_
#define VDEV_BUILTIN_OPS_H_

#include <optional>

#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::ir {

// on_device(%x, vd, constrain_body=true, constrain_result=false); absent flags take these defaults.
struct OnDeviceCall {
  Operand value;
  DeviceId device = kNoDevice;
  bool constrain_body = true;
  bool constrain_result = false;
  // Both false: only marks a place where a copy is allowed.
  bool is_free() const { return !constrain_body && !constrain_result; }
};
std::optional<OnDeviceCall> AsOnDevice(const Module& module, const Expr& expr);

// device_copy(%x, src=vd, dst=vd).
struct DeviceCopyCall {
  Operand value;
  DeviceId src = kNoDevice;
  DeviceId dst = kNoDevice;
};
std::optional<DeviceCopyCall> AsDeviceCopy(const Module& module, const Expr& expr);

// memory.alloc_storage(%size, %alignment, device=vd).
struct AllocStorageCall {
  Operand size;
  Operand alignment;
  DeviceId device = kNoDevice;
};
std::optional<AllocStorageCall> AsAllocStorage(const Module& module, const Expr& expr);

// `device_copy(value, src=src, dst=dst)` (appends its operands to the module's arenas).
Expr MakeDeviceCopy(Module& module, const Operand& value, const VirtualDevice& src, const VirtualDevice& dst);
// `on_device(value, device[, constrain_body=false][, constrain_result=true])`: flags at their
// defaults are not written.
Expr MakeOnDevice(Module& module, const Operand& value, const VirtualDevice& device, bool constrain_body = true,
                  bool constrain_result = false);
// `memory.alloc_storage(size, alignment, device=device)`.
Expr MakeAllocStorage(Module& module, const Operand& size, const Operand& alignment, const VirtualDevice& device);

}  // namespace vdev::ir

#endif  // VDEV_BUILTIN_OPS_H_
