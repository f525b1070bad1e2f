// `vdev launch -n N -- PROGRAM ARGS`: run N workers of one session on this host.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "vdev/runtime/launch.h"

namespace vdev::cli {

void AddRuntimeCommands(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<LaunchOptions>();
  CLI::App* launch =
      app.add_subcommand("launch",
                         "Start N workers of one session (VDEV_RANK, VDEV_WORLD_SIZE, a private rendezvous); "
                         "exits with the first failing worker's status");
  launch->add_option("-n,--workers", options->num_workers, "number of workers (1..8)")
      ->required()
      ->check(CLI::Range(1, kMaxWorkers));
  auto grace_s = std::make_shared<double>(absl::ToDoubleSeconds(options->grace));
  launch
      ->add_option("--grace", *grace_s,
                   "seconds the other workers are given to notice a failed worker before they are killed")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  launch->add_option("command", options->argv, "PROGRAM ARGS (after --)")->required();
  launch->callback([options, grace_s, exit_code] {
    options->grace = absl::Seconds(*grace_s);
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
