// The host backend's all-reduce (protocol in vdev/runtime/allreduce.h), plus the shared dtype helpers.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "internal/allreduce_layout.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/checked_size.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev {

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kF64: return 8;
    case DataType::kF32:
    case DataType::kI32: return 4;
    case DataType::kF16:
    case DataType::kBF16: return 2;
  }
  return 0;
}

absl::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kF32: return "f32";
    case DataType::kF64: return "f64";
    case DataType::kI32: return "i32";
    case DataType::kF16: return "f16";
    case DataType::kBF16: return "bf16";
  }
  return "?";
}

absl::string_view AlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kAuto: return "auto";
    case AllReduceAlgorithm::kOneShot: return "one-shot";
    case AllReduceAlgorithm::kTwoShot: return "two-shot";
    case AllReduceAlgorithm::kNccl: return "nccl";
    case AllReduceAlgorithm::kOneShotLL: return "one-shot-ll";
    case AllReduceAlgorithm::kTwoShotLL: return "two-shot-ll";
    case AllReduceAlgorithm::kOneShotLL128: return "one-shot-ll128";
    case AllReduceAlgorithm::kOneShotSentinel: return "one-shot-sentinel";
  }
  return "?";
}

absl::StatusOr<size_t> AllReduceBytes(size_t count, DataType type) {
  VDEV_ASSIGN_OR_RETURN(const size_t bytes,
                        CheckedBytes(count, DataTypeSize(type), absl::StrCat("an all-reduce of ", DataTypeName(type))));
  if (bytes > kMaxAllReduceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("an all-reduce of ", count, " ", DataTypeName(type), " (", bytes,
                                                   " bytes) is over the limit of 2^56 bytes"));
  }
  return bytes;
}

size_t AllReduceWorkspaceBytes(AllReduceAlgorithm algorithm, int world_size, size_t count, DataType type) {
  // Within the limits every product below stays under 2^63: slots of at most twice the data (LL),
  // rounded to 256 bytes, times 4 * kMaxWorkers.
  if (!AllReduceBytes(count, type).ok() || world_size < 1 || world_size > kMaxWorkers) return SIZE_MAX;
  const size_t elem = DataTypeSize(type);
  const size_t one = 2 * world_size * internal::OneShotSlotBytes(count, elem);
  const size_t two = 4 * world_size * internal::TwoShotSlotBytes(count, world_size, elem);
  switch (algorithm) {
    case AllReduceAlgorithm::kOneShotLL: return 2 * world_size * internal::OneShotLLSlotBytes(count, elem);
    case AllReduceAlgorithm::kTwoShotLL: return 4 * world_size * internal::TwoShotLLSlotBytes(count, world_size, elem);
    case AllReduceAlgorithm::kOneShotLL128: return 2 * world_size * internal::OneShotLL128SlotBytes(count, elem);
    case AllReduceAlgorithm::kOneShot:
    case AllReduceAlgorithm::kOneShotSentinel: return one;
    case AllReduceAlgorithm::kTwoShot: return two;
    case AllReduceAlgorithm::kNccl: return 0;
    case AllReduceAlgorithm::kAuto: return std::max(one, two);
  }
  return 0;
}

