// RunPlanInThreads (vdev/channels/channel_executor.h): every rank of a plan as a thread of this process.
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/runtime/ipc_memory.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {

absl::Status RunPlanInThreads(const ProgramSpec& plan, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs, size_t count, DataType type, int instances,
                              absl::Duration timeout, int executions) {
  const int world = plan.world_size;
  if (static_cast<int>(inputs.size()) != world || static_cast<int>(outputs.size()) != world) {
    return absl::InvalidArgumentError(absl::StrCat("the plan is for ", world, " ranks; ", inputs.size(), " inputs and ",
                                                   outputs.size(), " outputs given"));
  }
  std::string dir = "/tmp/vdev-channels-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  std::vector<absl::Status> statuses(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      statuses[r] = [&]() -> absl::Status {
        PeerGroupOptions options;
        options.rank = r;
        options.local_rank = r;
        options.world_size = world;
        options.rendezvous_dir = dir;
        options.timeout = timeout;
        options.remove_rendezvous_dir = r == 0;
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<PeerGroup> session, PeerGroup::Create(options));
        VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> allocator, CreateHostIPCAllocator(session.get()));
        VDEV_ASSIGN_OR_RETURN(auto executor,
                              HostPlanExecutor::Create(*session, *allocator, plan, count, type, instances));
        for (int e = 0; e < executions; ++e) VDEV_RETURN_IF_ERROR(executor->Execute(inputs[r], outputs[r], count));
        return absl::OkStatus();
      }();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    if (!statuses[r].ok()) {
      return absl::Status(statuses[r].code(), absl::StrCat("rank ", r, ": ", statuses[r].message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace vdev::channels
