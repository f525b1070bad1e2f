// The CUDA backend: IPCMemory in device memory shared with cudaIpc*MemHandle, and an all-reduce
// (sum of f32, f16, bf16) whose kernels read and write the peers' memory over NVLink/PCIe P2P.
//
// Only built when CUDA is (VDEV_HAVE_CUDA). One process per GPU. `CudaCommunicator::Create` is
// collective: the workers agree on whether every pair of GPUs can reach each other (P2P) and, if
// so, allocate one IPC workspace; otherwise every all-reduce goes to NCCL. The protocol and the
// kernels' guarantees (input intact, identical results on all ranks, any world size 2..8, any count,
// bounded waits) are those of vdev/runtime/allreduce.h; the kernels take their epoch from device memory, so
// a call captured in a CUDA graph stays correct on every replay.
//
// A wait that times out (a peer that never launched its kernel) does not hang the GPU: the kernel
// records the missing peer in host-mapped memory and finishes; `CheckErrors` turns it into a Status.
//
// Example:
//   VDEV_ASSIGN_OR_RETURN(auto comm, vdev::CudaCommunicator::Create(session.get(), {.max_bytes = 64 << 20}));
//   VDEV_RETURN_IF_ERROR(comm->AllReduce(in, out, n, vdev::DataType::kBF16,
//                                        vdev::AllReduceAlgorithm::kAuto, stream));
#ifndef VDEV_CUDA_ALLREDUCE_H_
#define VDEV_CUDA_ALLREDUCE_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

typedef struct ncclComm* ncclComm_t;  // as nccl.h declares it

namespace vdev {
namespace internal {
struct KernelArgs;  // src/runtime/internal/cuda_kernels.h
}  // namespace internal

// cudaMalloc + cudaIpcGetMemHandle/cudaIpcOpenMemHandle on `device` (the current device is set to it).
// Destroying it is collective, like allocating: CUDA leaves freeing memory that a peer still maps
// undefined, so every worker closes its mappings of the peers' regions, all meet (a session
// barrier, bounded like every session wait), and only then does each free its own.
absl::StatusOr<std::unique_ptr<IPCAllocator>> CreateCudaIPCAllocator(PeerGroup* session, int device);

struct CudaCommunicatorOptions {
  int device = -1;                      // -1: local_rank modulo the visible devices
  size_t max_bytes = size_t{64} << 20;  // largest message the vdev kernels take (NCCL beyond)
  size_t max_one_shot_bytes = size_t{8} << 20;
  size_t max_ll_bytes = size_t{1} << 20;     // largest message for kOneShotLL
  size_t max_ll128_bytes = size_t{4} << 20;  // largest message for kOneShotLL128
  // Largest message for kOneShotSentinel. Its workspace holds 2 x workers slots of this size per GPU
  // (64 MB for 4 workers): the kernel beat one-shot and two-shot up to 8 MB on 2 H200s.
  size_t max_sentinel_bytes = size_t{8} << 20;
  // Launch the kernels with programmatic dependent launch: a kernel is scheduled while the previous
  // one on the stream drains and waits on the GPU (griddepcontrol.wait) before touching memory.
  bool programmatic_launch = true;
  absl::Duration kernel_timeout = kDefaultPeerTimeout;  // bounded spins inside the kernels
  bool force_nccl = false;                              // behave as if P2P were unavailable (tests)
  // False: no NCCL communicator (NCCL refuses two ranks on one GPU, as when workers share one).
  // kNccl then runs one-shot or two-shot, and what only NCCL could do is FailedPrecondition.
  bool use_nccl = true;
  // Largest input AllReduceZeroCopy reads in place (ZeroCopyRead::kAuto); larger ones go to the
  // copy-in kernels. 0: never in place. On 2 H100s (bf16, CUDA graphs, 2026-11-26) the in-place
  // kernel took 1.7-3.3x the copy-in kernels' time from 4 KB to 2 MB and tied at 256 MB: its
  // barriers and the reads' round trip cost more than the copy the push kernels fold into their send
  // (docs/allreduce.md, "Where its time goes").
  size_t max_zero_copy_bytes = 0;
};

// How AllReduceZeroCopy reduces an input that lies in IPC memory.
enum class ZeroCopyRead {
  // In place up to CudaCommunicatorOptions::max_zero_copy_bytes; beyond, the copy-in kernels
  // (kAuto's choice) on the local input, whose own workspace keeps them safe against the caller
  // rewriting `in` right after the call.
  kAuto,
  // The in-place kernel: entry barrier, reads of every peer's input, exit barrier.
  kInPlace,
  // The in-place kernel without its exit barrier. Only when no worker rewrites its input before
  // every worker's next in-place call on the same stream has passed its entry barrier: a peer
  // reaching that barrier has finished this call (stream order), so its reads are done. The caller
  // (a planner that double-buffers the inputs, or a benchmark that never rewrites them) must know.
  kInPlaceNoExitBarrier,
};

// The operands of CudaCommunicator::AllReduceAddRmsNorm: rows x hidden elements each (gamma: hidden),
// one data type, every pointer 16-byte aligned.
struct AddRmsNormBuffers {
  const void* in = nullptr;        // this worker's partial x
  const void* residual = nullptr;  // the same on every worker
  const void* gamma = nullptr;
  void* sum = nullptr;     // h = residual + all-reduce(x)
  void* normed = nullptr;  // n = h * rsqrt(mean(h^2) + epsilon) * gamma, per row
  size_t rows = 0;
  size_t hidden = 0;
  float epsilon = 1e-6f;
};

// One row of kAuto's table: sizes up to max_bytes (after the previous row's) use `algorithm`.
struct AutoRow {
  size_t max_bytes = 0;
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kNccl;
};

class CudaCommunicator {
 public:
  static absl::StatusOr<std::unique_ptr<CudaCommunicator>> Create(PeerGroup* session,
                                                                  const CudaCommunicatorOptions& options);
  ~CudaCommunicator();

