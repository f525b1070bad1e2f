// The all-reduce kernels of N workers run on one GPU, in one process, for N = 2..8: the GPU machine
// has lent at most 4 GPUs, so world sizes 5 to 8 (and, on a one-GPU machine, every size) run here
// or nowhere. Each worker's workspaces are separate allocations laid out as IPC regions (data,
// barrier_in, barrier_out, epochs), each worker launches on its own stream, and the kernels meet
// through the same flags, lines and slots as across GPUs. What this checks: the protocol and the
// index arithmetic for every world size — exact sums, results bitwise equal on all workers, inputs
// intact, back-to-back calls of mixed kernels and sizes, zero-copy calls, a missing worker reported. What it cannot:
// NVLink's ordering and delivery, and speed. LL128 is left out: it relies on NVLink delivering a
// 128-byte line as one unit, which nothing promises between two SMs of one GPU (the communicator
// never runs it for workers that share a GPU either).
//
// Every block of every worker's call must be resident at once (blocks wait on each other), so each
// case first checks that its grid fits beside the other workers' (Fits); the sizes below do on an
// H100 or H200.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "internal/allreduce_layout.h"
#include "internal/cuda_kernel_families.h"
#include "internal/cuda_kernels.h"
#include "internal/pooled_allocator.h"
#include "runtime/cuda_test_util.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using internal::KernelArgs;
using internal::RegionLayout;
using testing::Cuda;
using testing::FromInt;
using testing::ToFloat;
using testing::Value;

constexpr AllReduceAlgorithm kKernels[] = {AllReduceAlgorithm::kOneShot, AllReduceAlgorithm::kTwoShot,
                                           AllReduceAlgorithm::kOneShotLL, AllReduceAlgorithm::kTwoShotLL,
                                           AllReduceAlgorithm::kOneShotSentinel};

int DeviceCount() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define REQUIRE_A_GPU() \
  if (DeviceCount() == 0) GTEST_SKIP() << "needs a GPU"

