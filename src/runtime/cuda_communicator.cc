// CudaCommunicator: P2P agreement, the NCCL communicator, the IPC workspace and kernel dispatch.
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cuda_common/cuda_common.h"
#include "internal/allreduce_layout.h"
#include "internal/cuda_kernels.h"
#include "internal/cuda_zero_copy.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using internal::CudaStatus;

absl::Status NcclStatus(ncclResult_t r, absl::string_view what) {
  if (r == ncclSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ncclGetErrorString(r)));
}

ncclDataType_t NcclType(DataType type) {
  switch (type) {
    case DataType::kF32: return ncclFloat32;
    case DataType::kF64: return ncclFloat64;
    case DataType::kI32: return ncclInt32;
    case DataType::kF16: return ncclFloat16;
    case DataType::kBF16: return ncclBfloat16;
  }
  return ncclFloat32;
}

// kAuto's choice by message size, per world size: each row covers sizes up to max_bytes where that
// algorithm was the fastest variant in bench/allreduce_bench (bf16, CUDA graphs, H200s with NV18
// links, NCCL 2.28.3; docs/allreduce.md): the tables bench/derive_auto_table.py derived from
// docs/results/allreduce/h200x2_bench.csv (2 GPUs, with the sentinel kernel and warp-wide polls) and
// docs/results/allreduce/h200x{3,4}_bench.csv (measured before those), where sizes on which two kernels tie
// within 0.01 us (LL128 at 1 KB on 4 GPUs) keep the neighbouring row. Above the last row: NCCL.
constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
const std::vector<AutoRow>& BuiltInTable(int world) {
  static const std::vector<AutoRow> kTwo = {{128 * kKiB, AllReduceAlgorithm::kOneShotLL},
                                            {8 * kMiB, AllReduceAlgorithm::kOneShotSentinel},
                                            {size_t{1} << 40, AllReduceAlgorithm::kTwoShot}};
  static const std::vector<AutoRow> kThree = {{8 * kKiB, AllReduceAlgorithm::kOneShotLL},
                                              {1 * kMiB, AllReduceAlgorithm::kOneShotLL128},
                                              {128 * kMiB, AllReduceAlgorithm::kTwoShot}};
  // Measured on 4; used, unmeasured, for 5..8.
  static const std::vector<AutoRow> kMore = {{2 * kKiB, AllReduceAlgorithm::kOneShotLL},
                                             {512 * kKiB, AllReduceAlgorithm::kOneShotLL128},
                                             {128 * kMiB, AllReduceAlgorithm::kTwoShot}};
  return world <= 2 ? kTwo : world == 3 ? kThree : kMore;
}

// VDEV_ALLREDUCE_AUTO="one-shot-ll:65536,one-shot-ll128:2097152,two-shot:134217728" replaces the built-in
// rows (bench/derive_auto_table.py writes it from a benchmark run on the machine at hand).
absl::StatusOr<std::vector<AutoRow>> ParseTable(absl::string_view text) {
  std::vector<AutoRow> rows;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, ':');
    AutoRow row;
    if (!absl::SimpleAtoi(kv.second, &row.max_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat("bad size in VDEV_ALLREDUCE_AUTO item '", item, "'"));
    }
    bool known = false;
    for (AllReduceAlgorithm a :
         {AllReduceAlgorithm::kOneShotLL, AllReduceAlgorithm::kOneShotLL128, AllReduceAlgorithm::kOneShotSentinel,
          AllReduceAlgorithm::kTwoShotLL, AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot,
          AllReduceAlgorithm::kNccl}) {
      if (AlgorithmName(a) == kv.first) {
        row.algorithm = a;
        known = true;
      }
    }
    if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown algorithm in VDEV_ALLREDUCE_AUTO: ", kv.first));
    rows.push_back(row);
  }
  return rows;
}

