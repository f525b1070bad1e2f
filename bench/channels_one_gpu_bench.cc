// The channel plan executor against the hand-written all-reduce kernels, with 2..8 workers sharing
// GPU 0 in one process (as tests/runtime/cuda_one_gpu_world_test.cc runs them), each plan against
// the hand-written kernel with its data path: one_shot_push against the one-shot kernel (push to the
// peers' scratch, one barrier, sum), one_shot against the zero-copy one-shot kernel (entry barrier,
// sum of the peers' inputs read in place, exit barrier), one_shot_ll against the one-shot LL kernel;
// f32 (or --dtype f16 / bf16), 4 KB to 1 MB. Each variant's calls are captured per worker into a CUDA graph of
// `iters` calls; a timed repeat launches every worker's graph and waits for all (wall clock / iters),
// variants interleaved within each repeat; the median of the repeats is reported. Plans run with
// 1..128 instances; the best is reported beside the full sweep. Every variant uses programmatic
// dependent launch; a cell whose grids cannot all be resident at once (2x under programmatic
// launch) is left out. This measures kernels that share one GPU's SMs and L2 — the ratio, not
// NVLink speed.
//
// --trace instead prints where one execution's time goes: each rank's block 0 stamps clock64() at
// its start, after its prologue and after each op step (PlanLaunchArgs::trace), for the last call of
// a graph of `iters` calls. --ports instead measures the port channels (copy engine and host proxy)
// against memory channels: all_gather_port against all_gather, the same algorithm. --compiled adds
// each plan compiled for its shape (internal/compiled_plan.h) beside the generic kernel, same sweep.
//
//   channels_one_gpu_bench [--iters 50] [--reps 7] [--csv FILE] [--dtype f32|f16|bf16] [--compiled]
//                          [--worlds 2,4,8] [--plans one_shot_push,one_shot,one_shot_ll] [--trace | --ports]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "channels/plan_world.h"
#include "internal/allreduce_layout.h"
#include "internal/cuda_kernels.h"
#include "internal/pooled_allocator.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/status_macros.h"

namespace {

using vdev::AllReduceAlgorithm;
using vdev::DataType;
using vdev::channels::testing::Cuda;
using vdev::channels::testing::PlanWorld;

void Ok(const absl::Status& s, const std::string& what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what.c_str(), std::string(s.message()).c_str());
  std::exit(1);
}

