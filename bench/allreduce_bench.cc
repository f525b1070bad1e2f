// All-reduce benchmark in the style of nccl-tests, run under `vdev launch -n N -- allreduce_bench`.
//
// Every worker uses the same processes and buffers for every variant: vdev one-shot (flagged, LL,
// LL128, sentinel), two-shot (flagged, LL) and auto, vdev-auto-nopdl (auto launched without programmatic
// dependent launch, from a second communicator), vdev-inplace (the zero-copy one-shot on an input in IPC
// memory) and vdev-inplace-noexit (the same without its exit barrier), vdev-fused-norm (the all-reduce
// fused with a residual add and rms_norm over rows of 4096, where it applies), plain ncclAllReduce, and
// ncclAllReduce on NCCL symmetric windows (ncclMemAlloc + ncclCommWindowRegister), and shipped
// channel plans run by CudaPlanExecutor with input and output in its region (plan-one_shot_ll,
// plan-one_shot, plan-one_shot_push, plan-two_shot: up to --max-plan-bytes, default 4 MB; instances
// by size as the executor picks them; --plan-kernel generic|compiled|auto picks their kernel, generic by
// default). Variants are interleaved within each size. For each size and variant:
// a correctness check (integer-valued bf16 inputs, exact expected sums, inputs intact), then CUDA-
// graph and eager timings: each repeat runs a warm-up batch (which also lines the GPUs up), then a
// timed batch of `iters` back-to-back ops between two events; per-op time = elapsed / iters; the
// median over repeats, then the maximum over workers, is reported with algbw and busbw
// (busbw = algbw * 2(N-1)/N).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "allreduce_bench_kernels.h"
#include "bench_exit.h"
#include "vdev/channels/cuda_channel_executor.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::bench {
namespace {

struct Variant {
  std::string name;
  void* in;
  void* out;
  std::function<absl::Status(size_t count, cudaStream_t)> run;
};

struct Size {
  size_t bytes;
  std::string label;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The maximum of a per-worker value over all workers.
double MaxOverWorkers(PeerGroup& s, double mine) {
  std::vector<std::string> all;
  Ok(s.AllGather("bench-max", std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)), &all), "gather");
  double m = 0;
  for (const std::string& a : all) {
    double v;
    std::memcpy(&v, a.data(), sizeof(v));
    m = std::max(m, v);
  }
  return m;
}

