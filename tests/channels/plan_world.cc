// PlanWorld: N ranks of a channel plan on one GPU (see plan_world.h).
#include "channels/plan_world.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::testing {
namespace {

// Before CUDA starts (a static initialiser of the test and benchmark binaries): up to 32 hardware
// work queues, so that 8 ranks' streams and their 8 port proxies' streams get one each
// (internal/cuda_proxy.h says why they must). A value set by the caller stays (CheckWorkQueues
// then judges it).
const bool kWorkQueues = [] { return setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0) == 0; }();

}  // namespace

absl::Status Cuda(cudaError_t e) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("CUDA: ", cudaGetErrorString(e)));
}

absl::StatusOr<std::unique_ptr<PlanWorld>> PlanWorld::Create(const ProgramSpec& plan, size_t max_count,
                                                             absl::Duration timeout, int dtype) {
  std::unique_ptr<PlanWorld> w(new PlanWorld());
  w->plan_ = plan;
  w->timeout_ = timeout;
  // For runs under a tool that slows the kernels (compute-sanitizer): every wait's bound, in seconds.
  if (const char* set = std::getenv("VDEV_PLAN_WORLD_TIMEOUT_S"); set != nullptr) {
    w->timeout_ = absl::Seconds(std::strtod(set, nullptr));
  }
  w->dtype_ = dtype;
  w->elem_ = dtype == internal::kDevF32 ? 4 : 2;
  w->layout_ = internal::MakeRegionLayout(max_count, w->elem_, InputSegments(plan.collective, plan.world_size),
                                          OutputSegments(plan.collective, plan.world_size), plan.chunks_per_segment,
                                          plan.scratch_chunks);
  int device = 0;
  VDEV_RETURN_IF_ERROR(Cuda(cudaGetDevice(&device)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceGetAttribute(&w->sms_, cudaDevAttrMultiProcessorCount, device)));
  (void)kWorkQueues;
  // Each rank's stream and each rank's proxy: a work queue each.
  if (!plan.port_channels.empty()) VDEV_RETURN_IF_ERROR(internal::CheckWorkQueues(2 * plan.world_size));
  w->ranks_.resize(plan.world_size);
  for (int r = 0; r < plan.world_size; ++r) {
    Rank& k = w->ranks_[r];
    const size_t semaphore_bytes = sizeof(uint64_t) * internal::kDeviceTags * kMaxWorkers;
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&k.region), w->layout_.total)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&k.semaphores), semaphore_bytes)));
    VDEV_RETURN_IF_ERROR(
        Cuda(cudaMalloc(reinterpret_cast<void**>(&k.counters), sizeof(uint64_t) * internal::kMaxPlanBlocks)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(k.region, 0, w->layout_.total)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(k.semaphores, 0, semaphore_bytes)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(k.counters, 0, sizeof(uint64_t) * internal::kMaxPlanBlocks)));
    VDEV_RETURN_IF_ERROR(k.device.Upload(plan, r));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&k.port_semaphores), internal::kPortSemaphoreBytes)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaMemset(k.port_semaphores, 0, internal::kPortSemaphoreBytes)));
    VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking)));
  }
  std::vector<uint64_t*> port_semaphores;
  for (const Rank& k : w->ranks_) port_semaphores.push_back(k.port_semaphores);
  for (Rank& k : w->ranks_) {
    if (k.device.uses_ports) {
      VDEV_ASSIGN_OR_RETURN(k.ports, internal::PortEndpoint::Start(port_semaphores));
    }
  }
  VDEV_ASSIGN_OR_RETURN(w->error_, internal::MappedChannelError::Create());
  VDEV_RETURN_IF_ERROR(Cuda(cudaDeviceSynchronize()));
  return w;
}

PlanWorld::~PlanWorld() {
  cudaDeviceSynchronize();
  for (Rank& k : ranks_) {
    k.ports.reset();
    if (k.stream != nullptr) cudaStreamDestroy(k.stream);
    cudaFree(k.region);
    cudaFree(k.semaphores);
    cudaFree(k.port_semaphores);
    cudaFree(k.counters);
    k.device.Free();
  }
}

absl::StatusOr<bool> PlanWorld::Fits(int instances, bool programmatic, size_t count) const {
  int64_t blocks = 0;
  for (const auto& tbs : plan_.ranks) {
    if (static_cast<int64_t>(tbs.size()) * instances > internal::kMaxPlanBlocks) return false;
    blocks += static_cast<int64_t>(tbs.size()) * instances;
  }
  // Compiled, each rank's kernel is its own, with registers of its own: the fewest blocks an SM
  // holds of any of them.
  int per_sm = 0;
  for (int r = 0; r < (compiled() ? world() : 1); ++r) {
    const internal::PlanLaunchArgs a = Args(r, count, instances);
    const void* kernel = internal::PlanKernel(a);
    if (compiled()) {
      VDEV_ASSIGN_OR_RETURN(kernel, ranks_[r].compiled->Kernel(a));
    }
    int fit = 0;
    VDEV_RETURN_IF_ERROR(
        Cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, internal::PlanThreads(a), 0)));
    per_sm = r == 0 ? fit : std::min(per_sm, fit);
  }
  return blocks * (programmatic ? 2 : 1) <= int64_t{per_sm} * sms_;
}

