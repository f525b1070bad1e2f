// PortChannel put bandwidth between two GPUs against the copy engine driven directly, run under
// `vdev launch -n 2 -- port_put_bench [--reps 11] [--iters 20] [--instances 1] [--copy-blocks 64]
// [--ack memory|port] [--put port|memory]`, one worker per GPU. --instances replicates the plan's
// thread blocks (each copy puts its part of the bytes as a request of its own; 0: the executor's
// pick by size); --copy-blocks sets the thread blocks of rank 0's local copy; --ack the channel of
// rank 1's "output free" signal; --put memory makes the put a memory channel's (SM stores by one
// thread block an instance, no proxy: the same plan's cost without the proxy, at small sizes) (PutPlan).
//
// port-put: a channel plan run by CudaPlanExecutor whose only transfer is one port put of rank 0's
// input straight into rank 1's output (the proxy's cudaMemcpyAsync, then its signal; PutPlan).
// memcpy-peer: rank 0's cudaMemcpyAsync of the same bytes from the same source into a buffer of
// rank 1 mapped over CUDA IPC (what cudaMemcpyPeerAsync does between two processes), on the same
// stream. beside-local: the same copy while a second stream copies the bytes into rank 0's own
// output (cudaMemcpyAsync on the device), as the plan's root does beside its put: what the root's
// memory traffic costs the copy engine. For each size all run interleaved: each repeat lines the
// workers up (a session barrier and a warm-up op), then times `iters` back-to-back ops between two
// events on rank 0's stream; the median over repeats is reported with GB/s (10^9 bytes a second)
// and the ratios of the times to memcpy-peer's. Before the timings, rank 1's destination is zeroed,
// one op runs, and rank 1 checks every received byte against rank 0's pattern (exit 1 on a
// difference).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_exit.h"
#include "vdev/channels/channel_program.h"
#include "vdev/channels/cuda_channel_executor.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/runtime/peer_group.h"

