// Executor::Impl and the values it interprets: shared by the executor's files (executor.cc loads
// and drives runs, activation.cc steps the explicit stack, op_runner.cc runs one op binding).
#ifndef VDEV_SRC_EXECUTOR_EXECUTOR_IMPL_H_
#define VDEV_SRC_EXECUTOR_EXECUTOR_IMPL_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "prepared_op.h"
#include "vdev/executor/executor.h"

namespace vdev {
namespace internal {

struct Env;
using EnvPtr = std::shared_ptr<Env>;

struct ExecValue {
  enum class Kind : uint8_t { kNone, kTensor, kStorage, kTuple, kFunc };
  Kind kind = Kind::kNone;
  std::shared_ptr<DeviceBuffer> buffer;            // kTensor, kStorage: the memory it lies in
  size_t offset = 0;                               // kTensor, kStorage: bytes into `buffer`
  TensorRef tensor;                                // kTensor
  std::shared_ptr<std::vector<ExecValue>> fields;  // kTuple
  ir::FuncId func = ir::kNoFunc;                   // kFunc
  EnvPtr env;                                      // kFunc: what a local function captured
};

inline uint64_t Key(ir::ValueRef v) { return (uint64_t{static_cast<uint8_t>(v.kind)} << 32) | v.index; }

// The values of one function call; a local function's environment chains to its definer's.
struct Env {
  absl::flat_hash_map<uint64_t, ExecValue> values;
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
  bool outermost = false;                 // @main's own body (and its if arms): allocations are kept across runs
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

inline VirtualDevice PoolDevice(const PoolKey& key) {
  absl::StatusOr<VirtualDevice> vd = VirtualDevice::Make(key.device.type, key.device.id, std::nullopt, key.scope);
  return vd.ok() ? *vd : VirtualDevice::ForDevice(key.device.type, key.device.id);
}

// A tensor value at `offset` bytes into `buffer`.
ExecValue TensorValue(std::shared_ptr<DeviceBuffer> buffer, size_t offset, ir::DType dtype, Shape shape);

}  // namespace internal

struct Executor::Impl {
  const LoweredProgram* program = nullptr;
  ExecutionBackend* backend = nullptr;
  ir::FuncId main = ir::kNoFunc;
  std::vector<ir::TypeId> param_types;
  std::vector<std::shared_ptr<DeviceBuffer>> params;  // @main's, on their planned devices
  std::vector<int32_t> op_index;                      // per binding: index into ops, or -1
  std::vector<internal::PreparedOp> ops;
  absl::flat_hash_map<ir::FuncId, internal::FunctionPlan> functions;
  absl::flat_hash_map<ir::BindingId, internal::StorageSlot> storage_slots;
  std::shared_ptr<internal::CallPools> main_pools;
  // Results of unplanned bindings of @main's body, kept so every run writes the same memory.
  absl::flat_hash_map<ir::BindingId, std::vector<std::shared_ptr<DeviceBuffer>>> kept;
  bool capturable = false;
  bool captured = false;
  int runs = 0;
  internal::ExecValue main_result;
  // The environments local functions captured during one Execute. A closure stored in the environment
  // it captured (or in an ancestor of it) makes a shared_ptr cycle; Execute cuts them when it ends.
  std::vector<std::weak_ptr<internal::Env>> captured_envs;
  // Profiling: marks around each op of one run.
  std::vector<OpProfile>* profile = nullptr;
  std::vector<std::pair<int, std::pair<int, int>>> marks;  // (profile entry, (from, to))
  absl::flat_hash_map<std::string, int> profile_index;

  absl::Status Load();
  absl::Status PrepareFunctionPlans();
  absl::StatusOr<std::shared_ptr<internal::CallPools>> AllocatePools(ir::FuncId func);
  absl::Status CheckCapturable();
  absl::StatusOr<internal::ExecValue> Execute(absl::Span<const internal::ExecValue> args);
  absl::Status Step(std::vector<internal::Activation>& stack);
  absl::Status RunTimedOp(internal::Activation& act, ir::BindingId b, internal::ExecValue* result);
  absl::Status MakeConst(ir::BindingId b, internal::ExecValue* result);
  absl::Status PushArm(std::vector<internal::Activation>& stack, ir::BindingId b);
  absl::Status PushCall(std::vector<internal::Activation>& stack, ir::BindingId b);
  absl::StatusOr<internal::ExecValue> Lookup(const internal::Env& env, const ir::Operand& o) const;
  absl::Status RunOp(internal::Activation& act, ir::BindingId b, internal::ExecValue* result);
  absl::Status RunKernel(internal::Activation& act, ir::BindingId b, const internal::PreparedOp& op,
                         internal::ExecValue* result);
  absl::StatusOr<std::optional<internal::ExecValue>> OutTensor(const internal::Env& env, ir::BindingId b,
                                                               const internal::PreparedOp& op) const;
  absl::Status RunFusedAllReduce(internal::Activation& act, ir::BindingId b, const internal::PreparedOp& op,
                                 internal::ExecValue* result);
  absl::StatusOr<std::vector<std::shared_ptr<DeviceBuffer>>> OutputBuffers(internal::Activation& act, ir::BindingId b,
                                                                           const internal::PreparedOp& op,
                                                                           std::vector<TensorRef>* outs);
  absl::StatusOr<std::vector<HostTensor>> CopyOut(const internal::ExecValue& result);
  absl::Status CopyIn(absl::Span<const TensorRef> inputs);
  absl::StatusOr<std::vector<HostTensor>> RunOnce(absl::Span<const TensorRef> inputs);
  absl::Status Enqueue();
  // `FILE:LINE:COL: ` of binding b's expression, to prefix what went wrong running it.
  std::string Where(ir::BindingId b) const {
    const SourceLoc loc = program->module.bindings[b].expr.loc;
    if (!loc.valid()) return absl::StrCat(program->file, ": ");
    return absl::StrCat(program->file, ":", loc.line, ":", loc.col, ": ");
  }
};

}  // namespace vdev

#endif  // VDEV_SRC_EXECUTOR_EXECUTOR_IMPL_H_
