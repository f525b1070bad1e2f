// LowerMemory: from a device-planned module to the explicit-allocation form of docs/lowered-form.md.
//
// First, unless LowerOptions::fuse_allreduce is off, FuseAllReduceAddNorm (vdev/memory/fuse_allreduce.h):
// allreduce -> add -> rms_norm chains become one `vdev.allreduce_add_rms_norm`, whose first operand
// step 2 treats like an all-reduce input. Then for every global function, in order:
//   1. Ownership and liveness: each op call whose result is a tensor of static shape gets an
//      allocation on its planned device, in the device's memory scope (`global` where none was
//      planned). Views (`reshape`, `vm.reshape_tensor`, `memory.view`), aliases, tuples and
//      projections share their source's allocation and extend its live range.
//   2. IPC all-reduce rewrite: the input of each `allreduce(op=sum)` is traced back through
//      aliases, views and projections of tuples to the allocation of the op that produced it; that
//      allocation moves to `ipc_memory` on the same device (the producer writes straight into IPC
//      memory, no copy) and the call becomes `vdev.allreduce(…, strategy=S)`. A non-sum all-reduce or
//      an input that does not trace to an allocation of this function (a parameter, a call's result,
//      a constant, an `if`) stays an NCCL `allreduce`; AllReduceInfo::reason says why.
//   3. Static planning per (device, scope) pool with PlanStorage (best fit; parameters are not
//      allocated here, results are never reused), re-checked with VerifyStoragePlan.
//   4. Emission: `memory.alloc_storage` bindings first, a `memory.alloc_tensor` before each
//      producer, the producer writing into it with `out=%t`.
//   5. LowerIpcAllocStorage: `ipc_memory` storages become `vdev.ipc.alloc_storage`.
// Nothing recurses with the program's size or nesting depth.
//
// Example:
//   absl::StatusOr<PlanResult> planned = PlanDevices(module, {});
//   absl::StatusOr<MemoryPlan> memory = LowerMemory(planned->module, planned->binding_devices);
//   std::cout << ir::PrintModule(planned->module);   // the lowered program
#ifndef VDEV_LOWER_MEMORY_H_
#define VDEV_LOWER_MEMORY_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/memory/fuse_allreduce.h"
#include "vdev/memory/storage_plan.h"