int Main(int argc, char** argv) {
  size_t max_bytes = size_t{1} << 30, min_bytes = 1024, max_plan_bytes = size_t{4} << 20;
  int reps = 15, iters_override = 0;
  bool llm = true, eager = true, only_vdev = false;
  std::string csv_path, only, plan_kernel = "generic";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--max-bytes") max_bytes = std::strtoull(next().c_str(), nullptr, 0);
    if (a == "--min-bytes") min_bytes = std::strtoull(next().c_str(), nullptr, 0);
    if (a == "--reps") reps = std::atoi(next().c_str());
    if (a == "--iters") iters_override = std::atoi(next().c_str());  // ops per batch (default: by size)
    if (a == "--csv") csv_path = next();
    if (a == "--max-plan-bytes") max_plan_bytes = std::strtoull(next().c_str(), nullptr, 0);
    if (a == "--no-llm") llm = false;
    if (a == "--no-eager") eager = false;
    if (a == "--only-vdev") only_vdev = true;          // for compute-sanitizer runs
    if (a == "--variants") only = "," + next() + ",";  // e.g. vdev-auto,nccl
    if (a == "--plan-kernel") plan_kernel = next();    // generic, compiled or auto (the plan-* variants)
  }
  const absl::StatusOr<channels::PlanKernel> plan_kernel_or = channels::PlanKernelFromName(plan_kernel);
  Ok(plan_kernel_or.status(), "--plan-kernel");
  absl::StatusOr<std::unique_ptr<PeerGroup>> session_or = PeerGroup::FromEnvironment();
  Ok(session_or.status(), "session");
  PeerGroup& session = **session_or;
  const int world = session.world_size(), rank = session.rank();
  CudaCommunicatorOptions options;
  options.max_bytes = max_bytes;
  options.max_one_shot_bytes = std::min(max_bytes, size_t{32} << 20);
  absl::StatusOr<std::unique_ptr<CudaCommunicator>> comm_or = CudaCommunicator::Create(&session, options);
  Ok(comm_or.status(), "communicator");
  CudaCommunicator& comm = **comm_or;
  if (!comm.ipc_available()) std::fprintf(stderr, "worker %d: no P2P/IPC: vdev variants run NCCL\n", rank);
  if (comm.ipc_available() && !comm.ll128_available() && rank == 0) {
    std::fprintf(stderr, "no NVLink between every pair: vdev-1shot-ll128 runs one-shot-ll\n");
  }
  auto selected = [&](const std::string& name) {
    return only.empty() || only.find("," + name + ",") != std::string::npos;
  };
  // vdev-auto-nopdl's communicator (its own NCCL comm and workspace), only when that variant runs.
  std::unique_ptr<CudaCommunicator> comm_nopdl;
  if (selected("vdev-auto-nopdl")) {
    CudaCommunicatorOptions plain_launch = options;
    plain_launch.programmatic_launch = false;
    absl::StatusOr<std::unique_ptr<CudaCommunicator>> comm_or = CudaCommunicator::Create(&session, plain_launch);
    Ok(comm_or.status(), "communicator without programmatic launch");
    comm_nopdl = std::move(*comm_or);
  }

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *in, *out, *sin = nullptr, *sout = nullptr;
  CUDA_OK(cudaMalloc(&in, max_bytes));
  CUDA_OK(cudaMalloc(&out, max_bytes));
  ncclWindow_t win_in, win_out;
  bool symm = !only_vdev && ncclMemAlloc(&sin, max_bytes) == ncclSuccess &&
              ncclMemAlloc(&sout, max_bytes) == ncclSuccess &&
              ncclCommWindowRegister(comm.nccl(), sin, max_bytes, &win_in, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess &&
              ncclCommWindowRegister(comm.nccl(), sout, max_bytes, &win_out, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess;
  if (!symm && !only_vdev && rank == 0) std::fprintf(stderr, "NCCL symmetric windows unavailable: nccl-symm skipped\n");
  // vdev-inplace: the input lies in IPC memory (as the planner places all-reduce inputs), so the
  // bench's "producer" (Fill) writes it there and the zero-copy kernel reads the peers' inputs.
  std::unique_ptr<IPCAllocator> ipc_allocator;
  IPCMemory* ipc_in = nullptr;
  if (comm.ipc_available()) {
    absl::StatusOr<std::unique_ptr<IPCAllocator>> alloc_or = CreateCudaIPCAllocator(&session, comm.device());
    Ok(alloc_or.status(), "IPC allocator");
    ipc_allocator = std::move(*alloc_or);
    absl::StatusOr<IPCMemory*> mem_or = ipc_allocator->Allocate(max_bytes);
    Ok(mem_or.status(), "IPC input");
    ipc_in = *mem_or;
  }
  unsigned long long* counters;
  CUDA_OK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));

  auto variant_on = [&](CudaCommunicator& use, const char* name, AllReduceAlgorithm algo) {
    return Variant{name, in, out, [&use, algo, &in, &out](size_t n, cudaStream_t s) {
                     return use.AllReduce(in, out, n, DataType::kBF16, algo, s);
                   }};
  };
  auto vdev_variant = [&](const char* name, AllReduceAlgorithm algo) { return variant_on(comm, name, algo); };
  std::vector<Variant> all_variants = {vdev_variant("vdev-1shot-ll", AllReduceAlgorithm::kOneShotLL),
                                       vdev_variant("vdev-1shot-ll128", AllReduceAlgorithm::kOneShotLL128),
                                       vdev_variant("vdev-1shot-sentinel", AllReduceAlgorithm::kOneShotSentinel),
                                       vdev_variant("vdev-2shot-ll", AllReduceAlgorithm::kTwoShotLL),
                                       vdev_variant("vdev-1shot", AllReduceAlgorithm::kOneShot),
                                       vdev_variant("vdev-2shot", AllReduceAlgorithm::kTwoShot),
                                       vdev_variant("vdev-auto", AllReduceAlgorithm::kAuto),
                                       Variant{"nccl", in, out, [&](size_t n, cudaStream_t s) {
                                                 return ncclAllReduce(in, out, n, ncclBfloat16, ncclSum, comm.nccl(),
                                                                      s) == ncclSuccess
                                                            ? absl::OkStatus()
                                                            : absl::InternalError("ncclAllReduce");
                                               }}};
  if (comm_nopdl != nullptr) {
    all_variants.insert(all_variants.begin() + 7,
                        variant_on(*comm_nopdl, "vdev-auto-nopdl", AllReduceAlgorithm::kAuto));
  }
  if (only_vdev) all_variants.pop_back();
  if (ipc_in != nullptr) {
    const IPCBuffer buffer{ipc_in, 0};
    all_variants.insert(all_variants.end() - (only_vdev ? 0 : 1),
                        Variant{"vdev-inplace", buffer.Local(), out, [&comm, buffer, &out](size_t n, cudaStream_t s) {
                                  return comm.AllReduceZeroCopy(buffer, out, n, DataType::kBF16, s,
                                                                ZeroCopyRead::kInPlace);
                                }});
    // Without the exit barrier: valid here, since no worker rewrites its input before every worker has
    // synchronised (the check and the timing end with a collective on the host).
    all_variants.insert(
        all_variants.end() - (only_vdev ? 0 : 1),
        Variant{"vdev-inplace-noexit", buffer.Local(), out, [&comm, buffer, &out](size_t n, cudaStream_t s) {
                  return comm.AllReduceZeroCopy(buffer, out, n, DataType::kBF16, s,
                                                ZeroCopyRead::kInPlaceNoExitBarrier);
                }});
  }
  // vdev-fused-norm: the fused all-reduce + residual add + rms_norm over rows of kFusedHidden, its
  // residual zero and gamma one, so h (in `out`) is the plain sum the check expects and the time is
  // the all-reduce's plus its epilogue's.
  constexpr size_t kFusedHidden = 4096;
  void *zeros = nullptr, *ones = nullptr, *normed = nullptr;
  CUDA_OK(cudaMalloc(&zeros, max_bytes));
  CUDA_OK(cudaMalloc(&normed, max_bytes));
  CUDA_OK(cudaMemset(zeros, 0, max_bytes));
  CUDA_OK(cudaMalloc(&ones, kFusedHidden * 2));
  const std::vector<uint16_t> bf16_ones(kFusedHidden, 0x3f80);
  CUDA_OK(cudaMemcpy(ones, bf16_ones.data(), kFusedHidden * 2, cudaMemcpyHostToDevice));
  auto fused_buffers = [&](size_t n) {
    return AddRmsNormBuffers{.in = in,
                             .residual = zeros,
                             .gamma = ones,
                             .sum = out,
                             .normed = normed,
                             .rows = n / kFusedHidden,
                             .hidden = kFusedHidden};
  };
  auto fusable = [&](size_t n) {
    return n % kFusedHidden == 0 && comm.FusesAddRmsNorm(fused_buffers(n), DataType::kBF16);
  };
  all_variants.insert(all_variants.end() - (only_vdev ? 0 : 1),
                      Variant{"vdev-fused-norm", in, out, [&](size_t n, cudaStream_t s) {
                                return comm.AllReduceAddRmsNorm(fused_buffers(n), DataType::kBF16, s);
                              }});
  // Each plan its own executor and region (input, output, scratch for max_plan_bytes); its input()
  // is where the bench's producer writes, its output() where the check reads.
  std::vector<std::unique_ptr<channels::CudaPlanExecutor>> plans;
  const size_t plan_bytes = ipc_allocator != nullptr ? std::min(max_bytes, max_plan_bytes) : 0;
  for (const char* name : {"one_shot_ll", "one_shot", "one_shot_push", "two_shot"}) {
    const std::string variant = absl::StrCat("plan-", name);
    if (plan_bytes == 0 || !selected(variant)) continue;
    absl::StatusOr<std::unique_ptr<channels::CudaPlanExecutor>> exec = channels::CudaPlanExecutor::ForStrategy(
        session, *ipc_allocator, absl::StrCat("plan:", name), plan_bytes / 2, DataType::kBF16, *plan_kernel_or);
    Ok(exec.status(), variant.c_str());
    channels::CudaPlanExecutor* e = exec->get();
    plans.push_back(std::move(*exec));
    all_variants.insert(all_variants.end() - (only_vdev ? 0 : 1),
                        Variant{variant, e->input(), e->output(),
                                [e](size_t n, cudaStream_t s) { return e->Execute(e->input(), e->output(), n, s); }});
  }
  if (symm) {
    all_variants.push_back(Variant{"nccl-symm", sin, sout, [&](size_t n, cudaStream_t s) {
                                     return ncclAllReduce(sin, sout, n, ncclBfloat16, ncclSum, comm.nccl(), s) ==
                                                    ncclSuccess
                                                ? absl::OkStatus()
                                                : absl::InternalError("ncclAllReduce symm");
                                   }});
  }

  std::vector<Size> sizes;
  for (size_t b = min_bytes; b <= max_bytes; b *= 2) sizes.push_back({b, ""});
  if (llm) {
    for (size_t hidden : {4096, 8192}) {
      for (size_t tokens : {1, 7, 128, 1000, 4096, 8192}) {
        size_t b = tokens * hidden * 2;
        if (b <= max_bytes) sizes.push_back({b, absl::StrCat("llm:", tokens, "x", hidden)});
      }
    }
  }

  FILE* csv = nullptr;
  if (rank == 0 && !csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    std::fprintf(csv, "world,mode,bytes,label,variant,us,algbw_GBps,busbw_GBps,check,auto_choice\n");
  }
  if (rank == 0) {
    std::printf("# vdev all-reduce bench: %d workers, bf16 sum, reps %d (median), max over workers, us/op\n", world,
                reps);
  }
  int salt = 0;
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (const Size& size : sizes) {
    const size_t count = size.bytes / 2;
    std::vector<Variant*> variants;
    for (Variant& v : all_variants) {
      if (!selected(v.name)) continue;
      if (v.name == "vdev-1shot" && size.bytes > options.max_one_shot_bytes) continue;
      if (absl::EndsWith(v.name, "-ll") && size.bytes > options.max_ll_bytes) continue;
      if (absl::EndsWith(v.name, "-ll128") && size.bytes > options.max_ll128_bytes) continue;
      if (absl::EndsWith(v.name, "-sentinel") && size.bytes > options.max_sentinel_bytes) continue;
      if (absl::StartsWith(v.name, "plan-") && size.bytes > plan_bytes) continue;
      if (v.name == "vdev-fused-norm" && !fusable(count)) continue;
      variants.push_back(&v);
    }
    const int iters = iters_override > 0          ? iters_override
                      : size.bytes <= (1 << 20)   ? 50
                      : size.bytes <= (16 << 20)  ? 20
                      : size.bytes <= (128 << 20) ? 5
                                                  : 2;
    std::map<std::string, std::string> check;
    for (Variant* v : variants) {
      ++salt;
      Fill(v->in, count, rank, salt, stream);
      CUDA_OK(cudaMemsetAsync(v->out, 0xff, size.bytes, stream));
      CUDA_OK(cudaMemsetAsync(counters, 0, 2 * sizeof(unsigned long long), stream));
      Ok(v->run(count, stream), v->name.c_str());
      Check(v->in, v->out, count, rank, world, salt, counters, stream);
      unsigned long long bad[2];
      CUDA_OK(cudaMemcpyAsync(bad, counters, sizeof(bad), cudaMemcpyDeviceToHost, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      const double worst = MaxOverWorkers(session, static_cast<double>(bad[0] + bad[1]));
      check[v->name] = worst == 0 ? "ok" : absl::StrCat("BAD:", static_cast<long long>(worst));
    }
    for (int graph = 1; graph >= (eager ? 0 : 1); --graph) {
      std::map<std::string, cudaGraphExec_t> execs;
      if (graph) {
        for (Variant* v : variants) {
          cudaGraph_t g;
          CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
          for (int i = 0; i < iters; ++i) Ok(v->run(count, stream), v->name.c_str());
          CUDA_OK(cudaStreamEndCapture(stream, &g));
          CUDA_OK(cudaGraphInstantiate(&execs[v->name], g, 0));
          CUDA_OK(cudaGraphDestroy(g));
        }
      }
      std::map<std::string, std::vector<double>> times;
      auto batch = [&](Variant* v) {
        if (graph) {
          CUDA_OK(cudaGraphLaunch(execs[v->name], stream));
        } else {
          for (int i = 0; i < iters; ++i) Ok(v->run(count, stream), v->name.c_str());
        }
      };
      for (int rep = 0; rep < reps; ++rep) {
        for (Variant* v : variants) {
          batch(v);  // warm-up; leaves the GPUs in step for the timed batch
          CUDA_OK(cudaEventRecord(e0, stream));
          batch(v);
          CUDA_OK(cudaEventRecord(e1, stream));
          CUDA_OK(cudaEventSynchronize(e1));
          float ms = 0;
          CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
          times[v->name].push_back(ms * 1000.0 / iters);
        }
      }
      Ok(comm.CheckErrors(), "kernel wait");
      for (auto& plan : plans) Ok(plan->CheckErrors(), "plan wait");
      for (auto& [name, exec] : execs) cudaGraphExecDestroy(exec);
      const std::string auto_choice(AlgorithmName(comm.Choose(size.bytes)));
      std::string line = absl::StrFormat("%-6s %12zu %-14s", graph ? "graph" : "eager", size.bytes, size.label);
      for (Variant* v : variants) {
        const double us = MaxOverWorkers(session, Median(times[v->name]));
        const double algbw = size.bytes / us / 1e3;
        const double busbw = algbw * 2.0 * (world - 1) / world;
        absl::StrAppendFormat(&line, " %s=%.2f(%s)", v->name, us, check[v->name]);
        if (csv) {
          std::fprintf(csv, "%d,%s,%zu,%s,%s,%.3f,%.2f,%.2f,%s,%s\n", world, graph ? "graph" : "eager", size.bytes,
                       size.label.c_str(), v->name.c_str(), us, algbw, busbw, check[v->name].c_str(),
                       auto_choice.c_str());
        }
      }
      if (rank == 0) {
        std::printf("%s auto->%s\n", line.c_str(), auto_choice.c_str());
        std::fflush(stdout);
      }
    }
  }
  if (csv) std::fclose(csv);
  CUDA_OK(cudaStreamSynchronize(stream));
  if (symm) {
    ncclCommWindowDeregister(comm.nccl(), win_in);
    ncclCommWindowDeregister(comm.nccl(), win_out);
    ncclMemFree(sin);
    ncclMemFree(sout);
  }
  // Peers may still read this worker's IPC input: free it only once every worker is done.
  Ok(session.Barrier("bench-done"), "barrier");
  plans.clear();
  ipc_allocator.reset();
  for (void* p : {in, out, zeros, ones, normed}) cudaFree(p);
  return 0;
}

}  // namespace
}  // namespace vdev::bench

int main(int argc, char** argv) { return vdev::bench::Main(argc, argv); }