// `world` workers' regions on the current GPU, and a stream per worker.
class OneGpuWorld {
 public:
  static absl::StatusOr<std::unique_ptr<OneGpuWorld>> Create(int world, size_t max_bytes,
                                                             absl::Duration timeout = absl::Seconds(10)) {
    std::unique_ptr<OneGpuWorld> w(new OneGpuWorld(world, timeout));
    int device = 0;
    VDEV_RETURN_IF_ERROR(Cuda(cudaGetDevice(&device)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceGetAttribute(&w->sms_, cudaDevAttrMultiProcessorCount, device)));
    // As CudaCommunicator::Create sizes and fills its workspaces (kAuto: enough for one- and two-shot).
    const size_t main_bytes =
        std::max(AllReduceWorkspaceBytes(AllReduceAlgorithm::kAuto, world, max_bytes / 4, DataType::kF32),
                 AllReduceWorkspaceBytes(AllReduceAlgorithm::kAuto, world, max_bytes / 2, DataType::kBF16));
    VDEV_RETURN_IF_ERROR(w->AllocateRegions(main_bytes, /*fill=*/0, &w->main_));
    VDEV_RETURN_IF_ERROR(w->AllocateRegions(
        AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShotLL, world, max_bytes / 2, DataType::kBF16), 0, &w->ll_));
    VDEV_RETURN_IF_ERROR(w->AllocateRegions(
        AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShotSentinel, world, max_bytes / 2, DataType::kBF16), 0xff,
        &w->sentinel_));
    VDEV_RETURN_IF_ERROR(w->AllocateRegions(max_bytes, 0, &w->inputs_));
    for (int r = 0; r < world; ++r) {
      VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&w->streams_[r], cudaStreamNonBlocking)));
    }
    void* error = nullptr;
    VDEV_RETURN_IF_ERROR(Cuda(cudaHostAlloc(&error, sizeof(int), cudaHostAllocMapped)));
    w->error_host_ = static_cast<volatile int*>(error);
    *w->error_host_ = 0;
    VDEV_RETURN_IF_ERROR(Cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&w->error_device_), error, 0)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
    return w;
  }

  ~OneGpuWorld() {
    cudaDeviceSynchronize();
    for (cudaStream_t s : streams_) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    for (std::vector<Region>* regions : {&main_, &ll_, &sentinel_, &inputs_}) {
      for (Region& r : *regions) cudaFree(r.base);
    }
    if (error_host_ != nullptr) cudaFreeHost(const_cast<int*>(error_host_));
  }

  int world() const { return world_; }

  // Whether `world` grids of `algorithm`'s kernel for `count` elements can all be resident, twice
  // over under programmatic launch (a worker's next call may sit beside its current one). A worker
  // only starts its next call once every worker's current one runs, so this bounds every moment.
  absl::StatusOr<bool> Fits(AllReduceAlgorithm algorithm, DataType type, size_t count, bool programmatic) const {
    KernelArgs a;
    a.count = count;
    a.world = world_;
    return Fits(internal::PlanAllReduce(algorithm, type, a), programmatic);
  }
  absl::StatusOr<bool> Fits(const internal::KernelLaunch& launch, bool programmatic) const {
    if (launch.kernel == nullptr) return absl::InvalidArgumentError("no kernel");
    int per_sm = 0;
    VDEV_RETURN_IF_ERROR(Cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, reinterpret_cast<const void*>(launch.kernel), launch.threads, 0)));
    return int64_t{world_} * launch.blocks * (programmatic ? 2 : 1) <= int64_t{per_sm} * sms_;
  }

  // Enqueues worker `rank`'s call on its stream, as CudaCommunicator::Launch does.
  absl::Status Enqueue(int rank, AllReduceAlgorithm algorithm, DataType type, const void* in, void* out, size_t count,
                       bool programmatic) {
    const bool ll = algorithm == AllReduceAlgorithm::kOneShotLL || algorithm == AllReduceAlgorithm::kTwoShotLL;
    const std::vector<Region>& regions = ll                                                  ? ll_
                                         : algorithm == AllReduceAlgorithm::kOneShotSentinel ? sentinel_
                                                                                             : main_;
    KernelArgs a = ArgsFor(regions, rank, in, out, count);
    // The LL kernels count their own calls; the others share the main workspace's epochs.
    const Region& epochs = ll ? ll_[rank] : main_[rank];
    a.epochs = reinterpret_cast<uint64_t*>(epochs.base + epochs.layout.epochs_offset);
    a.half_bytes = internal::HalfBytes(regions[rank].size);
    return Cuda(internal::LaunchAllReduce(algorithm, type, a, streams_[rank], programmatic));
  }

  // Worker `rank`'s zero-copy input (at least max_bytes, in a region of its own).
  char* Input(int rank) const { return inputs_[rank].base; }
  cudaStream_t stream(int rank) const { return streams_[rank]; }

  // Enqueues worker `rank`'s zero-copy call on Input(0..world-1), as CudaCommunicator::AllReduceZeroCopy.
  absl::Status EnqueueZeroCopy(int rank, DataType type, void* out, size_t count, bool programmatic) {
    const KernelArgs a = ArgsFor(inputs_, rank, Input(rank), out, count);
    return Cuda(internal::LaunchZeroCopyOneShot(type, a, streams_[rank], programmatic));
  }

  // Enqueues worker `rank`'s fused all-reduce + add + rms_norm of bf16 rows, as
  // CudaCommunicator::AllReduceAddRmsNorm does (sentinel workspace, the main workspace's epochs), on
  // the grid the communicator would pick for `world` workers sharing this GPU; false where those
  // grids would not all be resident (twice over, as Fits).
  absl::StatusOr<bool> EnqueueFused(int rank, internal::FusedNormArgs f) {
    const internal::FusedNormGrid grid =
        internal::PlanFusedNormGrid(f.rows, f.hidden, 2, internal::FusedNormBlockCap(sms_, world_, kMaxBarrierBlocks));
    int per_sm = 0;
    VDEV_RETURN_IF_ERROR(Cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, reinterpret_cast<const void*>(internal::FusedNormInstance(DataType::kBF16, world_, grid.packs)),
        grid.threads, 0)));
    if (int64_t{world_} * grid.blocks * 2 > int64_t{per_sm} * sms_) return false;
    const size_t count = f.rows * f.hidden;
    f.all_reduce = ArgsFor(sentinel_, rank, f.all_reduce.in, f.all_reduce.out, count);
    f.all_reduce.epochs = reinterpret_cast<uint64_t*>(main_[rank].base + main_[rank].layout.epochs_offset);
    f.all_reduce.half_bytes = internal::HalfBytes(sentinel_[rank].size);
    f.all_reduce.slot_bytes = internal::OneShotSlotBytes(count, 2);
    VDEV_RETURN_IF_ERROR(
        Cuda(internal::LaunchAllReduceAddRmsNorm(DataType::kBF16, f, grid, streams_[rank], /*programmatic=*/true)));
    return true;
  }

  // Waits for every worker's stream; a timed-out wait inside a kernel becomes an error naming the
  // worker waited for.
  absl::Status Synchronize() {
    for (cudaStream_t s : streams_) VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(s)));
    const int missing = *error_host_ - 1;
    if (missing < 0) return absl::OkStatus();
    *error_host_ = 0;
    return absl::DeadlineExceededError(absl::StrCat("a kernel timed out waiting for worker ", missing));
  }

 private:
  struct Region {
    char* base = nullptr;
    size_t size = 0;  // the data part, as IPCMemory::size
    RegionLayout layout;
  };

  // Every worker's region of `regions`, with their flags; epochs of `rank`'s region.
  KernelArgs ArgsFor(const std::vector<Region>& regions, int rank, const void* in, void* out, size_t count) const {
    KernelArgs a;
    a.in = in;
    a.out = out;
    a.count = count;
    a.rank = rank;
    a.world = world_;
    for (int j = 0; j < world_; ++j) {
      a.data[j] = regions[j].base;
      a.flags_in[j] = reinterpret_cast<uint64_t*>(regions[j].base + regions[j].layout.barrier_in_offset);
      a.flags_out[j] = reinterpret_cast<uint64_t*>(regions[j].base + regions[j].layout.barrier_out_offset);
    }
    a.epochs = reinterpret_cast<uint64_t*>(regions[rank].base + regions[rank].layout.epochs_offset);
    a.timeout_ns = static_cast<unsigned long long>(absl::ToInt64Nanoseconds(timeout_));
    a.error = error_device_;
    return a;
  }

  OneGpuWorld(int world, absl::Duration timeout) : world_(world), timeout_(timeout), streams_(world, nullptr) {}

  absl::Status AllocateRegions(size_t bytes, int fill, std::vector<Region>* regions) {
    for (int r = 0; r < world_; ++r) {
      Region region;
      region.size = bytes;
      region.layout = *internal::LayoutFor(bytes);
      VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&region.base), region.layout.total_bytes)));
      regions->push_back(region);
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(region.base, 0, region.layout.total_bytes)));
      if (fill != 0) VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(region.base, fill, region.layout.data_bytes)));
    }
    return absl::OkStatus();
  }

  int world_;
  absl::Duration timeout_;
  int sms_ = 0;
  std::vector<Region> main_, ll_, sentinel_;  // [worker]
  std::vector<Region> inputs_;                // [worker]: zero-copy inputs, as IPC memory
  std::vector<cudaStream_t> streams_;
  volatile int* error_host_ = nullptr;
  int* error_device_ = nullptr;
};