namespace {

// Above this many bytes summed over all inputs, two-shot moves fewer bytes per worker.
constexpr size_t kHostOneShotLimit = size_t{1} << 20;

std::atomic_ref<uint64_t> Word(uint64_t* flags, int source) {
  return std::atomic_ref<uint64_t>(flags[source]);  // block 0: the host has one "block"
}

void Signal(IPCMemory& ws, std::vector<uint64_t*> IPCMemory::*flags, uint64_t epoch) {
  for (int q = 0; q < ws.num_workers; ++q) {
    if (q != ws.worker_id) Word((ws.*flags)[q], ws.worker_id).store(epoch, std::memory_order_release);
  }
}

// Waits until every peer raised its word in this worker's `flags` to `epoch`. Spins briefly, then
// yields (workers may share few cores); every millisecond checks the deadline and the peers' lives.
absl::Status Wait(PeerGroup& session, IPCMemory& ws, std::vector<uint64_t*> IPCMemory::*flags, uint64_t epoch,
                  absl::string_view stage) {
  uint64_t* mine = (ws.*flags)[ws.worker_id];
  const absl::Time deadline = absl::Now() + session.timeout();
  absl::Time next_check = absl::Now() + absl::Milliseconds(1);
  for (int j = 0; j < ws.num_workers; ++j) {
    if (j == ws.worker_id) continue;
    for (uint64_t spins = 0; Word(mine, j).load(std::memory_order_acquire) < epoch; ++spins) {
      if (spins < 64) continue;
      sched_yield();
      if ((spins & 15) != 0) continue;
      absl::Time now = absl::Now();
      if (now < next_check) continue;
      next_check = now + absl::Milliseconds(1);
      absl::Status alive = session.CheckAlive(j);
      // A peer may raise its flag, finish and exit between our load and the check: look again.
      if (!alive.ok() && Word(mine, j).load(std::memory_order_acquire) >= epoch) break;
      if (!alive.ok())
        return absl::UnavailableError(absl::StrCat("all-reduce ", stage, " #", epoch, ": ", alive.message()));
      if (now > deadline) {
        return absl::DeadlineExceededError(absl::StrCat("all-reduce ", stage, " #", epoch, ": worker ", j, " (pid ",
                                                        session.pid(j), ") did not arrive within ",
                                                        absl::FormatDuration(session.timeout())));
      }
    }
  }
  return absl::OkStatus();
}

// f16 and bf16 elements, by their bits.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

// What an element is summed as: itself, or f32 for f16 and bf16 (loaded exactly, stored with one
// round-to-nearest-even at the end, so every worker gets the same bits as the CUDA kernels).
template <typename T>
struct Accumulate {
  static T Load(T v) { return v; }
  static T Store(T v) { return v; }
};
template <>
struct Accumulate<Half> {
  static float Load(Half v) { return HalfToFloat(v.bits); }
  static Half Store(float f) { return Half{FloatToHalf(f)}; }
};
template <>
struct Accumulate<BFloat> {
  static float Load(BFloat v) { return BF16ToFloat(v.bits); }
  static BFloat Store(float f) { return BFloat{FloatToBF16(f)}; }
};

// Integers add modulo 2^32 (no signed overflow); floats in the given order.
template <typename T>
T Add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return a + b;
  }
}

// Sums the n sources in rank order into dst.
template <typename T>
void SumInto(const T* const* src, int n, T* dst, size_t length) {
  using A = Accumulate<T>;
  for (size_t i = 0; i < length; ++i) {
    auto acc = A::Load(src[0][i]);
    for (int j = 1; j < n; ++j) acc = Add(acc, A::Load(src[j][i]));
    dst[i] = A::Store(acc);
  }
}

// Calls f(T{}) with T the element type of `type`.
template <typename F>
absl::Status WithElementType(DataType type, F&& f) {
  switch (type) {
    case DataType::kF32: return f(float{});
    case DataType::kF64: return f(double{});
    case DataType::kI32: return f(int32_t{});
    case DataType::kF16: return f(Half{});
    case DataType::kBF16: return f(BFloat{});
  }
  return absl::InvalidArgumentError(absl::StrCat("the host backend does not reduce ", DataTypeName(type)));
}

template <typename T>
const T* Slot(IPCMemory& ws, size_t offset) {
  return reinterpret_cast<const T*>(static_cast<const char*>(ws.remote_data[ws.worker_id]) + offset);
}

template <typename T>
absl::Status OneShot(PeerGroup& session, IPCMemory& ws, const T* in, T* out, size_t count) {
  const int n = ws.num_workers, me = ws.worker_id;
  const uint64_t epoch = ++ws.barrier_flag[0];
  const int parity = static_cast<int>(epoch & 1);
  const size_t slot = internal::OneShotSlotBytes(count, sizeof(T));
  const size_t half = internal::HalfBytes(ws.size);
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    std::memcpy(static_cast<char*>(ws.remote_data[q]) + internal::OneShotSlotOffset(half, slot, parity, me), in,
                count * sizeof(T));
  }
  Signal(ws, &IPCMemory::barrier_in, epoch);
  VDEV_RETURN_IF_ERROR(Wait(session, ws, &IPCMemory::barrier_in, epoch, "one-shot"));
  const T* src[kMaxWorkers];
  for (int j = 0; j < n; ++j) src[j] = j == me ? in : Slot<T>(ws, internal::OneShotSlotOffset(half, slot, parity, j));
  SumInto(src, n, out, count);
  return absl::OkStatus();
}

