// The vdev command line: each layer registers its subcommands on the one CLI11 app.
//
// A subcommand's callback stores the process exit status in *exit_code: 0 success, 1 a negative
// answer or a planning error, 2 a usage or parse error (docs/spec/cli.md).
#ifndef VDEV_TOOLS_COMMANDS_H_
#define VDEV_TOOLS_COMMANDS_H_

#include <optional>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/support/source_file.h"

namespace vdev::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNegative = 1;
inline constexpr int kExitUsage = 2;

// `vdev join A B`, `vdev default A B`.
void AddLatticeCommands(CLI::App& app, int* exit_code);

// `vdev fmt FILE`, `vdev parse FILE`.
void AddIrCommands(CLI::App& app, int* exit_code);

// How FILE is named in messages: `<stdin>` for `-`.
std::string DisplayName(const std::string& path);

// Reads FILE (`-`: standard input) into *source with vdev::ReadSourceFile (vdev/support/source_file.h). A
// refusal is printed as one line on standard error; returns false then (the caller exits with
// kExitUsage).
bool ReadSource(const std::string& path, std::string* source);
// The same for a program FILE, mapped rather than copied (vdev::MapSourceFile).
bool ReadSource(const std::string& path, SourceText* source);

// Reads FILE into *source, parses and verifies it. On failure prints the located diagnostic to
// standard error and returns nullopt (the caller exits with kExitUsage).
std::optional<ir::Module> LoadModule(const std::string& path, SourceText* source);

// `vdev plan FILE [--json] [--strict] [--default VD] [--host VD]`.
void AddPlanCommands(CLI::App& app, int* exit_code);

// Parses a virtual-device literal given on the command line; on failure prints a located message
// naming `name` (the argument or flag) and returns nullopt.
std::optional<VirtualDevice> ParseDeviceArgument(absl::string_view name, const std::string& text);

// The planning flags `vdev plan` and `vdev lower` share: --strict, --default VD, --host VD.
struct PlanningFlags {
  bool strict = false;
  std::string default_device;
  std::string host_device;
};
void AddPlanningFlags(CLI::App* command, PlanningFlags* flags);
// The PlanOptions the flags ask for; nullopt (after a located message) on a bad device literal.
std::optional<PlanOptions> ToPlanOptions(const PlanningFlags& flags);

// Reads FILE and runs the pipeline of compile.h on it; prints every warning, and a note when the
// program has no functions. On failure prints the located error (a planning error with its
// conflicting annotations as notes, and the JSON error when `json`), sets *exit_code (kExitUsage
// for an unreadable, unparsable or invalid program, kExitNegative after) and returns nullopt.
// `*source`, when given, receives the program text.
std::optional<CompileResult> CompileForCommand(const std::string& path, const CompileOptions& options, bool json,
                                               int* exit_code, SourceText* source = nullptr);

// `vdev lower FILE [--json] [--dot]`.
void AddMemoryCommands(CLI::App& app, int* exit_code);
// `vdev launch -n N -- PROGRAM ARGS`.
void AddRuntimeCommands(CLI::App& app, int* exit_code);
// `vdev run FILE [--workers N] [--backend cuda|host] …`.
void AddRunCommand(CLI::App& app, int* exit_code);
// `vdev machine probe [--out M.json] [--gpus N]`.
void AddMachineCommands(CLI::App& app, int* exit_code);
// `vdev channels list`, `vdev channels show NAME [-n N]`, `vdev channels check FILE`.
void AddChannelCommands(CLI::App& app, int* exit_code);

// `vdev import MODEL.onnx --out DIR` (builds with the ONNX frontend only: VDEV_HAVE_ONNX).
void AddImportCommand(CLI::App& app, int* exit_code);

}  // namespace vdev::cli

#endif  // VDEV_TOOLS_COMMANDS_H_