namespace vdev {

// How the runtime's custom all-reduce runs: `auto` picks by size at run time; `plan:NAME` runs the
// channel plan NAME (vdev/channels/channel_algorithms.h; whoever runs the program resolves the name).
struct AllReduceStrategy {
  enum Kind { kAuto, kOneShot, kTwoShot, kNccl, kPlan };
  AllReduceStrategy(Kind kind = kAuto) : kind(kind) {}  // NOLINT: a kind converts implicitly
  static AllReduceStrategy Plan(std::string name) {
    AllReduceStrategy s(kPlan);
    s.plan = std::move(name);
    return s;
  }
  Kind kind = kAuto;
  std::string plan;  // kPlan only
  friend bool operator==(const AllReduceStrategy&, const AllReduceStrategy&) = default;
};
std::string AllReduceStrategyName(const AllReduceStrategy& strategy);  // "auto", "one-shot", "plan:two_shot"
std::ostream& operator<<(std::ostream& os, const AllReduceStrategy& strategy);
// "auto", "one-shot", "two-shot", "nccl", or "plan:NAME" with NAME of [a-z0-9_-]+. One spelling is
// canonical (what AllReduceStrategyName prints): built-in strategies with hyphens, plan names with
// underscores, as the shipped plans are named (vdev/channels/channel_algorithms.h). The other spelling
// (`one_shot`, `plan:one-shot`) is accepted; then `*note`, when given, says how it is spelled (for
// stderr), and is emptied otherwise.
std::optional<AllReduceStrategy> AllReduceStrategyFromName(absl::string_view name, std::string* note = nullptr);

struct LowerOptions {
  // The strategy written on every rewritten all-reduce.
  AllReduceStrategy strategy = AllReduceStrategy::kAuto;
  // False skips the IPC all-reduce rewrite (every all-reduce stays on NCCL), e.g. to compare.
  bool ipc_allreduce = true;
  // The all-reduce fusion (vdev/memory/fuse_allreduce.h) before lowering; false keeps the all-reduce,
  // the add and the rms_norm apart (`--no-fuse-allreduce`).
  bool fuse_allreduce = true;
  StoragePlanOptions storage;
};

// A tensor the function allocates: the op binding that writes it and where it lives.
struct PlannedTensor {
  ir::BindingId binding = ir::kNoBinding;  // the producer (writes with out=)
  ir::BindingId alloc = ir::kNoBinding;    // its memory.alloc_tensor binding
  int storage = -1;                        // index into FunctionMemory::plan.storages
  int64_t offset = 0;                      // byte offset within the storage
  int64_t bytes = 0;
};

struct AllReduceInfo {
  ir::BindingId binding = ir::kNoBinding;
  std::string op;  // the reduction, e.g. "sum"
  AllReduceStrategy strategy = AllReduceStrategy::kNccl;
  bool ipc = false;                               // rewritten: its input's allocation is in ipc_memory
  bool fused = false;                             // a vdev.allreduce_add_rms_norm (vdev/memory/fuse_allreduce.h)
  ir::BindingId input_producer = ir::kNoBinding;  // whose allocation moved (when ipc)
  std::string reason;                             // why it stays on NCCL (when !ipc)
};

// A binding whose memory this pass does not plan, and why.
struct UnplannedValue {
  ir::BindingId binding = ir::kNoBinding;
  std::string reason;
};

struct FunctionMemory {
  ir::FuncId func = ir::kNoFunc;
  std::vector<TensorLifetime> lifetimes;  // the storage planner's input, one per tensor
  std::vector<PlannedTensor> tensors;     // same order
  StoragePlan plan;
  std::vector<ir::BindingId> storage_bindings;  // per plan.storages
  std::vector<AllReduceInfo> allreduces;        // program order
  std::vector<UnplannedValue> unplanned;        // program order
};

struct MemoryPlan {
  std::vector<FunctionMemory> functions;  // global functions with a body, in module order
  int64_t tensor_bytes = 0;               // sum over functions of all planned tensor sizes
  int64_t pool_bytes = 0;                 // sum over functions of all pool sizes
  std::vector<FusedAllReduce> fused;      // the all-reduce chains fused first (fuse_allreduce)
};

// Lowers `module` in place. `binding_devices` is PlanResult::binding_devices (the device of each
// binding, indexed by BindingId); it is extended with the devices of the bindings added.
// InvalidArgument when a function is already lowered or a planned tensor's device is not concrete.
absl::StatusOr<MemoryPlan> LowerMemory(ir::Module& module, std::vector<ir::DeviceId>& binding_devices,
                                       const LowerOptions& options = {});

// Rewrites every `memory.alloc_storage(B, A, device=D)` whose D has scope `ipc_memory` into
// `vdev.ipc.alloc_storage(B, A, device=D)`: the same exact byte size, the device only in `device`.
// Returns how many were rewritten; InvalidArgument for an ipc_memory storage not on a CUDA device.
absl::StatusOr<int> LowerIpcAllocStorage(ir::Module& module);

// Re-checks a lowered module from its text alone, by executing each global function's body in
// order: every read of a tensor (directly or through a view, alias, tuple, call, `if` or `fn` that
// may hold it) and the return find its `memory.alloc_tensor` still the latest one made in its
// storage; each `out=%t` names a current `memory.alloc_tensor`; a tensor fits its storage; a storage's
// allocator matches its scope; every `vdev.allreduce` input is in `ipc_memory`. LowerMemory runs it
// on its own output. Internal on a violation.
absl::Status CheckLoweredMemory(const ir::Module& module);

// The `vdev lower --json` report of a lowered module (docs/memory-planning.md): per function the
// pool sizes per (device, scope), each storage with its allocator, size and offset in its pool,
// each tensor with its storage and offset, the all-reduces with their strategy (or why NCCL), the
// unplanned values; then the pool sizes summed over functions.
std::string MemoryReportJson(const ir::Module& module, const MemoryPlan& plan);

}  // namespace vdev

#endif  // VDEV_LOWER_MEMORY_H_
