// What Executor::Load decides once per op-call binding: how the executor runs it.
#ifndef VDEV_SRC_EXECUTOR_PREPARED_OP_H_
#define VDEV_SRC_EXECUTOR_PREPARED_OP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/executor/executor.h"
#include "vdev/kernels/kernels.h"

namespace vdev::internal {

enum class OpKind {
  kKernel,          // a registered kernel writes the outputs
  kAllocStorage,    // memory.alloc_storage / vdev.ipc.alloc_storage: a storage of the function's pools
  kAllocTensor,     // memory.alloc_tensor: a tensor at an offset of a storage
  kView,            // reshape, vm.reshape_tensor, memory.view: the input's memory, another shape
  kAlias,           // on_device left in a program: the input itself
  kCopy,            // device_copy
  kIpcAllReduce,    // vdev.allreduce: the input lies in ipc_memory
  kAllReduce,       // allreduce
  kFusedAllReduce,  // vdev.allreduce_add_rms_norm: the backend's fused kernel, or the all-reduce then add_rms_norm
  kShapeOf,         // vm.shape_of: an i64 tensor on the host
};

struct PreparedOp {
  OpKind kind = OpKind::kKernel;
  std::string name;  // the op, for messages and profiles
  KernelFn kernel = nullptr;
  KernelAttrs attrs;
  int out_arg = -1;               // index into the expression's attrs of `out=%t`, or -1
  ir::TypeId type = ir::kNoType;  // the binding's type
  VirtualDevice device;           // where it runs (the binding's planned device)
  ReduceOp reduce = ReduceOp::kSum;
  AllReduceStrategy strategy = AllReduceStrategy::kAuto;
  // Per operand: a number operand as a 0-d tensor on `device` (of the first tensor operand's dtype).
  std::vector<std::shared_ptr<DeviceBuffer>> constants;
  ir::DType constant_dtype = ir::DType::kF32;
};

// The static shape of a tensor type, or an error naming `what` when the type is unknown or dynamic.
absl::StatusOr<Shape> StaticShape(const ir::Module& module, ir::TypeId type, absl::string_view what);

// Classifies one op-call binding and, for kernels, finds the kernel of its device type and decodes
// its attributes. Errors are located messages (FILE:LINE:COL) of `program`.
absl::StatusOr<PreparedOp> PrepareOp(const LoweredProgram& program, ir::BindingId binding, ExecutionBackend& backend);

OpKind KindOf(absl::string_view op_name);
// The ops KindOf does not call kernels: the ones the executor runs itself.
std::vector<std::string> ExecutorOpNames();

// The kernel of binding `b`'s op on `type`, or a located error naming the kernels that exist.
absl::StatusOr<KernelFn> FindKernel(const LoweredProgram& program, ir::BindingId b, DeviceType type,
                                    absl::string_view backend);

// Every op-call binding of the module, nested blocks included, in program order.
std::vector<ir::BindingId> OpCallBindings(const ir::Module& module);

// For an all-reduce binding `b` written with `workers=N`: a located error unless N == `workers`.
absl::Status CheckDeclaredWorkers(const LoweredProgram& program, ir::BindingId b, int workers);

// For `vdev run --backend cuda` before any worker starts: OK when the CUDA backend can run here
// (built, and a GPU visible), and the CUDA kernels are then in KernelRegistry::Global().
absl::Status PrepareCudaBackend();

// A located message: `file:line:col: error: message` with the source line and a caret.
std::string Located(const LoweredProgram& program, SourceLoc loc, absl::string_view message);

}  // namespace vdev::internal

#endif  // VDEV_SRC_EXECUTOR_PREPARED_OP_H_