// The kernel arguments every kernel shares: each worker's region of `mem` (from `offset`), its
// flags, the call, the wait bound and where a timed-out wait is recorded.
internal::KernelArgs ArgsFor(const IPCMemory& mem, size_t offset, const void* in, void* out, size_t count,
                             absl::Duration timeout, int* error) {
  internal::KernelArgs a;
  a.in = in;
  a.out = out;
  a.count = count;
  a.rank = mem.worker_id;
  a.world = mem.num_workers;
  for (int i = 0; i < mem.num_workers; ++i) {
    a.data[i] = static_cast<char*>(mem.remote_data[i]) + offset;
    a.flags_in[i] = mem.barrier_in[i];
    a.flags_out[i] = mem.barrier_out[i];
  }
  a.epochs = mem.barrier_flag;
  a.timeout_ns = static_cast<unsigned long long>(absl::ToInt64Nanoseconds(timeout));
  a.error = error;
  return a;
}

size_t WorkspaceFor(const CudaCommunicatorOptions& o, int world) {
  size_t bytes = 0;
  for (DataType t : {DataType::kF32, DataType::kBF16}) {
    const size_t e = DataTypeSize(t);
    bytes = std::max({bytes, AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShot, world, o.max_one_shot_bytes / e, t),
                      AllReduceWorkspaceBytes(AllReduceAlgorithm::kTwoShot, world, o.max_bytes / e, t)});
  }
  return bytes;
}

