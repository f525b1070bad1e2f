// The executor: runs a lowered program (the output of LowerMemory) on one worker of a session.
//
// Load takes the planned and lowered module in memory, checks that every op has a kernel on the
// device type it was planned for (a located error otherwise, before anything runs), allocates the
// parameters of @main and each (device, scope) pool of @main once — `ipc_memory` pools through the
// backend's collective IPC allocator — and keeps them for every run. Run copies the inputs into the
// parameters, runs @main's bindings in order and copies the results back to the host:
//   op(args, out=%t)        the kernel of (op, device type) writes %t at its planned offset;
//   device_copy             host<->device, device<->device, or a scope change on one device;
//   vdev.allreduce          the backend's all-reduce on an input that lies in ipc_memory;
//   allreduce               the backend's general all-reduce (NCCL on CUDA, shm on the host);
//   reshape and other views share their input's memory; tuples, projections and aliases too;
//   @f(...)                 a call: the callee's pools are allocated for the call and live as long
//                           as a value points into them; `if` reads its scalar condition on the host.
// Nothing recurses with the program's size or call depth (an explicit stack of activations).
//
// On the CUDA backend all GPU work is enqueued on one stream per GPU, and `cpu` values live in
// pinned host memory. When @main is straight-line, uses one GPU and runs no op on the CPU (copies
// to and from host memory are fine), the second Run captures it as a CUDA graph and every later
// Run replays the graph (launch overhead dominates small layers).
//
// Example (one worker; `vdev run` does this on every worker of a session):
//   VDEV_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionBackend> host, CreateHostBackend(nullptr));
//   VDEV_ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::Load(program, host.get()));
//   VDEV_ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, exec->Run(inputs));
#ifndef VDEV_EXECUTOR_H_
#define VDEV_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/kernels.h"
#include "vdev/kernels/tensor.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/ipc_memory.h"

namespace vdev {

// A program ready to run: the planned and lowered module, the device of each binding
// (PlanResult::binding_devices as LowerMemory extended it) and the memory plan.
struct LoweredProgram {
  ir::Module module;
  std::vector<ir::DeviceId> binding_devices;
  MemoryPlan memory;
  std::string file;    // names locations in messages
  std::string source;  // the text, quoted under located messages
};

// Parses, verifies, plans and lowers `text` (what `vdev lower` does). Errors carry FILE:LINE:COL.
absl::StatusOr<LoweredProgram> CompileForExecution(absl::string_view text, absl::string_view file,
                                                   const LowerOptions& lower = {});
// The same for a module a frontend built (ModuleBuilder::Finish verified it); `name` names it in messages.
absl::StatusOr<LoweredProgram> CompileForExecution(ir::Module module, absl::string_view name,
                                                   const LowerOptions& lower = {});

// Memory the executor allocated: released when the last value pointing into it goes.
struct DeviceBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  IPCMemory* ipc = nullptr;  // set for ipc_memory pools: `data` is this worker's region
  std::function<void()> release;
  ~DeviceBuffer() {
    if (release) release();
  }
};

enum class ReduceOp { kSum, kMax, kMin, kProd, kAvg };

