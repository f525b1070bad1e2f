// The vdev command line: each layer registers its subcommands on the one CLI11 app.
//
// A subcommand's callback stores the process exit status in *exit_code: 0 success, 1 a negative
// answer or a planning error, 2 a usage or parse error (shared/spec/cli.md).
#ifndef VDEV_TOOLS_COMMANDS_H_
#define VDEV_TOOLS_COMMANDS_H_

#include <string>
#include <string_view>

#include "CLI/CLI.hpp"

namespace vdev::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNegative = 1;
inline constexpr int kExitUsage = 2;

// `vdev join A B`, `vdev default A B`.
void AddLatticeCommands(CLI::App& app, int* exit_code);

// `vdev launch -n N -- PROGRAM ARGS`.
void AddRuntimeCommands(CLI::App& app, int* exit_code);

}  // namespace vdev::cli

#endif  // VDEV_TOOLS_COMMANDS_H_