// One call's buffers on every worker: inputs Value(rank, i, salt), outputs poisoned.
template <typename T>
class CallBuffers {
 public:
  static absl::StatusOr<CallBuffers> Create(int world, size_t count, int salt, bool in_place) {
    CallBuffers b;
    b.count_ = count;
    b.salt_ = salt;
    b.in_place_ = in_place;
    b.inputs_.assign(world, std::vector<T>(count));
    for (int r = 0; r < world; ++r) {
      for (size_t i = 0; i < count; ++i) b.inputs_[r][i] = FromInt<T>(Value(r, i, salt));
      b.in_.push_back(nullptr);
      b.out_.push_back(nullptr);
      VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&b.in_[r]), count * sizeof(T))));
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(b.in_[r], b.inputs_[r].data(), count * sizeof(T), cudaMemcpyHostToDevice)));
      if (in_place) {
        b.out_[r] = b.in_[r];
        continue;
      }
      VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&b.out_[r]), count * sizeof(T))));
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(b.out_[r], 0xff, count * sizeof(T))));
    }
    VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));  // the copies have landed before any kernel
    return b;
  }
  CallBuffers(CallBuffers&& other) noexcept = default;
  CallBuffers& operator=(CallBuffers&& other) noexcept = default;
  ~CallBuffers() {
    for (size_t r = 0; r < in_.size(); ++r) {
      cudaFree(in_[r]);
      if (out_[r] != in_[r]) cudaFree(out_[r]);
    }
  }

  const T* in(int rank) const { return in_[rank]; }
  T* out(int rank) const { return out_[rank]; }
  size_t count() const { return count_; }

  // Exact integer sums on every worker, bitwise equal across workers, inputs untouched.
  absl::Status Check(absl::string_view what) const {
    const int world = static_cast<int>(in_.size());
    std::vector<T> first(count_), got(count_), input(count_);
    for (int r = 0; r < world; ++r) {
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(got.data(), out_[r], count_ * sizeof(T), cudaMemcpyDeviceToHost)));
      for (size_t i = 0; i < count_; ++i) {
        int want = 0;
        for (int j = 0; j < world; ++j) want += Value(j, i, salt_);
        if (ToFloat(got[i]) != static_cast<float>(want)) {
          return absl::InternalError(
              absl::StrCat(what, ": worker ", r, " element ", i, " is ", ToFloat(got[i]), ", want ", want));
        }
      }
      if (r == 0) first = got;
      if (std::memcmp(first.data(), got.data(), count_ * sizeof(T)) != 0) {
        return absl::InternalError(absl::StrCat(what, ": worker ", r, "'s result differs bitwise from worker 0's"));
      }
      if (in_place_) continue;
      VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(input.data(), in_[r], count_ * sizeof(T), cudaMemcpyDeviceToHost)));
      if (std::memcmp(input.data(), inputs_[r].data(), count_ * sizeof(T)) != 0) {
        return absl::InternalError(absl::StrCat(what, ": worker ", r, "'s input was modified"));
      }
    }
    return absl::OkStatus();
  }

 private:
  CallBuffers() = default;
  size_t count_ = 0;
  int salt_ = 0;
  bool in_place_ = false;
  std::vector<std::vector<T>> inputs_;
  std::vector<T*> in_, out_;  // out_[r] == in_[r] in place
};

