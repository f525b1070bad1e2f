// Worker functions: what a controller session (vdev/controller/controller.h) runs on its workers, by name.
//
// A worker function takes the worker's context and its arguments, already resolved on that worker
// (a DRef argument arrives as the value of the DRef's register *on this worker*), and returns one
// value, which the controller's CallPacked stores in a fresh register on every worker. Errors are
// values: an absl::Status returned here (or an exception thrown) reaches the controller as a Status
// naming the worker, the function and the command, and ends the session.
//
// Functions are found by name in one process-wide registry. Register them before a session starts
// its workers: statically with VDEV_REGISTER_WORKER_FUNCTION in a source file of the binary, or by
// calling RegisterWorkerFunction from main before vdev::MaybeRunWorker (a process session's workers
// re-run the binary, so both paths run in them too). A static registrar in a static library only runs
// when the linker keeps its object file; a library of functions (like the executor's) therefore
// exports a `RegisterXFunctions()` that main calls.
//
// Example:
//   VDEV_REGISTER_WORKER_FUNCTION("demo.scale", [](vdev::WorkerContext& ctx, const vdev::WorkerArgs& args)
//                                                   -> absl::StatusOr<vdev::WorkerValue> {
//     VDEV_ASSIGN_OR_RETURN(int64_t k, args.Int(0));
//     return k * (ctx.worker_id() + 1);
//   });
#ifndef VDEV_WORKER_FUNCTION_H_
#define VDEV_WORKER_FUNCTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/kernels/tensor.h"

namespace vdev {

class PeerGroup;
class IPCAllocator;
class CudaCommunicator;

// A value that cannot leave its worker (a loaded program, IPC memory, a counter): functions return
// it wrapped in a shared_ptr and later calls receive it back through a DRef.
class WorkerObject {
 public:
  virtual ~WorkerObject() = default;
  // Names the kind of object in error messages, e.g. "vdev.ipc_memory".
  virtual std::string TypeName() const = 0;
};

// What a register holds on a worker. Tensors are shared: a function that receives a tensor through
// a DRef sees the register's own tensor, so it may update it in place.
using WorkerValue = std::variant<std::monostate, int64_t, double, std::string, Shape, std::shared_ptr<HostTensor>,
                                 std::shared_ptr<WorkerObject>>;

// "none", "int", "float", "string", "shape", "tensor" or the object's TypeName().
std::string WorkerValueKind(const WorkerValue& value);

// The arguments of one call, with typed accessors whose errors name the argument and both kinds.
class WorkerArgs {
 public:
  explicit WorkerArgs(std::vector<WorkerValue> values) : values_(std::move(values)) {}
  size_t size() const { return values_.size(); }
  const WorkerValue& operator[](size_t i) const { return values_[i]; }

  // InvalidArgument unless there are exactly `n` arguments.
  absl::Status ExpectCount(size_t n) const;
  absl::StatusOr<int64_t> Int(size_t i) const;
  absl::StatusOr<double> Float(size_t i) const;  // an int is accepted and converted
  absl::StatusOr<std::string> String(size_t i) const;
  absl::StatusOr<Shape> ShapeArg(size_t i) const;
  absl::StatusOr<std::shared_ptr<HostTensor>> Tensor(size_t i) const;
  // An object of type T (a WorkerObject subclass); `type_name` is used in the error message.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Object(size_t i, absl::string_view type_name) const {
    const auto* object = i < values_.size() ? std::get_if<std::shared_ptr<WorkerObject>>(&values_[i]) : nullptr;
    if (object != nullptr) {
      if (auto typed = std::dynamic_pointer_cast<T>(*object)) return typed;
    }
    return Mismatch(i, type_name);
  }

 private:
  absl::Status Mismatch(size_t i, absl::string_view expected) const;
  std::vector<WorkerValue> values_;
};

// Where a worker function runs: the worker's place in the session and, after the controller's
// InitCCL, the collectives among the workers.
class WorkerContext {
 public:
  virtual ~WorkerContext() = default;
  virtual int worker_id() const = 0;
  virtual int num_workers() const = 0;
  // Workers are split into num_groups() groups of equal size (one per host); worker i is in group
  // i / (num_workers() / num_groups()) with local id i % (num_workers() / num_groups()).
  virtual int num_groups() const = 0;
  int group_id() const { return worker_id() / (num_workers() / num_groups()); }
  int local_worker_id() const { return worker_id() % (num_workers() / num_groups()); }

  // After InitCCL: "host", "vdev" or "nccl"; empty before.
  virtual absl::string_view ccl() const = 0;
  // After InitCCL: the workers' rendezvous (vdev/runtime/peer_group.h) and their IPC allocator (host shared
  // memory for "host", CUDA IPC for "vdev"/"nccl"); null before.
  virtual PeerGroup* session() = 0;
  virtual IPCAllocator* ipc_allocator() = 0;
  // After InitCCL("vdev" | "nccl"): the CUDA device of this worker and its communicator; -1 / null
  // otherwise.
  virtual int device_id() const = 0;
  virtual CudaCommunicator* cuda_communicator() = 0;
};

using WorkerFunction = std::function<absl::StatusOr<WorkerValue>(WorkerContext&, const WorkerArgs&)>;

// AlreadyExists when `name` is taken (the built-ins, "vdev.*", are registered from the start).
absl::Status RegisterWorkerFunction(absl::string_view name, WorkerFunction function);
// Null when no function has that name.
std::shared_ptr<const WorkerFunction> FindWorkerFunction(absl::string_view name);
// Every registered name, sorted.
std::vector<std::string> WorkerFunctionNames();

// Registers at static-initialisation time; a duplicate name is a build error, reported on stderr
// before the program aborts.
class WorkerFunctionRegistrar {
 public:
  WorkerFunctionRegistrar(absl::string_view name, WorkerFunction function);
};

#define VDEV_WORKER_FN_CONCAT_INNER_(a, b) a##b
#define VDEV_WORKER_FN_CONCAT_(a, b) VDEV_WORKER_FN_CONCAT_INNER_(a, b)
#define VDEV_REGISTER_WORKER_FUNCTION(name, ...)                                                                \
  static const ::vdev::WorkerFunctionRegistrar VDEV_WORKER_FN_CONCAT_(vdev_worker_function_, __COUNTER__)(name, \
                                                                                                          __VA_ARGS__)

}  // namespace vdev

#endif  // VDEV_WORKER_FUNCTION_H_
