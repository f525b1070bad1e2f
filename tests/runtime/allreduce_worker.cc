// A worker program for the launcher tests: joins the session from its environment and runs checked
// i32 all-reduces. `--calls N`, `--die-rank R --die-at K` (worker R kills itself before call K).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vdev/runtime/allreduce.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/runtime/peer_group.h"

int main(int argc, char** argv) {
  int calls = 100, die_rank = -1, die_at = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--die-rank") == 0) die_rank = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--die-at") == 0) die_at = std::atoi(argv[i + 1]);
  }
  absl::StatusOr<std::unique_ptr<vdev::PeerGroup>> session = vdev::PeerGroup::FromEnvironment();
  if (!session.ok()) {
    std::fprintf(stderr, "worker: %s\n", session.status().ToString().c_str());
    return 1;
  }
  vdev::PeerGroup& s = **session;
  std::printf("worker %d of %d session %s\n", s.rank(), s.world_size(), s.session_id().c_str());
  std::fflush(stdout);
  const size_t count = 1000;
  absl::StatusOr<std::unique_ptr<vdev::IPCAllocator>> alloc = vdev::CreateHostIPCAllocator(&s);
  absl::StatusOr<vdev::IPCMemory*> ws = (*alloc)->Allocate(
      vdev::AllReduceWorkspaceBytes(vdev::AllReduceAlgorithm::kAuto, s.world_size(), count, vdev::DataType::kI32));
  if (!ws.ok()) {
    std::fprintf(stderr, "worker %d: %s\n", s.rank(), ws.status().ToString().c_str());
    return 1;
  }
  std::vector<int32_t> in(count), out(count);
  for (int call = 0; call < calls; ++call) {
    if (s.rank() == die_rank && call == die_at) raise(SIGKILL);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>(i + call) * (s.rank() + 1);
    absl::Status st =
        vdev::HostAllReduce(s, **ws, in.data(), out.data(), count, vdev::DataType::kI32,
                            call % 2 ? vdev::AllReduceAlgorithm::kOneShot : vdev::AllReduceAlgorithm::kTwoShot);
    if (!st.ok()) {
      std::fprintf(stderr, "worker %d: %s\n", s.rank(), st.ToString().c_str());
      return 1;
    }
    const int32_t factor = s.world_size() * (s.world_size() + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      if (out[i] != static_cast<int32_t>(i + call) * factor) {
        std::fprintf(stderr, "worker %d: wrong sum at call %d element %zu\n", s.rank(), call, i);
        return 1;
      }
    }
  }
  std::printf("worker %d ok\n", s.rank());
  return 0;
}