std::string Describe(int world, AllReduceAlgorithm algorithm, DataType type, size_t count, bool in_place) {
  return absl::StrCat(world, " workers, ", AlgorithmName(algorithm), " ", DataTypeName(type), " count ", count,
                      in_place ? " in place" : "");
}

// Every worker's call enqueued (in reverse rank order on odd salts, so no worker is always first),
// then checked.
template <typename T>
absl::Status CheckCall(OneGpuWorld& w, AllReduceAlgorithm algorithm, DataType type, size_t count, bool in_place,
                       int salt) {
  const std::string what = Describe(w.world(), algorithm, type, count, in_place);
  VDEV_ASSIGN_OR_RETURN(bool fits, w.Fits(algorithm, type, count, /*programmatic=*/false));
  if (!fits) return absl::FailedPreconditionError(absl::StrCat(what, ": the grids do not fit on this GPU together"));
  VDEV_ASSIGN_OR_RETURN(CallBuffers<T> b, CallBuffers<T>::Create(w.world(), count, salt, in_place));
  for (int k = 0; k < w.world(); ++k) {
    const int r = salt % 2 == 0 ? k : w.world() - 1 - k;
    VDEV_RETURN_IF_ERROR(w.Enqueue(r, algorithm, type, b.in(r), b.out(r), count, /*programmatic=*/false));
  }
  VDEV_RETURN_IF_ERROR(w.Synchronize());
  return b.Check(what);
}