  // Enqueues the all-reduce on `stream`. kNccl, or buffers not 16-byte aligned, or no IPC: NCCL.
  // `stream` must belong to device() (Create makes it current); another device's stream is refused
  // with InvalidArgument (its kernel would run on that device, where these buffers are not its own).
  // Checked the first time a stream is used outside graph capture (CUDA allows no such query during
  // capture); the verdict is remembered per stream handle.
  absl::Status AllReduce(const void* in, void* out, size_t count, DataType type, AllReduceAlgorithm algorithm,
                         cudaStream_t stream);
  // The all-reduce of an input in IPC memory; `read` says how (ZeroCopyRead). In place, it is the
  // zero-copy one-shot (see HostAllReduceZeroCopy in vdev/runtime/allreduce.h): `in` lies in IPC memory
  // from a CUDA IPCAllocator of this session on this device (e.g. CreateCudaIPCAllocator), at the
  // same offset on every worker; the kernel reads every peer's input over P2P and writes `out`
  // (any device memory not overlapping `in`). Its barriers (in `in.memory`'s flags and epochs) make
  // the kernel wait for every peer's kernel — so for the peer's producer, earlier on its stream —
  // and keep every worker's kernel running until no peer reads its input, so work enqueued after
  // the call may overwrite `in`. Without IPC, for f64/i32 or for unaligned buffers: NCCL on the
  // local input. Graph-capturable like AllReduce.
  absl::Status AllReduceZeroCopy(const IPCBuffer& in, void* out, size_t count, DataType type, cudaStream_t stream,
                                 ZeroCopyRead read = ZeroCopyRead::kAuto);
  // Whether AllReduceAddRmsNorm serves `b`: a dtype with kernels, aligned buffers, rows of whole 16-byte
  // packs up to 8192 elements, and a message in the one-shot range of kAuto's table (and of the sentinel
  // workspace). Past it the caller runs the all-reduce (then two-shot) and the add + norm kernel.
  bool FusesAddRmsNorm(const AddRmsNormBuffers& b, DataType type) const;
  // The all-reduce of `b.in` followed by the residual add and the RMS norm of each row, in one kernel:
  // each worker pushes its partial into the peers' sentinel slots (the one-shot sentinel protocol) and
  // every worker sums a row's partials in rank order, adds the residual and normalises the row, so h
  // and n are bitwise equal on all workers. InvalidArgument where FusesAddRmsNorm is false.
  absl::Status AllReduceAddRmsNorm(const AddRmsNormBuffers& b, DataType type, cudaStream_t stream);
  // What kAuto runs for `bytes`: the first row of the table whose max_bytes covers it, NCCL past the
  // last. The table was measured on H200s (docs/allreduce.md); VDEV_ALLREDUCE_AUTO replaces it.
  AllReduceAlgorithm Choose(size_t bytes) const;
  // Reports (and clears) a wait that timed out in an earlier kernel; synchronizes nothing.
  absl::Status CheckErrors();

  bool ipc_available() const { return workspace_ != nullptr; }
  bool ll128_available() const { return ll128_workspace_ != nullptr; }
  // The IPC workspace that `algorithm`'s kernel uses (each LL form and the sentinel one have their own), or null without
  // IPC (LL128: without NVLink). Its barrier_flag holds the epochs; for inspection by tests.
  const IPCMemory* workspace(AllReduceAlgorithm algorithm) const;
  int device() const { return device_; }
  ncclComm_t nccl() const { return nccl_; }
  PeerGroup* session() const { return session_; }

 private:
  CudaCommunicator() = default;
  absl::Status Launch(const void* in, void* out, size_t count, DataType type, AllReduceAlgorithm algorithm,
                      cudaStream_t stream);
  // `algorithm`'s kernel arguments on its workspace, its epochs and halves set (Launch, AllReduceAddRmsNorm).
  internal::KernelArgs AlgorithmArgs(AllReduceAlgorithm algorithm, const void* in, void* out, size_t count) const;
  absl::Status CheckStream(cudaStream_t stream);
  absl::Status NcclAvailable() const;

  PeerGroup* session_ = nullptr;
  CudaCommunicatorOptions options_;
  std::vector<AutoRow> auto_table_;
  int device_ = 0;
  // The fused all-reduce + norm's block cap (FusedNormBlockCap in internal/allreduce_layout.h).
  int fused_norm_blocks_ = 1;
  ncclComm_t nccl_ = nullptr;
  std::unique_ptr<IPCAllocator> allocator_;
  IPCMemory* workspace_ = nullptr;           // one-shot and two-shot; its barrier_flag holds the epochs
  IPCMemory* ll_workspace_ = nullptr;        // LL lines only
  IPCMemory* ll128_workspace_ = nullptr;     // LL128 lines only; allocated only when every GPU pair has NVLink
  IPCMemory* sentinel_workspace_ = nullptr;  // kOneShotSentinel only: all sentinel between calls
  volatile int* error_host_ = nullptr;       // host-mapped: peer + 1 whose flag never came
  static constexpr size_t kCheckedStreams = 64;
  std::vector<cudaStream_t> checked_streams_;  // streams of device_ seen before (CheckStream)
  int* error_device_ = nullptr;
};

}  // namespace vdev

#endif  // VDEV_CUDA_ALLREDUCE_H_
