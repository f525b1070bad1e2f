// Writes the seeds of channel_plan_fuzzer: every shipped plan for world sizes 1..8 as JSON, one
// file each, into the folder named by the first argument.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_plan.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: channel_plan_seeds FOLDER\n");
    return 2;
  }
  for (const std::string& name : vdev::channels::ShippedPlanNames()) {
    for (int world = 1; world <= 8; ++world) {
      absl::StatusOr<vdev::channels::ProgramSpec> plan = vdev::channels::ShippedPlan(name, world);
      if (!plan.ok()) {
        std::fprintf(stderr, "%s for %d: %s\n", name.c_str(), world, plan.status().ToString().c_str());
        return 1;
      }
      std::ofstream(absl::StrCat(argv[1], "/", name, "_", world, ".json")) << vdev::channels::PlanToJson(*plan);
    }
  }
  return 0;
}