// Whether every worker can reach every other one's memory (ipc) and all over NVLink. All must agree,
// or some would wait forever in a kernel while others called NCCL: each worker checks its peers,
// then all exchange their verdicts.
// `fused_norm_blocks`: the fused kernel's block cap (FusedNormBlockCap), the fewest over the workers'
// GPUs so that all launch the same grid.
struct PeerAccess {
  bool ipc = false;
  bool all_nvlink = false;
  int fused_norm_blocks = 1;
};
absl::StatusOr<PeerAccess> CheckPeerAccess(PeerGroup* session, int device, bool force_nccl) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  int sms = 0;
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute"));
  // "SMS|HOST|DEVICE": the device is after the last bar, as the host name may hold one.
  std::vector<std::string> where;
  VDEV_RETURN_IF_ERROR(session->AllGather("cuda-devices", absl::StrCat(sms, "|", host, "|", device), &where));
  PeerAccess access;
  access.fused_norm_blocks = kMaxBarrierBlocks;
  for (const std::string& w : where) {
    const size_t gpu = w.find('|') + 1;
    const int sharing = static_cast<int>(std::count_if(where.begin(), where.end(), [&](const std::string& v) {
      return v.compare(v.find('|') + 1, std::string::npos, w, gpu, std::string::npos) == 0;
    }));
    access.fused_norm_blocks = std::min(access.fused_norm_blocks,
                                        internal::FusedNormBlockCap(std::atoi(w.c_str()), sharing, kMaxBarrierBlocks));
  }
  std::string problem;
  bool nvlink = true;
  for (int j = 0; j < session->world_size() && problem.empty(); ++j) {
    if (j == session->rank()) continue;
    const size_t bar = where[j].rfind('|'), first = where[j].find('|') + 1;
    const int peer_device = std::atoi(where[j].c_str() + bar + 1);
    if (where[j].substr(first, bar - first) != host) {
      problem = absl::StrCat("worker ", j, " is on another host");
      nvlink = false;
    } else if (peer_device != device) {
      int can = 0;
      cudaDeviceCanAccessPeer(&can, device, peer_device);
      if (!can) problem = absl::StrCat("no P2P from GPU ", device, " to GPU ", peer_device);
      // Native peer atomics: NVLink, not PCIe. The LL128 protocol needs NVLink's whole-line delivery.
      int atomics = 0;
      cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, device, peer_device);
      nvlink = nvlink && atomics == 1;
    } else {
      nvlink = false;  // two workers on one GPU: no NVLink between them
    }
  }
  if (force_nccl) problem = "NCCL forced";
  // One exchange for both verdicts: the first character says NVLink, the rest names a P2P problem.
  std::vector<std::string> verdicts;
  VDEV_RETURN_IF_ERROR(session->AllGather("cuda-p2p", absl::StrCat(nvlink ? "1" : "0", problem), &verdicts));
  access.ipc = std::all_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return v.size() == 1; });
  access.all_nvlink = std::all_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return v[0] == '1'; });
  return access;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaCommunicator>> CudaCommunicator::Create(PeerGroup* session,
                                                                           const CudaCommunicatorOptions& options) {
  std::unique_ptr<CudaCommunicator> c(new CudaCommunicator());
  c->session_ = session;
  c->options_ = options;
  int devices = 0;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&devices), "cudaGetDeviceCount"));
  if (devices == 0) return absl::FailedPreconditionError("no CUDA device");
  c->device_ = options.device >= 0 ? options.device : session->local_rank() % devices;
  c->auto_table_ = BuiltInTable(session->world_size());
  if (const char* table = std::getenv("VDEV_ALLREDUCE_AUTO")) {
    VDEV_ASSIGN_OR_RETURN(c->auto_table_, ParseTable(table));
  }
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(c->device_), "cudaSetDevice"));

  VDEV_ASSIGN_OR_RETURN(const PeerAccess access, CheckPeerAccess(session, c->device_, options.force_nccl));
  c->fused_norm_blocks_ = access.fused_norm_blocks;

  if (options.use_nccl) {
    ncclUniqueId id;
    if (session->rank() == 0) VDEV_RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    std::vector<std::string> ids;
    VDEV_RETURN_IF_ERROR(session->AllGather(
        "nccl-id", session->rank() == 0 ? std::string(reinterpret_cast<const char*>(&id), sizeof(id)) : "", &ids));
    std::memcpy(&id, ids[0].data(), sizeof(id));
    VDEV_RETURN_IF_ERROR(
        NcclStatus(ncclCommInitRank(&c->nccl_, session->world_size(), id, session->rank()), "ncclCommInitRank"));
  }

  void* error_host = nullptr;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaHostAlloc(&error_host, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc"));
  c->error_host_ = static_cast<volatile int*>(error_host);
  *c->error_host_ = 0;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaHostGetDevicePointer(reinterpret_cast<void**>(&c->error_device_), error_host, 0),
                                  "cudaHostGetDevicePointer"));
  if (access.ipc && session->world_size() > 1) {
    VDEV_ASSIGN_OR_RETURN(c->allocator_, CreateCudaIPCAllocator(session, c->device_));
    VDEV_ASSIGN_OR_RETURN(c->workspace_, c->allocator_->Allocate(WorkspaceFor(options, session->world_size())));
    // The low-latency kernel gets a region of its own: a line left there by another kernel's data
    // could otherwise carry, by chance, the epoch a reader waits for.
    VDEV_ASSIGN_OR_RETURN(c->ll_workspace_, c->allocator_->Allocate(AllReduceWorkspaceBytes(
                                                AllReduceAlgorithm::kOneShotLL, session->world_size(),
                                                options.max_ll_bytes / 2, DataType::kBF16)));
    // Sentinel everywhere before any peer can write into it: filled, then all workers meet.
    VDEV_ASSIGN_OR_RETURN(c->sentinel_workspace_, c->allocator_->Allocate(AllReduceWorkspaceBytes(
                                                      AllReduceAlgorithm::kOneShotSentinel, session->world_size(),
                                                      options.max_sentinel_bytes / 2, DataType::kBF16)));
    VDEV_RETURN_IF_ERROR(
        CudaStatus(cudaMemset(c->sentinel_workspace_->remote_data[session->rank()], 0xff, c->sentinel_workspace_->size),
                   "cudaMemset"));
    VDEV_RETURN_IF_ERROR(CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    VDEV_RETURN_IF_ERROR(session->Barrier("cuda-sentinel-filled"));
    if (access.all_nvlink) {
      VDEV_ASSIGN_OR_RETURN(c->ll128_workspace_, c->allocator_->Allocate(AllReduceWorkspaceBytes(
                                                     AllReduceAlgorithm::kOneShotLL128, session->world_size(),
                                                     options.max_ll128_bytes / 2, DataType::kBF16)));
    }
  }
  return c;
}

