// Entry point of the vdev command line; subcommands live in one file per layer.
#include <iostream>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "vdev/controller.h"

int main(int argc, char** argv) {
  // In a worker process of a controller session (vdev run's workers): serves it, never returns.
  vdev::MaybeRunWorker(argc, argv);
  CLI::App app{"vdev: plans where every value of an ML program lives, and runs it there"};
  app.require_subcommand(1);
  int exit_code = vdev::cli::kExitOk;
  vdev::cli::AddLatticeCommands(app, &exit_code);
  vdev::cli::AddIrCommands(app, &exit_code);
  vdev::cli::AddPlanCommands(app, &exit_code);
  vdev::cli::AddMemoryCommands(app, &exit_code);
  vdev::cli::AddRuntimeCommands(app, &exit_code);
  vdev::cli::AddRunCommand(app, &exit_code);
  vdev::cli::AddChannelCommands(app, &exit_code);
#ifdef VDEV_HAVE_ONNX
  vdev::cli::AddImportCommand(app, &exit_code);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? vdev::cli::kExitOk : vdev::cli::kExitUsage;
  }
  return exit_code;
}