// The hand-written kernels' workspaces for `world` workers on this GPU.
class HandWorld {
 public:
  HandWorld(int world, size_t max_bytes, DataType type) : world_(world), type_(type), streams_(world) {
    const size_t max_count = max_bytes / vdev::DataTypeSize(type);
    Allocate(vdev::AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShot, world, max_count, type), &main_);
    Allocate(vdev::AllReduceWorkspaceBytes(AllReduceAlgorithm::kOneShotLL, world, max_count, type), &ll_);
    for (int r = 0; r < world; ++r) {
      Ok(Cuda(cudaMalloc(reinterpret_cast<void**>(&in_.emplace_back()), max_bytes)), "cudaMalloc");
      Ok(Cuda(cudaMalloc(reinterpret_cast<void**>(&out_.emplace_back()), max_bytes)), "cudaMalloc");
      Ok(Cuda(cudaMemset(in_[r], 0, max_bytes)), "cudaMemset");
      Ok(Cuda(cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking)), "stream");
    }
    void* error = nullptr;
    Ok(Cuda(cudaHostAlloc(&error, sizeof(int), cudaHostAllocMapped)), "cudaHostAlloc");
    error_ = static_cast<volatile int*>(error);
    *error_ = 0;
    Ok(Cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&error_device_), error, 0)), "device pointer");
  }
  ~HandWorld() {
    cudaDeviceSynchronize();
    for (auto* regions : {&main_, &ll_}) {
      for (Region& r : *regions) cudaFree(r.base);
    }
    for (char* p : in_) cudaFree(p);
    for (char* p : out_) cudaFree(p);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
    cudaFreeHost(const_cast<int*>(error_));
  }

  // The zero-copy one-shot kernel reads every worker's input in place (all on this GPU), with the
  // one-shot workspace's barriers and epochs.
  vdev::internal::KernelArgs ZeroCopyArgs(int rank, size_t count) {
    vdev::internal::KernelArgs a = Args(AllReduceAlgorithm::kOneShot, rank, count);
    for (int j = 0; j < world_; ++j) a.data[j] = in_[j];
    return a;
  }
  bool ZeroCopyFits(size_t count, int sms) {
    const vdev::internal::KernelLaunch l = vdev::internal::PlanZeroCopyOneShot(type_, count);
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(l.kernel), l.threads, 0);
    return int64_t{world_} * l.blocks * 2 <= int64_t{per_sm} * sms;
  }
  absl::Status EnqueueZeroCopy(int rank, size_t count) {
    return Cuda(vdev::internal::LaunchZeroCopyOneShot(type_, ZeroCopyArgs(rank, count), streams_[rank], true));
  }

  vdev::internal::KernelArgs Args(AllReduceAlgorithm algorithm, int rank, size_t count) {
    const bool ll = algorithm == AllReduceAlgorithm::kOneShotLL;
    const std::vector<Region>& regions = ll ? ll_ : main_;
    vdev::internal::KernelArgs a;
    a.in = in_[rank];
    a.out = out_[rank];
    a.count = count;
    a.rank = rank;
    a.world = world_;
    for (int j = 0; j < world_; ++j) {
      a.data[j] = regions[j].base;
      a.flags_in[j] = reinterpret_cast<uint64_t*>(regions[j].base + regions[j].layout.barrier_in_offset);
      a.flags_out[j] = reinterpret_cast<uint64_t*>(regions[j].base + regions[j].layout.barrier_out_offset);
    }
    a.epochs = reinterpret_cast<uint64_t*>(regions[rank].base + regions[rank].layout.epochs_offset);
    a.half_bytes = vdev::internal::HalfBytes(regions[rank].size);
    a.timeout_ns = 8'000'000'000ull;
    a.error = error_device_;
    return a;
  }
  bool Fits(AllReduceAlgorithm algorithm, size_t count, int sms) {
    vdev::internal::KernelArgs a = Args(algorithm, 0, count);
    const vdev::internal::KernelLaunch l = vdev::internal::PlanAllReduce(algorithm, type_, a);
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(l.kernel), l.threads, 0);
    return int64_t{world_} * l.blocks * 2 <= int64_t{per_sm} * sms;
  }
  absl::Status Enqueue(AllReduceAlgorithm algorithm, int rank, size_t count) {
    return Cuda(vdev::internal::LaunchAllReduce(algorithm, type_, Args(algorithm, rank, count), streams_[rank], true));
  }
  cudaStream_t stream(int rank) const { return streams_[rank]; }
  int error() const { return *error_; }

 private:
  struct Region {
    char* base = nullptr;
    size_t size = 0;
    vdev::internal::RegionLayout layout;
  };
  void Allocate(size_t bytes, std::vector<Region>* regions) {
    for (int r = 0; r < world_; ++r) {
      Region region;
      region.size = bytes;
      region.layout = *vdev::internal::LayoutFor(bytes);
      Ok(Cuda(cudaMalloc(reinterpret_cast<void**>(&region.base), region.layout.total_bytes)), "cudaMalloc");
      Ok(Cuda(cudaMemset(region.base, 0, region.layout.total_bytes)), "cudaMemset");
      regions->push_back(region);
    }
  }
  int world_;
  DataType type_;
  std::vector<Region> main_, ll_;
  std::vector<char*> in_, out_;
  std::vector<cudaStream_t> streams_;
  volatile int* error_ = nullptr;
  int* error_device_ = nullptr;
};