absl::Status CheckCallOfType(OneGpuWorld& w, AllReduceAlgorithm algorithm, DataType type, size_t count, bool in_place,
                             int salt) {
  switch (type) {
    case DataType::kF32: return CheckCall<float>(w, algorithm, type, count, in_place, salt);
    case DataType::kF16: return CheckCall<__half>(w, algorithm, type, count, in_place, salt);
    default: return CheckCall<__nv_bfloat16>(w, algorithm, type, count, in_place, salt);
  }
}

// Counts below the world size, odd counts, one element past a 16-byte pack, an LL128-sized line,
// a two-shot chunk, and sizes whose tails end mid-pack in each type.
TEST(CudaOneGpuWorldTest, ExactSumsForEveryWorldSizeKernelAndType) {
  REQUIRE_A_GPU();
  const size_t counts[] = {1, 2, 3, 5, 7, 8, 9, 15, 17, 31, 60, 61, 100, 257, 1000, 1023, 4097, 8191};
  int salt = 0;
  for (int world = 2; world <= kMaxWorkers; ++world) {
    absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, 64 << 10);
    ASSERT_TRUE(w.ok()) << w.status();
    for (AllReduceAlgorithm algorithm : kKernels) {
      for (DataType type : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
        for (size_t count : counts) {
          const bool in_place = ++salt % 3 == 0;
          absl::Status s = CheckCallOfType(**w, algorithm, type, count, in_place, salt);
          ASSERT_TRUE(s.ok()) << s;
        }
      }
    }
  }
}

// Larger messages, up to the largest each world size can hold resident: the multi-round forms of the
// one-shot LL kernel (past 256 blocks of 128 lines) and the wider grids. Each world size must run at
// least its 32 KB cases, or the test fails rather than pass having run nothing.
TEST(CudaOneGpuWorldTest, LargerMessagesWhereTheGridsFitTogether) {
  REQUIRE_A_GPU();
  const size_t bytes[] = {32 << 10, (64 << 10) + 2, (256 << 10) + 2, (512 << 10) + 6, 1 << 20};
  int salt = 1000;
  for (int world = 2; world <= kMaxWorkers; ++world) {
    absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, 1 << 20);
    ASSERT_TRUE(w.ok()) << w.status();
    int ran = 0;
    for (AllReduceAlgorithm algorithm : kKernels) {
      for (size_t b : bytes) {
        const size_t count = b / 2;
        absl::StatusOr<bool> fits = (*w)->Fits(algorithm, DataType::kBF16, count, false);
        ASSERT_TRUE(fits.ok()) << fits.status();
        if (!*fits) continue;
        absl::Status s = CheckCallOfType(**w, algorithm, DataType::kBF16, count, false, ++salt);
        ASSERT_TRUE(s.ok()) << s;
        ran += b == bytes[0];
      }
    }
    EXPECT_EQ(ran, static_cast<int>(std::size(kKernels))) << world << " workers: a 32 KB grid did not fit";
  }
}

