// All-reduce (sum) over IPCMemory, on the host backend; the CUDA one is in vdev/runtime/cuda_allreduce.h.
//
// Both backends run the same protocol. A call takes the next epoch e from `barrier_flag` and uses
// the half (e & 1) of the workspace that the previous call did not: a worker can only reach call
// e + 2 after every peer has finished call e, so no second barrier is needed to keep a fast worker
// from overwriting data a slow one still reads.
//   one-shot: each worker writes its whole input into every peer's slot, raises its flag in every
//             peer's `barrier_in`, waits for all flags, and sums the N inputs (N reads of S bytes).
//   two-shot: reduce-scatter then all-gather: worker j sums chunk j of every input (flags in
//             `barrier_in`), writes the sum into every peer's gather slot (flags in `barrier_out`),
//             and every worker copies the N sums out. 2(N-1)/N·S bytes leave each worker.
// Sums are taken in rank order 0..N-1 by every worker (one-shot) or by the chunk's owner (two-shot),
// so all workers get bitwise-identical results. The input is left intact; `in == out` is allowed.
// Waits are bounded: a peer that died (or that does not arrive within the session's timeout) turns
// into an error naming it. After an error the workspace is out of step and must not be reused.
//
// Example:
//   size_t ws = vdev::AllReduceWorkspaceBytes(AllReduceAlgorithm::kAuto, n, count, DataType::kF32);
//   VDEV_ASSIGN_OR_RETURN(IPCMemory* mem, allocator->Allocate(ws));
//   VDEV_RETURN_IF_ERROR(vdev::HostAllReduce(*session, *mem, in, out, count, DataType::kF32,
//                                            AllReduceAlgorithm::kAuto));
#ifndef VDEV_ALLREDUCE_H_
#define VDEV_ALLREDUCE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

namespace vdev {

enum class DataType { kF32, kF64, kI32, kF16, kBF16 };
size_t DataTypeSize(DataType type);
absl::string_view DataTypeName(DataType type);

// kOneShotLL: one-shot in the low-latency form (CUDA): each 16-byte store carries 8 bytes of data
// and two copies of the epoch, so a reader polls the data itself and no barrier or fence is needed
// (twice the bytes on the wire; for small messages). kTwoShotLL: two-shot in the same form. The
// host backend runs them as kOneShot and kTwoShot.
// kOneShotLL128: one-shot in 128-byte lines of 120 bytes of data and an 8-byte epoch (1/15 more bytes
// than the data, for mid-sized messages). It relies on a warp's 128-byte aligned store reaching the
// peer as one unit, which NVLink gives and PCIe does not: the CUDA backend runs it only when every
// pair of GPUs is NVLink-connected and kOneShotLL otherwise; the host backend runs it as kOneShot.
// kOneShotSentinel: one-shot into receive slots filled with a sentinel (the all-ones bit pattern, a NaN
// in f32, f16 and bf16) that the arriving data replaces, so nothing but data goes on the wire. An
// input element with exactly that pattern is summed as the same NaN with its sign bit cleared (the
// sum is NaN either way). The host backend runs it as kOneShot.
enum class AllReduceAlgorithm {
  kAuto,
  kOneShot,
  kTwoShot,
  kNccl,
  kOneShotLL,
  kTwoShotLL,
  kOneShotLL128,
  kOneShotSentinel
};
absl::string_view AlgorithmName(AllReduceAlgorithm algorithm);

// The largest all-reduce either backend takes: 2^56 bytes (64 PiB, beyond any machine's memory),
// so that every workspace size and slot offset derived from it fits in 64 bits.
inline constexpr size_t kMaxAllReduceBytes = size_t{1} << 56;

// The bytes of `count` elements of `type`, or InvalidArgument when that product overflows or
// exceeds kMaxAllReduceBytes (every all-reduce entry point checks its count with it first).
absl::StatusOr<size_t> AllReduceBytes(size_t count, DataType type);

// Bytes each worker's IPCMemory needs for `count` elements with `algorithm` (kAuto: enough for
// either kernel). SIZE_MAX when AllReduceBytes refuses `count` or `world_size` is not in
// 1..kMaxWorkers: no workspace can be that large (IPCAllocator::Allocate refuses the size).
size_t AllReduceWorkspaceBytes(AllReduceAlgorithm algorithm, int world_size, size_t count, DataType type);

// The host backend: f32, f64, i32 (wrapping around like unsigned arithmetic), f16 and bf16 (summed
// in f32 in rank order and rounded once to nearest even at the end, the same bits on every worker).
// `in` and `out` are this process's memory; `workspace` came from a host IPCAllocator of `session`.
absl::Status HostAllReduce(PeerGroup& session, IPCMemory& workspace, const void* in, void* out, size_t count,
                           DataType type, AllReduceAlgorithm algorithm);

// A buffer inside IPC memory: `offset` bytes into `memory`, the same offset on every worker, so
// worker j's copy is `memory->remote_data[j] + offset`.
struct IPCBuffer {
  IPCMemory* memory = nullptr;
  size_t offset = 0;
  void* On(int worker) const { return static_cast<char*>(memory->remote_data[worker]) + offset; }
  void* Local() const { return On(memory->worker_id); }
};

// Zero-copy all-reduce: the input already lies in IPC memory (the planner allocates every
// all-reduce input there, so the producer writes it in place) and the kernels read the peers'
// inputs directly instead of copying them into a workspace first.
//   one-shot: every worker sums all N inputs and writes its own output.
//   two-shot: worker j sums chunk j of all inputs into chunk j of its own output, then every worker
//             copies chunk j from worker j's output (so `out` must be IPC memory too).
// Barriers, in `in.memory`'s `barrier_in` with one epoch per round (never reset):
//   entry: no worker reads a peer's input before the peer called, i.e. before its producer wrote it;
//   (two-shot) middle: no worker gathers a chunk before its owner summed it;
//   exit: no worker returns while a peer may still read its input (or, two-shot, its output chunk),
//         so the caller may rewrite its input (the next producer) and output right after the call.
// `in` is left intact; `in` and `out` must not overlap (one-shot writes `out` while peers still
// read `in`). Same algorithms, types, bounded waits and bitwise-identical results as HostAllReduce.
absl::Status HostAllReduceZeroCopy(PeerGroup& session, const IPCBuffer& in, const IPCBuffer& out, size_t count,
                                   DataType type, AllReduceAlgorithm algorithm);

}  // namespace vdev

#endif  // VDEV_ALLREDUCE_H_
