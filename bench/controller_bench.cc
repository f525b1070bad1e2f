// Controller sessions (vdev/controller/controller.h) against their floors, in one run:
//   BM_RoundTrip/<backend>/<n>: an empty CallPacked on all n workers, then SyncAllWorkers
//     (backend 0: threaded, 1: process);
//   BM_BarePipe/<n>: the same round trip through bare pipes to n forked processes that echo one
//     byte (what the process back end cannot beat);
//   BM_CopyToWorker0/<backend>/<bytes>: CopyToWorker0 then SyncWorker(0);
//   BM_Memcpy/<bytes>: memcpy of the same bytes.
// The binary re-runs itself as the process back end's workers, so main calls MaybeRunWorker first.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "vdev/controller/controller.h"
#include "vdev/controller/worker_function.h"

namespace vdev {
namespace {

VDEV_REGISTER_WORKER_FUNCTION("bench.nothing", [](WorkerContext&, const WorkerArgs&) -> absl::StatusOr<WorkerValue> {
  return WorkerValue();
});

std::unique_ptr<ControllerSession> MakeSession(benchmark::State& state, int backend, int n) {
  auto session = backend == 0 ? ControllerSession::Threaded(n, {}) : ControllerSession::Process(n, {});
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return nullptr;
  }
  return std::move(*session);
}

void BM_RoundTrip(benchmark::State& state) {
  auto session = MakeSession(state, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  if (session == nullptr) return;
  absl::StatusOr<RemoteFunc> nothing = session->GetGlobalFunc("bench.nothing");
  if (!nothing.ok() || !session->SyncAllWorkers().ok()) return state.SkipWithError("setup failed");
  for (auto _ : state) {
    absl::StatusOr<DRef> r = session->CallPacked(*nothing);
    absl::Status s = session->SyncAllWorkers();
    if (!r.ok() || !s.ok()) return state.SkipWithError(std::string(s.message()).c_str());
  }
}
BENCHMARK(BM_RoundTrip)->ArgNames({"backend", "n"})->ArgsProduct({{0, 1}, {1, 2, 4, 8}})->UseRealTime();

void BM_BarePipe(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<int> to(n), from(n);
  std::vector<pid_t> pids(n);
  for (int i = 0; i < n; ++i) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) return state.SkipWithError("pipe");
    pid_t pid = fork();
    if (pid == 0) {
      // The earlier children's pipe ends too: a copy here would keep them from seeing end of file.
      for (int j = 0; j < i; ++j) {
        close(to[j]);
        close(from[j]);
      }
      close(down[1]);
      close(up[0]);
      char byte;
      while (read(down[0], &byte, 1) == 1) {
        if (write(up[1], &byte, 1) != 1) break;
      }
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    to[i] = down[1];
    from[i] = up[0];
    pids[i] = pid;
  }
  char byte = 1;
  for (auto _ : state) {
    for (int fd : to) benchmark::DoNotOptimize(write(fd, &byte, 1));
    for (int fd : from) benchmark::DoNotOptimize(read(fd, &byte, 1));
  }
  for (int i = 0; i < n; ++i) {
    close(to[i]);
    close(from[i]);
    waitpid(pids[i], nullptr, 0);
  }
}
BENCHMARK(BM_BarePipe)->ArgNames({"n"})->Arg(1)->Arg(2)->Arg(4)->Arg(8)->UseRealTime();

void BM_CopyToWorker0(benchmark::State& state) {
  auto session = MakeSession(state, static_cast<int>(state.range(0)), 1);
  if (session == nullptr) return;
  HostTensor host = HostTensor::Zeros(ir::DType::kU8, {state.range(1)});
  for (size_t i = 0; i < host.bytes.size(); ++i) host.bytes[i] = static_cast<std::byte>(i * 131);
  absl::StatusOr<RemoteFunc> empty = session->GetGlobalFunc("vdev.tensor.empty");
  absl::StatusOr<DRef> remote = session->CallPacked(*empty, Shape{state.range(1)}, "u8");
  if (!remote.ok() || !session->SyncWorker(0).ok()) return state.SkipWithError("setup failed");
  for (auto _ : state) {
    absl::Status s = session->CopyToWorker0(host, *remote);
    if (s.ok()) s = session->SyncWorker(0);
    if (!s.ok()) return state.SkipWithError(std::string(s.message()).c_str());
  }
  state.SetBytesProcessed(state.iterations() * state.range(1));
}
BENCHMARK(BM_CopyToWorker0)
    ->ArgNames({"backend", "bytes"})
    ->ArgsProduct({{0, 1}, {1 << 10, 1 << 20, 64 << 20}})
    ->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  std::vector<char> from(static_cast<size_t>(state.range(0)), 7), to(from.size());
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), from.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Memcpy)->ArgNames({"bytes"})->Arg(1 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();

}  // namespace
}  // namespace vdev

int main(int argc, char** argv) {
  vdev::MaybeRunWorker(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
