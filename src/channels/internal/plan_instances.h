// How many instances a launch of a CUDA plan replicates each thread block into (docs/channels.md,
// "instances"). Every rank must launch the same number: instance i of a channel with tag t signals
// and waits on semaphore t * instances + i at both ends and takes part i of every op's data, so ranks
// that disagreed would wait for signals nobody sends. The limits therefore come from the whole plan
// (its largest tag, its busiest rank's thread blocks), never from one rank's own thread blocks.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_PLAN_INSTANCES_H_
#define VDEV_SRC_CHANNELS_INTERNAL_PLAN_INSTANCES_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "internal/cuda_plan_args.h"
#include "internal/plan_checks.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels::internal {

// The thread blocks of the rank that has the most.
inline int MostThreadBlocks(const ProgramSpec& plan) {
  size_t most = 0;
  for (const auto& tbs : plan.ranks) most = std::max(most, tbs.size());
  return static_cast<int>(most);
}

// The most instances every rank can launch: the plan's tags times the instances within kDeviceTags,
// every rank's thread blocks times the instances within kMaxPlanBlocks.
inline int MostInstances(const ProgramSpec& plan) {
  const int by_tags = kDeviceTags / (std::max(MaxTag(plan), 0) + 1);
  return std::min(by_tags, kMaxPlanBlocks / std::max(MostThreadBlocks(plan), 1));
}

// The blocks of one rank's grid that every rank's GPU holds at once, from what every rank reported
// as "SMS BUS_ID" (its GPU's multiprocessors and PCI bus id): the plan kernels are built to fit one
// block of their threads an SM (__launch_bounds__(threads, 1)), so the fewest SMs. 0 (unknown) where
// two ranks share a GPU, whose SMs then hold both grids, or where a report does not parse.
inline int CommonResidentBlocks(const std::vector<std::string>& reports) {
  int fewest = 0;
  std::vector<std::string> buses;
  for (const std::string& report : reports) {
    const size_t space = report.find(' ');
    int sms = 0;
    if (space == std::string::npos || !absl::SimpleAtoi(report.substr(0, space), &sms) || sms < 1) return 0;
    const std::string bus = report.substr(space + 1);
    if (bus.empty() || std::find(buses.begin(), buses.end(), bus) != buses.end()) return 0;
    buses.push_back(bus);
    fewest = fewest == 0 ? sms : std::min(fewest, sms);
  }
  return fewest;
}

// Segments above this size may run more than 32 instances (InstancesBySize).
inline constexpr size_t kWideSegmentBytes = size_t{1} << 20;

// Instances by size (an executor asked for 0), the same on every rank, as the benchmarks' fastest
// choices (channels_one_gpu_bench's sweep of 1-128 instances, allreduce_bench's plan variants on two
// GPUs). Plans with LL packets (`packets`): about 1 KB of a segment per block, so that a thread of
// 128 has one 8-byte line (each line more a thread waits for is another round trip over NVLink:
// 2.5 -> 3.0 us from 1 to 2 KB on two H200s), up to 128. Others about 4 KB, up to 32, and above
// kWideSegmentBytes up to as many as `resident_blocks` allow: the blocks of one rank's grid that every
// rank's GPU holds at once (0 where unknown): a block may wait for any block of its peers' grids and
// theirs for any of its own, so every block must run at once (a block left without an SM, behind
// blocks that wait for it, would never start). Plans with port channels (`ports`): one, since their
// data moves on the copy engine, where each instance's part is a request of its own that the rank's
// proxy serves after the one before (32 instances took 2.6-2.8 ms an execution at every size on two
// H100s, one instance the copy plus ~19 us).
inline int InstancesBySize(const ProgramSpec& plan, size_t segment_bytes, bool packets, bool ports,
                           int resident_blocks) {
  if (ports) return 1;
  const size_t per_block = packets ? 1024 : 4096;
  const size_t by_size = (segment_bytes + per_block - 1) / per_block;
  int most = packets ? 128 : 32;
  if (!packets && segment_bytes > kWideSegmentBytes) {
    most = std::max(most, resident_blocks / std::max(MostThreadBlocks(plan), 1));
  }
  const int cap = std::min(most, MostInstances(plan));
  return static_cast<int>(std::clamp<size_t>(by_size, 1, static_cast<size_t>(std::max(cap, 1))));
}

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_PLAN_INSTANCES_H_