// Back-to-back calls with random kernels, types' sizes and placements, all enqueued before any is
// checked, with and without programmatic dependent launch: a line taken before it arrived, a
// workspace half reused while a worker still reads it, or epochs out of step between the kernels that
// share them show up as a wrong sum.
TEST(CudaOneGpuWorldTest, RandomBackToBackCallsForEveryWorldSize) {
  REQUIRE_A_GPU();
  constexpr int kCalls = 96, kBatches = 4;
  constexpr size_t kMaxCount = 6000;
  std::mt19937_64 rng(20261124);
  for (bool programmatic : {false, true}) {
    for (int world = 2; world <= kMaxWorkers; ++world) {
      absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, kMaxCount * 2);
      ASSERT_TRUE(w.ok()) << w.status();
      for (int batch = 0; batch < kBatches; ++batch) {
        std::vector<CallBuffers<__nv_bfloat16>> calls;
        std::vector<AllReduceAlgorithm> chosen;
        for (int k = 0; k < kCalls; ++k) {
          const size_t count = 1 + rng() % (rng() % 4 == 0 ? kMaxCount : 64);
          chosen.push_back(kKernels[rng() % std::size(kKernels)]);
          absl::StatusOr<bool> fits = (*w)->Fits(chosen.back(), DataType::kBF16, count, programmatic);
          ASSERT_TRUE(fits.ok() && *fits) << Describe(world, chosen.back(), DataType::kBF16, count, false);
          auto b = CallBuffers<__nv_bfloat16>::Create(world, count, batch * kCalls + k, rng() % 4 == 0);
          ASSERT_TRUE(b.ok()) << b.status();
          calls.push_back(std::move(*b));
        }
        // Worker by worker, each enqueueing all its calls: the first workers run ahead as far as the
        // protocol lets them.
        for (int r = 0; r < world; ++r) {
          for (int k = 0; k < kCalls; ++k) {
            absl::Status s = (*w)->Enqueue(r, chosen[k], DataType::kBF16, calls[k].in(r), calls[k].out(r),
                                           calls[k].count(), programmatic);
            ASSERT_TRUE(s.ok()) << s;
          }
        }
        absl::Status s = (*w)->Synchronize();
        ASSERT_TRUE(s.ok()) << s;
        for (int k = 0; k < kCalls; ++k) {
          s = calls[k].Check(absl::StrCat("batch ", batch, " call ", k, ", ",
                                          Describe(world, chosen[k], DataType::kBF16, calls[k].count(), false),
                                          programmatic ? ", programmatic launch" : ""));
          ASSERT_TRUE(s.ok()) << s;
        }
      }
    }
  }
}

// Zero-copy: every worker's input lies in its IPC region, and before each of its back-to-back calls a
// producer (a copy on the worker's stream) rewrites it. This checks the zero-copy kernel's sums and
// flag indexing for every world size; it does not reproduce the race its exit barrier prevents (a
// kernel that left while a peer still read its input): workers on one GPU finish too closely
// together, and a mutant without that barrier passed here. CudaAllReduceTest.ZeroCopyExactSums* on 2
// and 4 GPUs fail without it.
template <typename T>
absl::Status ZeroCopyBackToBack(OneGpuWorld& w, DataType type, size_t count, int salt, bool programmatic) {
  constexpr int kCalls = 6;
  const std::string what =
      absl::StrCat("zero-copy, ", Describe(w.world(), AllReduceAlgorithm::kOneShot, type, count, false));
  VDEV_ASSIGN_OR_RETURN(bool fits, w.Fits(internal::PlanZeroCopyOneShot(type, count), programmatic));
  if (!fits) return absl::FailedPreconditionError(absl::StrCat(what, ": the grids do not fit on this GPU together"));
  std::vector<CallBuffers<T>> calls;  // each call's inputs (staged here, copied in by the producer) and outputs
  for (int k = 0; k < kCalls; ++k) {
    VDEV_ASSIGN_OR_RETURN(CallBuffers<T> b, CallBuffers<T>::Create(w.world(), count, salt + k, false));
    calls.push_back(std::move(b));
  }
  for (int k = 0; k < kCalls; ++k) {
    for (int r = 0; r < w.world(); ++r) {
      VDEV_RETURN_IF_ERROR(
          Cuda(cudaMemcpyAsync(w.Input(r), calls[k].in(r), count * sizeof(T), cudaMemcpyDeviceToDevice, w.stream(r))));
      VDEV_RETURN_IF_ERROR(w.EnqueueZeroCopy(r, type, calls[k].out(r), count, programmatic));
    }
  }
  VDEV_RETURN_IF_ERROR(w.Synchronize());
  for (int k = 0; k < kCalls; ++k) VDEV_RETURN_IF_ERROR(calls[k].Check(absl::StrCat(what, ", call ", k)));
  return absl::OkStatus();
}