namespace vdev::bench {
namespace {

// A broadcast from rank 0 whose only transfer is a port put straight into rank 1's output. Rank 1
// first signals that its output is free (its caller has read the previous result), rank 0 waits for
// that and puts with signal and flush (its caller may rewrite the input once the execution ends),
// rank 1 waits for the data. The "free" signal goes over a memory channel (an SM's store into rank
// 0's semaphore) unless `ack_over_port` (then rank 1's proxy copies it there); with
// `put_over_memory` the put and its signal are a memory channel's. Rank 0's own output is a local
// copy by `copy_blocks` more thread blocks, on the SMs while the put runs.
absl::StatusOr<channels::ProgramSpec> PutPlan(int copy_blocks, bool ack_over_port, bool put_over_memory) {
  channels::Program p(put_over_memory ? "memory_put" : "port_put", channels::Collective::kBroadcast,
                      /*world_size=*/2);
  // A channel's ops are its source rank's; a wait meets the reverse channel's signals.
  channels::PortChannel to_peer = p.AddPortChannel(/*dst=*/1, /*src=*/0);
  channels::PortChannel to_root = p.AddPortChannel(/*dst=*/0, /*src=*/1);
  channels::MemoryChannel memory_to_peer = p.AddMemoryChannel(/*dst=*/1, /*src=*/0);
  channels::MemoryChannel memory_to_root = p.AddMemoryChannel(/*dst=*/0, /*src=*/1);
  if (ack_over_port) {
    to_root.Signal(0);
    to_peer.Wait(0);
  } else {
    memory_to_root.Signal(0);
    memory_to_peer.Wait(0);
  }
  if (put_over_memory) {
    memory_to_root.Wait(0);
    memory_to_peer.Put(0, p.Output(1, 0), p.Input(0, 0));
    memory_to_peer.Signal(0);
  } else {
    to_root.Wait(0);
    to_peer.PutWithSignalAndFlush(0, p.Output(1, 0), p.Input(0, 0));
  }
  p.Copy(channels::Tb(1, copy_blocks), p.Output(0, 0), p.Input(0, 0));
  return std::move(p).Build();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per op of `iters` back-to-back ops timed on `stream`, after a session barrier and
// one warm-up op. Every worker calls it; `op` enqueues one op.
double TimeBatch(PeerGroup& session, cudaStream_t stream, int iters, const std::function<void()>& op) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  Ok(session.Barrier("port-put-batch"), "barrier");
  op();
  CUDA_OK(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) op();
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_OK(cudaEventDestroy(start));
  CUDA_OK(cudaEventDestroy(stop));
  return 1000.0 * ms / iters;
}

// Rank 0's source pattern: word i is a hash of i, so a misplaced or stale word shows.
std::vector<uint32_t> Pattern(size_t words) {
  std::vector<uint32_t> v(words);
  for (size_t i = 0; i < words; ++i) v[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0x5bd1e995u;
  return v;
}

// Zeroes rank 1's `dst`, runs `op` once on every worker and makes rank 1 compare `dst`'s first
// `bytes` with the pattern. Exits 1 on a difference, naming the first differing word.
void CheckReceived(PeerGroup& session, cudaStream_t stream, void* dst, size_t bytes, const std::function<void()>& op,
                   const char* name) {
  const bool receiver = session.rank() == 1;
  if (receiver) CUDA_OK(cudaMemset(dst, 0, bytes));
  CUDA_OK(cudaDeviceSynchronize());
  Ok(session.Barrier("port-put-check"), "barrier");
  op();
  CUDA_OK(cudaStreamSynchronize(stream));
  Ok(session.Barrier("port-put-checked"), "barrier");
  if (!receiver) return;
  std::vector<uint32_t> got(bytes / 4);
  CUDA_OK(cudaMemcpy(got.data(), dst, bytes, cudaMemcpyDeviceToHost));
  const std::vector<uint32_t> want = Pattern(bytes / 4);
  const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
  if (diff.first != got.end()) {
    std::fprintf(stderr, "%s, %zu bytes: word %td received 0x%08x, expected 0x%08x\n", name, bytes,
                 diff.first - got.begin(), *diff.first, *diff.second);
    std::exit(1);
  }
}

struct Options {
  int reps = 11;
  int iters = 20;
  int instances = 1;
  int copy_blocks = 64;
  bool ack_over_port = false;
  bool put_over_memory = false;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      o.reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      o.iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--copy-blocks") && i + 1 < argc) {
      o.copy_blocks = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--instances") && i + 1 < argc) {
      o.instances = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--ack") && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "memory") || !std::strcmp(argv[i + 1], "port"))) {
      o.ack_over_port = !std::strcmp(argv[++i], "port");
    } else if (!std::strcmp(argv[i], "--put") && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "memory") || !std::strcmp(argv[i + 1], "port"))) {
      o.put_over_memory = !std::strcmp(argv[++i], "memory");
    } else {
      std::fprintf(stderr,
                   "usage: vdev launch -n 2 -- port_put_bench [--reps N] [--iters N] [--instances N] [--copy-blocks N] "
                   "[--ack memory|port] [--put port|memory]\n");
      std::exit(2);
    }
  }
  if (o.reps < 1 || o.iters < 1 || o.instances < 0 || o.copy_blocks < 1) {
    std::fprintf(stderr,
                 "port_put_bench: --reps and --iters --copy-blocks must be at least 1, --instances at least 0\n");
    std::exit(2);
  }
  return o;
}

// What every size's measurement uses: the session, rank 0's stream and a second one, the port plan's
// executor and the memcpy destination in rank 1's memory.
struct Setup {
  PeerGroup& session;
  channels::CudaPlanExecutor& port;
  void* remote;  // rank 1's memcpy destination, as rank 0 maps it
  void* local;   // rank 1's memcpy destination in its own address space
  cudaStream_t stream, side;
  cudaEvent_t fork, join;
};