internal::PlanLaunchArgs PlanWorld::Args(int rank, size_t count, int instances) const {
  const Rank& k = ranks_[rank];
  internal::PlanLaunchArgs a = k.device.LaunchArgs();
  a.instances = instances;
  for (int j = 0; j < world(); ++j) {
    a.regions[j] = ranks_[j].region;
    a.semaphores[j] = ranks_[j].semaphores;
    a.port_semaphores[j] = ranks_[j].port_semaphores;
  }
  a.counters = k.counters;
  a.layout = layout_;
  a.count = count;
  a.chunks_per_segment = plan_.chunks_per_segment;
  a.elem = elem_;
  a.dtype = dtype_;
  a.rank = rank;
  a.timeout_ns = static_cast<unsigned long long>(absl::ToInt64Nanoseconds(timeout_));
  a.error = error_->device();
  a.trace = k.trace;
  if (k.ports != nullptr) {
    a.port_fifo = k.ports->fifo_device();
    a.port_tickets = k.ports->tickets();
  }
  return a;
}

absl::Status PlanWorld::Enqueue(int rank, size_t count, int instances, bool programmatic) {
  if (ranks_[rank].device.tbs * instances > internal::kMaxPlanBlocks)
    return absl::InvalidArgumentError("too many blocks");
  const internal::PlanLaunchArgs a = Args(rank, count, instances);
  const void* kernel = nullptr;
  if (compiled()) {
    // Every rank's kernel of a new shape before this rank's launch: the ranks share this process's
    // context, where a kernel's load waits for the running kernels (CompiledPlan::Kernel).
    bool everyone = true;
    for (const Rank& k : ranks_) everyone = everyone && k.compiled->Has(a);  // a shape is the same for all
    if (!everyone) VDEV_RETURN_IF_ERROR(Prepare(count, {instances}));
    VDEV_ASSIGN_OR_RETURN(kernel, ranks_[rank].compiled->Kernel(a));
  }
  return Cuda(internal::LaunchPlan(a, ranks_[rank].stream, programmatic, kernel));
}

absl::Status PlanWorld::UseCompiledKernels() {
  for (int r = 0; r < world(); ++r) {
    VDEV_ASSIGN_OR_RETURN(internal::FlatPlan flat, internal::FlattenPlan(plan_, r));
    VDEV_ASSIGN_OR_RETURN(ranks_[r].compiled,
                          internal::CompiledPlan::Create(std::move(flat), r, plan_.chunks_per_segment));
  }
  return absl::OkStatus();
}

absl::Status PlanWorld::Prepare(size_t count, const std::vector<int>& instances) {
  if (!compiled()) return absl::OkStatus();
  // Every rank at once (each compiles its shapes on threads of its own).
  std::vector<absl::Status> done(world());
  std::vector<std::thread> threads;
  for (int r = 0; r < world(); ++r) {
    std::vector<internal::PlanLaunchArgs> launches;
    for (const int i : instances) {
      if (ranks_[r].device.tbs * i <= internal::kMaxPlanBlocks) launches.push_back(Args(r, count, i));
    }
    threads.emplace_back([this, r, launches, &done] { done[r] = ranks_[r].compiled->Prepare(launches); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : done) VDEV_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status PlanWorld::Synchronize() {
  // Polled rather than waited for, so that the port proxies' progress is taken when a wait times out
  // (the kernels then still run), not after.
  std::string proxies;
  bool taken = false;
  for (bool running = true; running;) {
    running = false;
    for (const Rank& k : ranks_) {
      const cudaError_t e = cudaStreamQuery(k.stream);
      if (e != cudaErrorNotReady) VDEV_RETURN_IF_ERROR(Cuda(e));
      running = running || e == cudaErrorNotReady;
    }
    if (!taken && error_->Raised()) {
      taken = true;
      for (int r = 0; r < world(); ++r) {
        if (ranks_[r].ports != nullptr) absl::StrAppend(&proxies, "; rank ", r, "'s ", ranks_[r].ports->Progress());
      }
    }
    if (running) std::this_thread::yield();
  }
  const internal::ChannelError e = error_->Take();
  if (e.code == 0) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat("a wait timed out: ", internal::DescribeTimeout(e), proxies));
}

absl::Status PlanWorld::SetExecutions(uint64_t done) {
  VDEV_RETURN_IF_ERROR(Synchronize());
  const std::vector<uint64_t> counters(internal::kMaxPlanBlocks, done);
  for (const Rank& k : ranks_) {
    VDEV_RETURN_IF_ERROR(
        Cuda(cudaMemcpy(k.counters, counters.data(), counters.size() * sizeof(uint64_t), cudaMemcpyHostToDevice)));
  }
  return absl::OkStatus();
}

}  // namespace vdev::channels::testing