TEST(CudaOneGpuWorldTest, ZeroCopyBackToBackForEveryWorldSize) {
  REQUIRE_A_GPU();
  int salt = 5000;
  for (bool programmatic : {false, true}) {
    for (int world = 2; world <= kMaxWorkers; ++world) {
      absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, 16 << 10);
      ASSERT_TRUE(w.ok()) << w.status();
      for (size_t count : {1, 3, 7, 9, 1000, 4096}) {
        salt += 10;
        absl::Status s = ZeroCopyBackToBack<float>(**w, DataType::kF32, count, salt, programmatic);
        ASSERT_TRUE(s.ok()) << s;
        s = ZeroCopyBackToBack<__half>(**w, DataType::kF16, count + 1, salt, programmatic);
        ASSERT_TRUE(s.ok()) << s;
        s = ZeroCopyBackToBack<__nv_bfloat16>(**w, DataType::kBF16, count + 2, salt, programmatic);
        ASSERT_TRUE(s.ok()) << s;
      }
    }
  }
}

// The fused all-reduce + add + rms_norm (bf16) of 2..8 workers sharing this GPU, three calls back to
// back per shape under programmatic launch: h = residual + the sum is exact (integer values), equal on
// all workers; n within one bf16 ulp of the f64 norm of h (the f32 statistics are ~1e-5 off).
TEST(CudaOneGpuWorldTest, FusedNormForEveryWorldSize) {
  REQUIRE_A_GPU();
  const std::pair<size_t, size_t> shapes[] = {{1, 8}, {5, 520}, {70, 1024}, {3, 8192}};
  int salt = 7000;
  for (int world = 2; world <= kMaxWorkers; ++world) {
    absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, 160 << 10);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const auto& [rows, hidden] : shapes) {
      const size_t count = rows * hidden;
      std::vector<__nv_bfloat16> residual(count), gamma(hidden, FromInt<__nv_bfloat16>(1));
      const int residual_salt = salt;
      for (size_t i = 0; i < count; ++i) residual[i] = FromInt<__nv_bfloat16>(Value(9, i, residual_salt));
      __nv_bfloat16 *dres = nullptr, *dgamma = nullptr;
      ASSERT_TRUE(Cuda(cudaMalloc(reinterpret_cast<void**>(&dres), count * 2)).ok());
      ASSERT_TRUE(Cuda(cudaMalloc(reinterpret_cast<void**>(&dgamma), hidden * 2)).ok());
      ASSERT_TRUE(Cuda(cudaMemcpy(dres, residual.data(), count * 2, cudaMemcpyHostToDevice)).ok());
      ASSERT_TRUE(Cuda(cudaMemcpy(dgamma, gamma.data(), hidden * 2, cudaMemcpyHostToDevice)).ok());
      for (int call = 0; call < 3; ++call) {
        auto b = CallBuffers<__nv_bfloat16>::Create(world, count, ++salt, false);
        ASSERT_TRUE(b.ok()) << b.status();
        std::vector<__nv_bfloat16*> normed(world);
        for (int r = 0; r < world; ++r)
          ASSERT_TRUE(Cuda(cudaMalloc(reinterpret_cast<void**>(&normed[r]), count * 2)).ok());
        bool fits = true;
        for (int r = 0; r < world && fits; ++r) {
          internal::FusedNormArgs f;
          f.all_reduce.in = b->in(r);
          f.all_reduce.out = b->out(r);
          f.residual = dres;
          f.gamma = dgamma;
          f.normed = normed[r];
          f.rows = rows;
          f.hidden = hidden;
          f.epsilon = 1e-6f;
          absl::StatusOr<bool> launched = (*w)->EnqueueFused(r, f);
          ASSERT_TRUE(launched.ok()) << launched.status();
          fits = *launched;
        }
        if (!fits) {
          ASSERT_GT(hidden, 1024u) << "world " << world << ": the fused grids of small rows must fit";
          for (__nv_bfloat16* p : normed) cudaFree(p);
          break;
        }
        ASSERT_TRUE((*w)->Synchronize().ok());
        std::vector<__nv_bfloat16> h(count), n(count), n0(count);
        for (int r = 0; r < world; ++r) {
          ASSERT_TRUE(Cuda(cudaMemcpy(h.data(), b->out(r), count * 2, cudaMemcpyDeviceToHost)).ok());
          ASSERT_TRUE(Cuda(cudaMemcpy(n.data(), normed[r], count * 2, cudaMemcpyDeviceToHost)).ok());
          if (r == 0) n0 = n;
          ASSERT_EQ(std::memcmp(n.data(), n0.data(), count * 2), 0) << "world " << world << ": n differs on " << r;
          for (size_t row = 0; row < rows; ++row) {
            double squares = 0;
            for (size_t i = row * hidden; i < (row + 1) * hidden; ++i) {
              int want = Value(9, i, residual_salt);
              for (int j = 0; j < world; ++j) want += Value(j, i, salt);
              ASSERT_EQ(ToFloat(h[i]), static_cast<float>(want)) << "world " << world << " worker " << r << " h " << i;
              squares += double{ToFloat(h[i])} * ToFloat(h[i]);
            }
            const double rstd = 1.0 / std::sqrt(squares / hidden + 1e-6);
            for (size_t i = row * hidden; i < (row + 1) * hidden; ++i) {
              const double want = ToFloat(h[i]) * rstd;
              ASSERT_LE(std::fabs(ToFloat(n[i]) - want), std::fabs(want) * (0x1p-7 + 1e-5)) << "n " << i;
            }
          }
        }
        for (__nv_bfloat16* p : normed) cudaFree(p);
      }
      cudaFree(dres);
      cudaFree(dgamma);
    }
  }
}