CudaCommunicator::~CudaCommunicator() {
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  // Collective: peers may still be reading this worker's regions until they get here too.
  allocator_.reset();
  if (nccl_ != nullptr) ncclCommDestroy(nccl_);
  if (error_host_ != nullptr) cudaFreeHost(const_cast<int*>(error_host_));
}

AllReduceAlgorithm CudaCommunicator::Choose(size_t bytes) const {
  if (workspace_ == nullptr || bytes > options_.max_bytes) return AllReduceAlgorithm::kNccl;
  for (const AutoRow& row : auto_table_) {
    if (bytes <= row.max_bytes) {
      if (row.algorithm == AllReduceAlgorithm::kOneShot && bytes > options_.max_one_shot_bytes) continue;
      if ((row.algorithm == AllReduceAlgorithm::kOneShotLL || row.algorithm == AllReduceAlgorithm::kTwoShotLL) &&
          bytes > options_.max_ll_bytes) {
        continue;
      }
      if (row.algorithm == AllReduceAlgorithm::kOneShotSentinel && bytes > options_.max_sentinel_bytes) continue;
      if (row.algorithm == AllReduceAlgorithm::kOneShotLL128 &&
          (bytes > options_.max_ll128_bytes || ll128_workspace_ == nullptr)) {
        continue;
      }
      return row.algorithm;
    }
  }
  return AllReduceAlgorithm::kNccl;
}

absl::Status CudaCommunicator::CheckErrors() {
  const int peer = *error_host_ - 1;
  if (peer < 0) return absl::OkStatus();
  *error_host_ = 0;
  absl::Status alive = session_->CheckAlive(peer);
  return absl::DeadlineExceededError(absl::StrCat(
      "an all-reduce kernel waited more than ", absl::FormatDuration(options_.kernel_timeout), " for worker ", peer,
      " (pid ", session_->pid(peer), ")", alive.ok() ? ", which did not launch its all-reduce" : ": ",
      alive.ok() ? "" : alive.message(), "; the workspace is out of step"));
}

// A kernel enqueued on another device's stream runs there, where this worker's buffers and mappings
// are not its own: an illegal address that poisons the CUDA context. Refuse it instead.
// The two queries cost ~0.4 us per eager call (measured), so a stream that passed is remembered.
absl::Status CudaCommunicator::CheckStream(cudaStream_t stream) {
  if (std::find(checked_streams_.begin(), checked_streams_.end(), stream) != checked_streams_.end()) {
    return absl::OkStatus();
  }
  // cudaStreamGetDevice is not allowed while the stream captures (it invalidates the capture), so
  // calls being captured go unchecked.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return absl::OkStatus();
  }
  if (capture != cudaStreamCaptureStatusNone) return absl::OkStatus();
  int stream_device = device_;
  if (cudaStreamGetDevice(stream, &stream_device) != cudaSuccess) {
    cudaGetLastError();  // not ours to report; the launch will say what is wrong with the stream
    return absl::OkStatus();
  }
  if (stream_device == device_) {
    if (checked_streams_.size() == kCheckedStreams) checked_streams_.clear();
    checked_streams_.push_back(stream);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("the all-reduce's stream belongs to device ", stream_device,
                                                 "; this communicator's is device ", device_,
                                                 " (create streams after CudaCommunicator::Create, which makes it "
                                                 "current, or after cudaSetDevice(comm->device()))"));
}