// A variant: how worker r enqueues one call, and its stream.
struct Variant {
  std::string name;    // hand-1shot, plan-one_shot_push, ...
  std::string family;  // one-shot or one-shot-ll: what the ratio compares within
  int instances = 0;   // plans
  std::function<absl::Status(int)> enqueue;
  std::function<cudaStream_t(int)> stream;
  std::vector<cudaGraphExec_t> graphs;
  std::vector<double> us;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --trace: per rank, block 0's stamps of the last of `iters` calls, in cycles after its start.
void Trace(int iters) {
  namespace in = vdev::channels::internal;
  int khz = 0;
  Ok(Cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0)), "attr");
  std::printf("trace: cycles after the block's start (griddepcontrol.wait returned); SM clock %d MHz\n", khz / 1000);
  for (int world : {2, 8}) {
    for (const char* name : {"one_shot_ll", "one_shot_push", "one_shot"}) {
      for (size_t bytes : {size_t{4} << 10, size_t{64} << 10}) {
        for (int instances : {1, 4}) {
          auto plan = vdev::channels::ShippedPlan(name, world);
          Ok(plan.status(), name);
          auto made = PlanWorld::Create(*plan, bytes / 4);
          Ok(made.status(), name);
          PlanWorld& w = **made;
          std::vector<long long*> traces(world);
          const size_t trace_bytes = sizeof(long long) * in::kPlanTraceBuffer;
          std::vector<cudaGraphExec_t> graphs(world);
          for (int r = 0; r < world; ++r) {
            Ok(Cuda(cudaMalloc(reinterpret_cast<void**>(&traces[r]), trace_bytes)), "cudaMalloc");
            Ok(Cuda(cudaMemset(traces[r], 0, trace_bytes)), "cudaMemset");
            w.set_trace(r, traces[r]);
            cudaGraph_t g;
            Ok(Cuda(cudaStreamBeginCapture(w.stream(r), cudaStreamCaptureModeThreadLocal)), "capture");
            for (int i = 0; i < iters; ++i) Ok(w.Enqueue(r, bytes / 4, instances, true), name);
            Ok(Cuda(cudaStreamEndCapture(w.stream(r), &g)), "capture end");
            Ok(Cuda(cudaGraphInstantiate(&graphs[r], g, 0)), "instantiate");
            cudaGraphDestroy(g);
          }
          double us = 0;
          for (int rep = 0; rep < 4; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            for (int r = 0; r < world; ++r) Ok(Cuda(cudaGraphLaunch(graphs[r], w.stream(r))), "launch");
            Ok(w.Synchronize(), name);
            us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
          }
          // Every rank made 4 * iters calls: the last one's stamps are in half 0, the one before in half 1.
          for (int r = 0; r < world; ++r) {
            std::vector<long long> t(in::kPlanTraceBuffer);
            Ok(Cuda(cudaMemcpy(t.data(), traces[r], sizeof(long long) * t.size(), cudaMemcpyDeviceToHost)), "copy");
            const long long* last = t.data();
            const long long* before = t.data() + in::kMaxPlanBlocks * in::kPlanTraceSlots;
            std::string line =
                absl::StrCat("trace ", name, " world ", world, " ", bytes, " B ", instances, " inst (",
                             absl::SixDigits(us), " us/call) rank ", r, ": ns from the previous call's end ",
                             last[in::kTraceStartNs] - before[in::kTraceEndNs], ", in the kernel ",
                             last[in::kTraceEndNs] - last[in::kTraceStartNs], " | cycles: pdl-wait ",
                             last[in::kTraceStart] - last[in::kTraceEntry], " counted ",
                             last[in::kTraceCounted] - last[in::kTraceStart], " resolved ",
                             last[in::kTraceResolved] - last[in::kTraceStart]);
            const auto& ops = plan->ranks[r][0].ops;
            for (size_t i = 0; i < ops.size(); ++i) {
              const long long stamp = last[in::kTraceOps + i];
              if (stamp != 0) {
                absl::StrAppend(&line, " ", vdev::channels::OpName(ops[i].kind), "#", i, " ",
                                stamp - last[in::kTraceStart]);
              }
            }
            std::printf("%s\n", line.c_str());
            cudaFree(traces[r]);
          }
          for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 50, reps = 7;
  std::string csv_path;
  bool ports = false, trace = false, compiled = false;
  std::vector<int> worlds = {2, 4, 8};
  std::vector<std::string> plan_names = {"one_shot_push", "one_shot", "one_shot_ll"};
  DataType type = DataType::kF32;
  for (int i = 1; i < argc; ++i) {
    const bool valued = i + 1 < argc;
    if (!std::strcmp(argv[i], "--trace")) {
      trace = true;
    } else if (!std::strcmp(argv[i], "--ports")) {
      ports = true;
    } else if (!std::strcmp(argv[i], "--compiled")) {
      compiled = true;
    } else if (valued && !std::strcmp(argv[i], "--iters")) {
      iters = std::atoi(argv[++i]);
    } else if (valued && !std::strcmp(argv[i], "--reps")) {
      reps = std::atoi(argv[++i]);
    } else if (valued && !std::strcmp(argv[i], "--worlds")) {
      worlds.clear();
      for (absl::string_view w : absl::StrSplit(argv[++i], ',')) worlds.push_back(std::atoi(std::string(w).c_str()));
    } else if (valued && !std::strcmp(argv[i], "--plans")) {
      plan_names = absl::StrSplit(argv[++i], ',');
    } else if (valued && !std::strcmp(argv[i], "--csv")) {
      csv_path = argv[++i];
    } else if (valued && !std::strcmp(argv[i], "--dtype") &&
               (!std::strcmp(argv[i + 1], "f32") || !std::strcmp(argv[i + 1], "f16") ||
                !std::strcmp(argv[i + 1], "bf16"))) {
      const std::string name = argv[++i];
      type = name == "f32" ? DataType::kF32 : name == "f16" ? DataType::kF16 : DataType::kBF16;
    } else {
      std::fprintf(stderr,
                   "usage: channels_one_gpu_bench [--iters N] [--reps N] [--csv FILE] [--dtype f32|f16|bf16] "
                   "[--compiled] [--worlds 2,4,8] [--plans A,B] [--trace | --ports]\n");
      return 2;
    }
  }
  if (trace) {
    Trace(iters);
    return 0;
  }
  FILE* csv = csv_path.empty() ? nullptr : std::fopen(csv_path.c_str(), "w");
  if (csv) std::fprintf(csv, "world,bytes,variant,family,instances,us\n");
  int sms = 0;
  Ok(Cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0)), "attr");
  const size_t kMaxBytes = size_t{1} << 20;
  const size_t elem = vdev::DataTypeSize(type);
  const int dtype = type == DataType::kF32   ? vdev::channels::internal::kDevF32
                    : type == DataType::kF16 ? vdev::channels::internal::kDevF16
                                             : vdev::channels::internal::kDevBF16;
  const size_t sizes[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20};
  std::printf("# %s sums\n", std::string(vdev::DataTypeName(type)).c_str());
  std::printf("%-6s %-9s %-22s %-9s %10s\n", "world", "bytes", "variant", "instances", "us/call");
  for (int world : worlds) {
    HandWorld hand(world, kMaxBytes, type);
    std::map<std::string, std::unique_ptr<PlanWorld>> plans;
    const std::vector<std::string> names =
        ports ? std::vector<std::string>{"all_gather", "all_gather_port"} : plan_names;
    for (const std::string& name : names) {
      auto plan = vdev::channels::ShippedPlan(name, world);
      Ok(plan.status(), name);
      auto w = PlanWorld::Create(*plan, kMaxBytes / elem, absl::Seconds(10), dtype);
      Ok(w.status(), name);
      plans[name] = std::move(*w);
      if (compiled && plan->port_channels.empty()) {
        auto c = PlanWorld::Create(*plan, kMaxBytes / elem, absl::Seconds(10), dtype);
        Ok(c.status(), name);
        Ok((*c)->UseCompiledKernels(), name);
        plans[absl::StrCat("compiled:", name)] = std::move(*c);
      }
    }
    for (size_t bytes : sizes) {
      const size_t count = bytes / elem;
      std::vector<Variant> variants;
      for (auto [algorithm, label, family] :
           {std::tuple{AllReduceAlgorithm::kOneShot, "hand-1shot", "one-shot"},
            std::tuple{AllReduceAlgorithm::kOneShotLL, "hand-1shot-ll", "one-shot-ll"}}) {
        if (ports || !hand.Fits(algorithm, count, sms)) continue;
        Variant v{label, family, 0};
        v.enqueue = [&hand, algorithm, count](int r) { return hand.Enqueue(algorithm, r, count); };
        v.stream = [&hand](int r) { return hand.stream(r); };
        variants.push_back(std::move(v));
      }
      if (!ports && hand.ZeroCopyFits(count, sms)) {
        Variant v{"hand-1shot-zc", "one-shot-zc", 0};
        v.enqueue = [&hand, count](int r) { return hand.EnqueueZeroCopy(r, count); };
        v.stream = [&hand](int r) { return hand.stream(r); };
        variants.push_back(std::move(v));
      }
      for (auto& [key, w] : plans) {
        const std::string name = w->plan().name;
        const std::vector<int> sweep =
            ports ? std::vector<int>{1, 2, 4} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128};
        Ok(w->Prepare(count, sweep), key);  // compiled plans: every kernel of this size, on every core
        for (int instances : sweep) {
          auto fits = w->Fits(instances, true, count);
          if (!fits.ok() || !*fits) continue;
          const std::string family = name == "one_shot_ll" ? "one-shot-ll"
                                     : name == "one_shot"  ? "one-shot-zc"
                                     : ports               ? "all-gather"
                                                           : "one-shot";
          Variant v{absl::StrCat(w->compiled() ? "compiled-" : "plan-", name), family, instances};
          PlanWorld* pw = w.get();
          v.enqueue = [pw, count, instances](int r) { return pw->Enqueue(r, count, instances, true); };
          v.stream = [pw](int r) { return pw->stream(r); };
          variants.push_back(std::move(v));
        }
      }
      // One graph of `iters` calls per worker and variant.
      for (Variant& v : variants) {
        for (int r = 0; r < world; ++r) {
          cudaGraph_t g;
          Ok(Cuda(cudaStreamBeginCapture(v.stream(r), cudaStreamCaptureModeThreadLocal)), "capture");
          for (int i = 0; i < iters; ++i) Ok(v.enqueue(r), v.name);
          Ok(Cuda(cudaStreamEndCapture(v.stream(r), &g)), "capture end");
          Ok(Cuda(cudaGraphInstantiate(&v.graphs.emplace_back(), g, 0)), "instantiate");
          cudaGraphDestroy(g);
        }
      }
      auto batch = [&](Variant& v) {
        for (int r = 0; r < world; ++r) Ok(Cuda(cudaGraphLaunch(v.graphs[r], v.stream(r))), "launch");
        for (int r = 0; r < world; ++r) Ok(Cuda(cudaStreamSynchronize(v.stream(r))), v.name);
      };
      for (int rep = 0; rep < reps; ++rep) {
        for (Variant& v : variants) {
          batch(v);  // warm-up
          const auto t0 = std::chrono::steady_clock::now();
          batch(v);
          const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          v.us.push_back(us / iters);
        }
      }
      for (auto& [name, w] : plans) Ok(w->Synchronize(), name);
      if (hand.error() != 0) Ok(absl::InternalError("a hand-written kernel timed out"), "hand");
      std::map<std::string, double> best;  // family and side -> best median
      std::map<std::string, int> best_instances;
      for (Variant& v : variants) {
        const double m = Median(v.us);
        std::printf("%-6d %-9zu %-22s %-9d %10.2f\n", world, bytes, v.name.c_str(), v.instances, m);
        if (csv)
          std::fprintf(csv, "%d,%zu,%s,%s,%d,%.3f\n", world, bytes, v.name.c_str(), v.family.c_str(), v.instances, m);
        if (!best.count(v.name) || m < best[v.name]) {
          best[v.name] = m;
          best_instances[v.name] = v.instances;
        }
        for (cudaGraphExec_t g : v.graphs) cudaGraphExecDestroy(g);
      }
      for (auto [plan, ref] :
           {std::pair{"plan-one_shot_push", "hand-1shot"}, std::pair{"plan-one_shot", "hand-1shot-zc"},
            std::pair{"plan-one_shot_ll", "hand-1shot-ll"}, std::pair{"compiled-one_shot_push", "hand-1shot"},
            std::pair{"compiled-one_shot", "hand-1shot-zc"}, std::pair{"compiled-one_shot_ll", "hand-1shot-ll"},
            std::pair{"plan-all_gather_port", "plan-all_gather"}}) {
        if (!best.count(plan) || !best.count(ref)) continue;
        std::printf("ratio  world %d %8zu B  %-18s / %-13s = %.3f  (%.2f vs %.2f us, %d instances)\n", world, bytes,
                    plan, ref, best[plan] / best[ref], best[plan], best[ref], best_instances[plan]);
      }
      std::fflush(stdout);
    }
  }
  if (csv) std::fclose(csv);
  return 0;
}