// The last worker never launches: every kernel's wait ends within its bound and names that worker.
TEST(CudaOneGpuWorldTest, MissingWorkerIsReportedForEveryKernelAndWorldSize) {
  REQUIRE_A_GPU();
  for (int world : {3, 5, 8}) {
    for (AllReduceAlgorithm algorithm : kKernels) {
      // A fresh world each time: after a timed-out wait the workspace is out of step.
      absl::StatusOr<std::unique_ptr<OneGpuWorld>> w = OneGpuWorld::Create(world, 64 << 10, absl::Milliseconds(100));
      ASSERT_TRUE(w.ok()) << w.status();
      auto b = CallBuffers<float>::Create(world, 3000, 7, false);
      ASSERT_TRUE(b.ok()) << b.status();
      const absl::Time start = absl::Now();
      for (int r = 0; r + 1 < world; ++r) {
        ASSERT_TRUE((*w)->Enqueue(r, algorithm, DataType::kF32, b->in(r), b->out(r), 3000, false).ok());
      }
      absl::Status s = (*w)->Synchronize();
      EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << Describe(world, algorithm, DataType::kF32, 3000, false);
      EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
      EXPECT_NE(s.message().find(absl::StrCat("worker ", world - 1)), std::string::npos) << s;
    }
  }
}

}  // namespace
}  // namespace vdev