absl::Status CudaCommunicator::AllReduce(const void* in, void* out, size_t count, DataType type,
                                         AllReduceAlgorithm algorithm, cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  VDEV_RETURN_IF_ERROR(CheckStream(stream));
  VDEV_ASSIGN_OR_RETURN(const size_t bytes, AllReduceBytes(count, type));
  if (algorithm == AllReduceAlgorithm::kAuto) algorithm = Choose(bytes);
  if (algorithm == AllReduceAlgorithm::kOneShotLL128 && ll128_workspace_ == nullptr) {
    // No NVLink: the same protocol in 16-byte lines, or the flagged one-shot past LL's workspace.
    algorithm = bytes <= options_.max_ll_bytes ? AllReduceAlgorithm::kOneShotLL : AllReduceAlgorithm::kOneShot;
  }
  const bool kernel_type = type == DataType::kF32 || type == DataType::kF16 || type == DataType::kBF16;
  const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (nccl_ == nullptr && algorithm == AllReduceAlgorithm::kNccl)
    algorithm = bytes <= options_.max_one_shot_bytes ? AllReduceAlgorithm::kOneShot : AllReduceAlgorithm::kTwoShot;
  if (algorithm == AllReduceAlgorithm::kNccl || workspace_ == nullptr || !kernel_type || !aligned) {
    VDEV_RETURN_IF_ERROR(NcclAvailable());
    return NcclStatus(ncclAllReduce(in, out, count, NcclType(type), ncclSum, nccl_, stream), "ncclAllReduce");
  }
  const size_t need = AllReduceWorkspaceBytes(algorithm, session_->world_size(), count, type);
  const IPCMemory* ws = workspace(algorithm);
  if (need > ws->size) {
    return absl::InvalidArgumentError(absl::StrCat(AlgorithmName(algorithm), " all-reduce of ", bytes,
                                                   " bytes needs a workspace of ", need, " bytes; this one has ",
                                                   ws->size, " (raise CudaCommunicatorOptions::max_*bytes)"));
  }
  return Launch(in, out, count, type, algorithm, stream);
}

absl::Status CudaCommunicator::AllReduceZeroCopy(const IPCBuffer& in, void* out, size_t count, DataType type,
                                                 cudaStream_t stream, ZeroCopyRead read) {
  if (count == 0) return absl::OkStatus();
  VDEV_RETURN_IF_ERROR(CheckStream(stream));
  const IPCMemory* mem = in.memory;
  VDEV_ASSIGN_OR_RETURN(const size_t bytes, AllReduceBytes(count, type));
  if (mem == nullptr || mem->num_workers != session_->world_size() || mem->worker_id != session_->rank() ||
      in.offset > mem->size || bytes > mem->size - in.offset) {
    return absl::InvalidArgumentError(absl::StrCat("zero-copy all-reduce of ", bytes, " bytes at offset ", in.offset,
                                                   ": the input is not inside this session's IPC memory"));
  }
  const char* local = static_cast<const char*>(in.Local());
  const char* dst = static_cast<const char*>(out);
  if (local < dst + bytes && dst < local + bytes) {
    return absl::InvalidArgumentError("a zero-copy all-reduce's input and output must not overlap");
  }
  const bool kernel_type = type == DataType::kF32 || type == DataType::kF16 || type == DataType::kBF16;
  const bool aligned = reinterpret_cast<uintptr_t>(local) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (workspace_ == nullptr || !kernel_type || !aligned) {
    VDEV_RETURN_IF_ERROR(NcclAvailable());
    return NcclStatus(ncclAllReduce(local, out, count, NcclType(type), ncclSum, nccl_, stream), "ncclAllReduce");
  }
  if (read == ZeroCopyRead::kAuto && bytes > options_.max_zero_copy_bytes) {
    return AllReduce(local, out, count, type, AllReduceAlgorithm::kAuto, stream);
  }
  const internal::KernelArgs a = ArgsFor(*mem, in.offset, local, out, count, options_.kernel_timeout, error_device_);
  return CudaStatus(read == ZeroCopyRead::kInPlaceNoExitBarrier
                        ? internal::LaunchZeroCopyOneShotNoExit(type, a, stream, options_.programmatic_launch)
                        : internal::LaunchZeroCopyOneShot(type, a, stream, options_.programmatic_launch),
                    "zero-copy all-reduce launch");
}

