// Entry point of the vdev command line; subcommands live in one file per layer.
#include <malloc.h>

#include <iostream>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "vdev/controller/controller.h"

int main(int argc, char** argv) {
  // A large program's tables grow by doubling and its passes allocate and free buffers of megabytes:
  // served by mmap, each would be fresh pages, zeroed by the kernel on first touch (a good part of
  // `vdev plan`'s time on a million bindings). From the heap, and kept there once freed, later
  // buffers reuse the pages.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
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
  vdev::cli::AddMachineCommands(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? vdev::cli::kExitOk : vdev::cli::kExitUsage;
  }
  return exit_code;
}
