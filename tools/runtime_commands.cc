// `vdev launch -n N -- PROGRAM ARGS`: run N workers of one session on this host.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "vdev/launch.h"

namespace vdev::cli {

void AddRuntimeCommands(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<LaunchOptions>();
  CLI::App* launch = app.add_subcommand(
      "launch", "Start N workers of one session (VDEV_RANK, VDEV_WORLD_SIZE, a private rendezvous); "
                "exits with the first failing worker's status");
  launch->add_option("-n,--workers", options->num_workers, "number of workers (1..8)")
      ->required()
      ->check(CLI::Range(1, kMaxWorkers));
  launch->add_option("command", options->argv, "PROGRAM ARGS (after --)")->required();
  launch->callback([options, exit_code] {
    absl::StatusOr<int> status = Launch(*options);
    if (!status.ok()) {
      std::cerr << "vdev launch: " << status.status().message() << "\n";
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = *status;
  });
}

}  // namespace vdev::cli