bool CudaCommunicator::FusesAddRmsNorm(const AddRmsNormBuffers& b, DataType type) const {
  if (sentinel_workspace_ == nullptr || !(type == DataType::kF32 || type == DataType::kF16 || type == DataType::kBF16))
    return false;
  const size_t elem = DataTypeSize(type), bytes = b.rows * b.hidden * elem;
  for (const void* p : {b.in, b.residual, b.gamma, static_cast<const void*>(b.sum), static_cast<const void*>(b.normed)})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  if (bytes == 0 || bytes > options_.max_sentinel_bytes ||
      AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShotSentinel, session_->world_size(), b.rows * b.hidden, type) >
          sentinel_workspace_->size)
    return false;
  switch (Choose(bytes)) {
    case AllReduceAlgorithm::kOneShot:
    case AllReduceAlgorithm::kOneShotLL:
    case AllReduceAlgorithm::kOneShotLL128:
    case AllReduceAlgorithm::kOneShotSentinel: break;
    default: return false;  // the two-shot or NCCL range: one pass of every byte to every peer loses there
  }
  return internal::PlanFusedNormGrid(b.rows, b.hidden, elem, fused_norm_blocks_).blocks > 0;
}

absl::Status CudaCommunicator::AllReduceAddRmsNorm(const AddRmsNormBuffers& b, DataType type, cudaStream_t stream) {
  if (b.rows == 0 || b.hidden == 0) return absl::OkStatus();
  if (!FusesAddRmsNorm(b, type)) {
    return absl::InvalidArgumentError(absl::StrCat("no fused all-reduce + add + rms_norm for ", b.rows, " rows of ",
                                                   b.hidden, " ", DataTypeName(type),
                                                   " elements here (FusesAddRmsNorm is false)"));
  }
  VDEV_RETURN_IF_ERROR(CheckStream(stream));
  const size_t count = b.rows * b.hidden;
  internal::FusedNormArgs f;
  f.all_reduce = AlgorithmArgs(AllReduceAlgorithm::kOneShotSentinel, b.in, b.sum, count);
  f.all_reduce.slot_bytes = internal::OneShotSlotBytes(count, DataTypeSize(type));
  f.residual = b.residual;
  f.gamma = b.gamma;
  f.normed = b.normed;
  f.rows = b.rows;
  f.hidden = b.hidden;
  f.epsilon = b.epsilon;
  const internal::FusedNormGrid grid =
      internal::PlanFusedNormGrid(b.rows, b.hidden, DataTypeSize(type), fused_norm_blocks_);
  return CudaStatus(internal::LaunchAllReduceAddRmsNorm(type, f, grid, stream, options_.programmatic_launch),
                    "fused all-reduce + add + rms_norm launch");
}

absl::Status CudaCommunicator::NcclAvailable() const {
  if (nccl_ != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this all-reduce needs NCCL (no IPC, an unaligned buffer, or a dtype the kernels lack), which is off "
      "(CudaCommunicatorOptions::use_nccl: workers share a GPU)");
}

const IPCMemory* CudaCommunicator::workspace(AllReduceAlgorithm algorithm) const {
  switch (algorithm) {
    case AllReduceAlgorithm::kOneShotLL:
    case AllReduceAlgorithm::kTwoShotLL: return ll_workspace_;
    case AllReduceAlgorithm::kOneShotLL128: return ll128_workspace_;
    case AllReduceAlgorithm::kOneShotSentinel: return sentinel_workspace_;
    default: return workspace_;
  }
}

internal::KernelArgs CudaCommunicator::AlgorithmArgs(AllReduceAlgorithm algorithm, const void* in, void* out,
                                                     size_t count) const {
  const IPCMemory& ws = *workspace(algorithm);
  internal::KernelArgs a = ArgsFor(ws, 0, in, out, count, options_.kernel_timeout, error_device_);
  // The LL kernels count their own calls in their workspace's epochs (ArgsFor), as their 32-bit flags
  // need (see LLFlag); the others share one epoch sequence.
  if (&ws != ll_workspace_) a.epochs = workspace_->barrier_flag;
  a.half_bytes = internal::HalfBytes(ws.size);
  return a;
}

absl::Status CudaCommunicator::Launch(const void* in, void* out, size_t count, DataType type,
                                      AllReduceAlgorithm algorithm, cudaStream_t stream) {
  return CudaStatus(internal::LaunchAllReduce(algorithm, type, AlgorithmArgs(algorithm, in, out, count), stream,
                                              options_.programmatic_launch),
                    absl::StrCat(AlgorithmName(algorithm), " all-reduce launch"));
}

}  // namespace vdev