template <typename T>
absl::Status TwoShot(PeerGroup& session, IPCMemory& ws, const T* in, T* out, size_t count) {
  const int n = ws.num_workers, me = ws.worker_id;
  const uint64_t epoch = ++ws.barrier_flag[0];
  const int parity = static_cast<int>(epoch & 1);
  const size_t chunk = internal::TwoShotChunkElems(count, n, sizeof(T));
  const size_t slot = internal::TwoShotSlotBytes(count, n, sizeof(T));
  const size_t half = internal::HalfBytes(ws.size);
  auto begin = [&](int j) { return std::min(count, j * chunk); };
  auto length = [&](int j) { return std::min(count, (j + 1) * chunk) - begin(j); };
  auto remote = [&](int q, int stage, int source) {
    return static_cast<char*>(ws.remote_data[q]) + internal::TwoShotSlotOffset(half, slot, n, stage, parity, source);
  };
  for (int q = 0; q < n; ++q) {
    if (q != me) std::memcpy(remote(q, 0, me), in + begin(q), length(q) * sizeof(T));
  }
  Signal(ws, &IPCMemory::barrier_in, epoch);
  VDEV_RETURN_IF_ERROR(Wait(session, ws, &IPCMemory::barrier_in, epoch, "reduce-scatter"));
  const T* src[kMaxWorkers];
  for (int j = 0; j < n; ++j) {
    src[j] = j == me ? in + begin(me) : reinterpret_cast<const T*>(remote(me, 0, j));
  }
  T* mine = out + begin(me);
  SumInto(src, n, mine, length(me));
  for (int q = 0; q < n; ++q) {
    if (q != me) std::memcpy(remote(q, 1, me), mine, length(me) * sizeof(T));
  }
  Signal(ws, &IPCMemory::barrier_out, epoch);
  VDEV_RETURN_IF_ERROR(Wait(session, ws, &IPCMemory::barrier_out, epoch, "all-gather"));
  for (int j = 0; j < n; ++j) {
    if (j != me) std::memcpy(out + begin(j), remote(me, 1, j), length(j) * sizeof(T));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status Run(PeerGroup& session, IPCMemory& ws, const void* in, void* out, size_t count,
                 AllReduceAlgorithm algorithm) {
  const T* typed_in = static_cast<const T*>(in);
  T* typed_out = static_cast<T*>(out);
  if (ws.num_workers == 1) {
    if (in != out) std::memmove(out, in, count * sizeof(T));
    return absl::OkStatus();
  }
  return algorithm == AllReduceAlgorithm::kOneShot ? OneShot(session, ws, typed_in, typed_out, count)
                                                   : TwoShot(session, ws, typed_in, typed_out, count);
}

// One barrier round of the zero-copy all-reduce: every round takes the next epoch of `memory`'s
// counter, so consecutive rounds (and calls) can share `barrier_in`: waits are for ">= epoch".
absl::Status Round(PeerGroup& session, IPCMemory& memory, absl::string_view stage) {
  const uint64_t epoch = ++memory.barrier_flag[0];
  Signal(memory, &IPCMemory::barrier_in, epoch);
  return Wait(session, memory, &IPCMemory::barrier_in, epoch, stage);
}

template <typename T>
absl::Status ZeroCopyOneShot(PeerGroup& session, const IPCBuffer& in, const IPCBuffer& out, size_t count) {
  IPCMemory& mem = *in.memory;
  VDEV_RETURN_IF_ERROR(Round(session, mem, "zero-copy entry"));
  const T* src[kMaxWorkers];
  for (int j = 0; j < mem.num_workers; ++j) src[j] = static_cast<const T*>(in.On(j));
  SumInto(src, mem.num_workers, static_cast<T*>(out.Local()), count);
  return Round(session, mem, "zero-copy exit");
}

template <typename T>
absl::Status ZeroCopyTwoShot(PeerGroup& session, const IPCBuffer& in, const IPCBuffer& out, size_t count) {
  IPCMemory& mem = *in.memory;
  const int n = mem.num_workers, me = mem.worker_id;
  const size_t chunk = internal::TwoShotChunkElems(count, n, sizeof(T));
  auto begin = [&](int j) { return std::min(count, j * chunk); };
  auto length = [&](int j) { return std::min(count, (j + 1) * chunk) - begin(j); };
  VDEV_RETURN_IF_ERROR(Round(session, mem, "zero-copy entry"));
  const T* src[kMaxWorkers];
  for (int j = 0; j < n; ++j) src[j] = static_cast<const T*>(in.On(j)) + begin(me);
  T* mine = static_cast<T*>(out.Local());
  SumInto(src, n, mine + begin(me), length(me));
  VDEV_RETURN_IF_ERROR(Round(session, mem, "zero-copy reduce-scatter"));
  for (int j = 0; j < n; ++j) {
    if (j != me) std::memcpy(mine + begin(j), static_cast<const T*>(out.On(j)) + begin(j), length(j) * sizeof(T));
  }
  return Round(session, mem, "zero-copy exit");
}

// kAuto and the LL forms, as the host backend runs them.
AllReduceAlgorithm HostAlgorithm(AllReduceAlgorithm algorithm, size_t bytes, int world) {
  if (algorithm == AllReduceAlgorithm::kOneShotLL || algorithm == AllReduceAlgorithm::kOneShotLL128 ||
      algorithm == AllReduceAlgorithm::kOneShotSentinel) {
    return AllReduceAlgorithm::kOneShot;
  }
  if (algorithm == AllReduceAlgorithm::kTwoShotLL) return AllReduceAlgorithm::kTwoShot;
  if (algorithm != AllReduceAlgorithm::kAuto) return algorithm;
  return bytes * world <= kHostOneShotLimit ? AllReduceAlgorithm::kOneShot : AllReduceAlgorithm::kTwoShot;
}

absl::Status CheckBuffer(PeerGroup& session, const IPCBuffer& buffer, size_t bytes, absl::string_view what) {
  if (buffer.memory == nullptr) return absl::InvalidArgumentError(absl::StrCat("the ", what, " has no IPC memory"));
  const IPCMemory& mem = *buffer.memory;
  if (mem.num_workers != session.world_size() || mem.worker_id != session.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("the ", what, "'s IPC memory belongs to another session"));
  }
  if (buffer.offset > mem.size || bytes > mem.size - buffer.offset) {
    return absl::InvalidArgumentError(absl::StrCat("the ", what, " (", bytes, " bytes at offset ", buffer.offset,
                                                   ") does not fit its IPC memory of ", mem.size, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HostAllReduceZeroCopy(PeerGroup& session, const IPCBuffer& in, const IPCBuffer& out, size_t count,
                                   DataType type, AllReduceAlgorithm algorithm) {
  if (algorithm == AllReduceAlgorithm::kNccl) {
    return absl::InvalidArgumentError("the host backend has no NCCL algorithm");
  }
  VDEV_ASSIGN_OR_RETURN(const size_t bytes, AllReduceBytes(count, type));
  VDEV_RETURN_IF_ERROR(CheckBuffer(session, in, bytes, "input"));
  VDEV_RETURN_IF_ERROR(CheckBuffer(session, out, bytes, "output"));
  if (in.memory == out.memory && in.offset < out.offset + bytes && out.offset < in.offset + bytes) {
    return absl::InvalidArgumentError("a zero-copy all-reduce's input and output must not overlap");
  }
  algorithm = HostAlgorithm(algorithm, bytes, session.world_size());
  return WithElementType(type, [&](auto element) {
    using T = decltype(element);
    return algorithm == AllReduceAlgorithm::kOneShot ? ZeroCopyOneShot<T>(session, in, out, count)
                                                     : ZeroCopyTwoShot<T>(session, in, out, count);
  });
}

absl::Status HostAllReduce(PeerGroup& session, IPCMemory& workspace, const void* in, void* out, size_t count,
                           DataType type, AllReduceAlgorithm algorithm) {
  if (algorithm == AllReduceAlgorithm::kNccl) {
    return absl::InvalidArgumentError("the host backend has no NCCL algorithm");
  }
  if (workspace.num_workers != session.world_size() || workspace.worker_id != session.rank()) {
    return absl::InvalidArgumentError("the workspace belongs to another session");
  }
  VDEV_ASSIGN_OR_RETURN(const size_t bytes, AllReduceBytes(count, type));
  algorithm = HostAlgorithm(algorithm, bytes, session.world_size());
  const size_t need = AllReduceWorkspaceBytes(algorithm, session.world_size(), count, type);
  if (workspace.size < need) {
    return absl::InvalidArgumentError(absl::StrCat("all-reduce of ", count, " ", DataTypeName(type), " with ",
                                                   AlgorithmName(algorithm), " needs a workspace of ", need,
                                                   " bytes; this one has ", workspace.size));
  }
  return WithElementType(
      type, [&](auto element) { return Run<decltype(element)>(session, workspace, in, out, count, algorithm); });
}

}  // namespace vdev