// Where a worker's values live and how its kernels, copies and collectives run.
class ExecutionBackend {
 public:
  virtual ~ExecutionBackend() = default;
  virtual std::string name() const = 0;  // "host" or "cuda"
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // The device type whose kernels run values planned on `device` ("host" runs everything on CPU).
  virtual DeviceType KernelDevice(const VirtualDevice& device) const = 0;
  virtual absl::StatusOr<KernelContext*> Context(const VirtualDevice& device) = 0;
  // Memory on `device`; collective when its scope is `ipc_memory` (every worker allocates the same
  // pools in the same order).
  virtual absl::StatusOr<std::shared_ptr<DeviceBuffer>> Allocate(const VirtualDevice& device, size_t bytes) = 0;
  // Stream-ordered copies between any two of this worker's buffers, and from/to host memory.
  virtual absl::Status Copy(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyToHost(void* host, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyFromHost(void* dst, const void* host, size_t bytes) = 0;
  // `out` = op over every worker's `in` (same shape and dtype everywhere). `in_ipc` is set when
  // `in` lies in an ipc_memory pool of this backend (zero-copy kernels read it in place).
  virtual absl::Status AllReduce(const TensorRef& in, const IPCBuffer* in_ipc, const TensorRef& out, ReduceOp op,
                                 AllReduceStrategy strategy, const VirtualDevice& device) = 0;
  // vdev.allreduce_add_rms_norm in one pass where this backend has a kernel for the call: h = residual
  // + the sum over workers of `in`, n = h * rsqrt(mean(h^2) + epsilon) * gamma per row of the last
  // axis. False: not served (the caller runs AllReduce, then the vdev.add_rms_norm kernel).
  virtual absl::StatusOr<bool> AllReduceAddRmsNorm(const TensorRef& /*in*/, const TensorRef& /*residual*/,
                                                   const TensorRef& /*gamma*/, const TensorRef& /*h*/,
                                                   const TensorRef& /*n*/, float /*epsilon*/, AllReduceStrategy,
                                                   const VirtualDevice&) {
    return false;
  }
  // Whether AllReduce of `op` on `dtype` only enqueues GPU work (so a graph may capture it).
  virtual bool CanCaptureAllReduce(ReduceOp, ir::DType) const { return false; }
  virtual absl::Status Synchronize() = 0;
  // CUDA graphs: BeginCapture/EndCapture around one execution of a program, then Replay.
  virtual bool SupportsCapture() const { return false; }
  virtual absl::Status BeginCapture() { return absl::UnimplementedError("no capture"); }
  virtual absl::Status EndCapture() { return absl::UnimplementedError("no capture"); }
  virtual absl::Status Replay() { return absl::UnimplementedError("no capture"); }
  // Timers for --profile: Mark() returns a point in stream order; Seconds(a, b) after Synchronize.
  virtual int Mark() = 0;
  // Before a profiled run: the workers meet, and the GPU work of the run waits (a fixed hold) until
  // the host has enqueued it, so that no op's span holds the other workers' host time.
  virtual absl::Status LineUpForProfile() { return absl::OkStatus(); }
  virtual double Seconds(int from, int to) = 0;
  virtual void ResetMarks() = 0;

 protected:
  int rank_ = 0;
  int world_size_ = 1;
};

class ThreadGroup;

// The host backend: every device is host memory and runs the CPU kernels. With a session, the
// ipc_memory pools are POSIX shared memory and all-reduces run over it; with a ThreadGroup, the
// workers are threads of this process (the reference of `vdev run --check`); with neither, one
// worker alone.
absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateHostBackend(PeerGroup* session);
absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateThreadBackend(ThreadGroup* group, int rank);

// Before any worker starts: every op call of `program` has a kernel on the device type where it
// will run on backend `backend_name` ("host": every op on the CPU; "cuda": as planned). The first
// op without one is a located error naming the kernels that exist.
absl::Status CheckKernels(const LoweredProgram& program, absl::string_view backend_name);

// Before any worker starts: `workers` is a number of workers the program can mean. An all-reduce
// written with `workers=N` (`%s = allreduce(%y, op=sum, workers=2)`) states the number it was
// written for, and any other number is a located error (Executor::Load checks it too). Without
// such an attribute the number cannot be known: an all-reduce sums over however many workers run.
absl::Status CheckWorkerCount(const LoweredProgram& program, int workers);

// How the CUDA backend spreads a worker's work over streams.
enum class CudaStreams {
  kPerGpu,            // one stream per GPU (the default)
  kPerVirtualDevice,  // one per virtual `cuda:i`, even where two share a GPU: a program's cross-device
                      // ordering is then exercised on one GPU (tests; VDEV_CUDA_STREAMS=per-virtual-device)
};

struct CudaBackendOptions {
  CudaStreams streams = CudaStreams::kPerGpu;
  // Testing: a spin kernel of this many microseconds before every piece of work on its stream, so
  // that work on another stream not ordered after it reads its results too early, every time
  // (VDEV_CUDA_PRODUCER_DELAY_US). 0: none.
  int producer_delay_us = 0;
  // Testing only: false leaves out the events that order work across streams, to prove that a test
  // of cross-device programs catches their absence. Never false outside such a test.
  bool order_streams = true;
};

// The options of the environment: VDEV_CUDA_STREAMS=per-gpu|per-virtual-device and
// VDEV_CUDA_PRODUCER_DELAY_US=N (unset: the defaults). InvalidArgument naming the variable on a bad value.
absl::StatusOr<CudaBackendOptions> CudaBackendOptionsFromEnvironment();

// The CUDA backend: values planned on `cuda:i` live on a GPU, `cpu` ones in host memory (CPU
// kernels). Of W workers, worker w maps the program's `cuda:i` onto visible GPU (i * W + w) mod G,
// G the number of visible GPUs: the workers of one virtual device (the ranks of its all-reduces)
// lie on distinct GPUs while W <= G, and one worker's devices on distinct GPUs while the program's
// devices of all workers fit the GPUs (docs/executor.md). Work on different GPUs is ordered by
// events in program order: what one GPU produces is complete before another reads it.
// `virtual_cuda_devices` is the number of virtual CUDA devices the program names: a device beyond
// it is an error. Unimplemented when vdev was built without the CUDA runtime; FailedPrecondition
// without a GPU. The two-argument form takes its options from CudaBackendOptionsFromEnvironment.
absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(PeerGroup* session, int virtual_cuda_devices,
                                                                    const CudaBackendOptions& options);
absl::StatusOr<std::unique_ptr<ExecutionBackend>> CreateCudaBackend(PeerGroup* session, int virtual_cuda_devices);
// CreateCudaBackend's `virtual_cuda_devices` for a program: the largest `cuda` id it names + 1 (at least 1).
int VirtualCudaDevices(const ir::Module& module);

// The GPUs the CUDA backend can use here: 0 without the CUDA runtime or a GPU.
int VisibleCudaDevices();

// Whether this vdev was built with the CUDA backend (CreateCudaBackend then needs only a GPU).
// `vdev version` prints it as its `backends:` line.
bool HasCudaBackend();

// Threads that play the workers of one session in this process: all-reduces meet in memory and sum
// in rank order (f16/bf16 in f32, rounded once), as the shm backend does.
class ThreadGroup {
 public:
  explicit ThreadGroup(int world_size);
  ~ThreadGroup();
  int world_size() const;
  // Called by every worker with its input; returns once every worker's `out` holds the result.
  absl::Status AllReduce(int rank, const TensorRef& in, const TensorRef& out, ReduceOp op);
  // A worker that fails calls this, so the others stop waiting for it: every all-reduce, pending
  // or later, returns `why`.
  void Abort(const absl::Status& why);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Time spent per op name in one profiled run, in program order of first appearance.
struct OpProfile {
  std::string op;
  int calls = 0;
  double seconds = 0;
};

class Executor {
 public:
  static absl::StatusOr<std::unique_ptr<Executor>> Load(const LoweredProgram& program, ExecutionBackend* backend);
  ~Executor();

  // @main's parameter types, in order (each a tensor of static shape).
  absl::Span<const ir::TypeId> param_types() const;
  const ir::Module& module() const;

  // One execution of @main; the outputs are @main's result flattened (a tuple's tensors in order).
  absl::StatusOr<std::vector<HostTensor>> Run(absl::Span<const HostTensor> inputs);
  // Run on inputs read where they are (dense row-major tensors in host memory, e.g. a NumPy or
  // DLPack buffer), copied only into @main's parameters, as Run copies a HostTensor's bytes.
  absl::StatusOr<std::vector<HostTensor>> RunViews(absl::Span<const TensorRef> inputs);
  // Like Run, timing every binding; the profile replaces the previous one.
  absl::StatusOr<std::vector<HostTensor>> RunProfiled(absl::Span<const HostTensor> inputs,
                                                      std::vector<OpProfile>* profile);
  // True once Run replays a captured CUDA graph.
  bool replaying() const;

  // For benchmarks, Run in two halves: SetInputs copies the inputs into @main's parameters once;
  // each Enqueue then runs @main on them (the second captures, later ones replay the graph) without
  // waiting for the work or copying results back.
  absl::Status SetInputs(absl::Span<const HostTensor> inputs);
  absl::Status Enqueue();
  // Waits for the work enqueued and copies the last run's outputs to the host.
  absl::StatusOr<std::vector<HostTensor>> Outputs();

 private:
  struct Impl;
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// out = in[0] op in[1] op … element by element, in rank order (f16/bf16 accumulated in f32 and
// rounded once; avg divides the sum by the count of inputs): what every host all-reduce computes.
absl::Status ReduceInRankOrder(absl::Span<const void* const> inputs, void* out, int64_t count, ir::DType dtype,
                               ReduceOp op);

}  // namespace vdev

#endif  // VDEV_EXECUTOR_H_