// Checks both transfers of `bytes` and prints their medians (rank 0).
void MeasureSize(const Setup& u, const Options& options, size_t bytes) {
  const bool sender = u.session.rank() == 0;
  channels::CudaPlanExecutor& port = u.port;
  auto port_put = [&] { Ok(port.Execute(port.input(), port.output(), bytes / 4, u.stream), "execute"); };
  auto memcpy_peer = [&] {
    if (sender) CUDA_OK(cudaMemcpyAsync(u.remote, port.input(), bytes, cudaMemcpyDeviceToDevice, u.stream));
  };
  auto beside_local = [&] {
    if (!sender) return;
    CUDA_OK(cudaEventRecord(u.fork, u.stream));
    CUDA_OK(cudaStreamWaitEvent(u.side, u.fork));
    CUDA_OK(cudaMemcpyAsync(port.output(), port.input(), bytes, cudaMemcpyDeviceToDevice, u.side));
    CUDA_OK(cudaMemcpyAsync(u.remote, port.input(), bytes, cudaMemcpyDeviceToDevice, u.stream));
    CUDA_OK(cudaEventRecord(u.join, u.side));
    CUDA_OK(cudaStreamWaitEvent(u.stream, u.join));
  };
  CheckReceived(u.session, u.stream, port.output(), bytes, port_put, "port-put");
  Ok(port.CheckErrors(), "port-put");
  CheckReceived(u.session, u.stream, u.local, bytes, memcpy_peer, "memcpy-peer");
  std::vector<double> port_us, copy_us, beside_us;
  for (int r = 0; r < options.reps; ++r) {  // interleaved, one batch of each a repeat
    port_us.push_back(TimeBatch(u.session, u.stream, options.iters, port_put));
    copy_us.push_back(TimeBatch(u.session, u.stream, options.iters, memcpy_peer));
    beside_us.push_back(TimeBatch(u.session, u.stream, options.iters, beside_local));
  }
  Ok(port.CheckErrors(), "port-put");
  const double p = Median(port_us), c = Median(copy_us), b = Median(beside_us);
  if (sender) {
    std::printf("%10zu %12.1f %8.1f %12.1f %8.1f %8.3f %14.1f %8.3f\n", bytes, p, bytes / p / 1e3, c, bytes / c / 1e3,
                p / c, b, b / c);
  }
}

int Main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  absl::StatusOr<std::unique_ptr<PeerGroup>> session_or = PeerGroup::FromEnvironment();
  Ok(session_or.status(), "session");
  PeerGroup& session = **session_or;
  if (session.world_size() != 2) {
    std::fprintf(stderr, "port_put_bench: run it on 2 workers (vdev launch -n 2), not %d\n", session.world_size());
    return 2;
  }
  absl::StatusOr<channels::ProgramSpec> plan =
      PutPlan(options.copy_blocks, options.ack_over_port, options.put_over_memory);
  Ok(plan.status(), "port_put plan");
  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  const int device = session.local_rank() % devices;
  CUDA_OK(cudaSetDevice(device));
  const std::vector<size_t> sizes = {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20,
                                     size_t{4} << 20, size_t{16} << 20, size_t{64} << 20};
  const size_t max_bytes = sizes.back();
  absl::StatusOr<std::unique_ptr<IPCAllocator>> ipc = CreateCudaIPCAllocator(&session, device);
  Ok(ipc.status(), "IPC allocator");
  absl::StatusOr<IPCMemory*> peer_dst = (*ipc)->Allocate(max_bytes);
  Ok(peer_dst.status(), "memcpy-peer destination");
  // The proxy's stream is created right after this one, so the two take different work queues.
  cudaStream_t stream, side;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  absl::StatusOr<std::unique_ptr<channels::CudaPlanExecutor>> exec =
      channels::CudaPlanExecutor::Create(session, **ipc, *plan, max_bytes / 4, DataType::kF32, options.instances);
  Ok(exec.status(), "executor");
  CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  Setup u{session, **exec, (*peer_dst)->remote_data[1], (*peer_dst)->remote_data[session.rank()], stream, side};
  CUDA_OK(cudaEventCreateWithFlags(&u.fork, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreateWithFlags(&u.join, cudaEventDisableTiming));
  if (session.rank() == 0) {
    const std::vector<uint32_t> pattern = Pattern(max_bytes / 4);
    CUDA_OK(cudaMemcpy(u.port.input(), pattern.data(), max_bytes, cudaMemcpyHostToDevice));
    std::printf("%10s %12s %8s %12s %8s %8s %14s %8s\n", "bytes", "port-put us", "GB/s", "memcpy us", "GB/s", "ratio",
                "beside-local us", "ratio");
  }
  for (size_t bytes : sizes) MeasureSize(u, options, bytes);
  std::fflush(stdout);
  Ok(session.Barrier("port-put-done"), "barrier");
  return 0;
}

}  // namespace
}  // namespace vdev::bench

int main(int argc, char** argv) { return vdev::bench::Main(argc, argv); }
