// `vdev join` and `vdev default`: the lattice operations on two literals.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "vdev/lattice/virtual_device.h"
#include "vdev/support/diagnostic.h"

namespace vdev::cli {

std::optional<VirtualDevice> ParseDeviceArgument(absl::string_view name, const std::string& text) {
  size_t offset = 0;
  absl::StatusOr<VirtualDevice> device = ParseVirtualDevice(text, &offset);
  if (device.ok()) return *device;
  Diagnostic diag{Severity::kError, SourceLoc{1, static_cast<int>(offset) + 1}, std::string(device.status().message())};
  std::cerr << FormatDiagnostic(name, text, diag);
  return std::nullopt;
}

namespace {

struct LatticeArgs {
  std::string lhs;
  std::string rhs;
};

CLI::App* AddBinary(CLI::App& app, const char* name, const char* help, std::shared_ptr<LatticeArgs> args) {
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_option("A", args->lhs, "first virtual-device literal (e.g. cuda:3)")->required();
  sub->add_option("B", args->rhs, "second virtual-device literal (e.g. 'cuda[cuda]/global')")->required();
  return sub;
}

}  // namespace

void AddLatticeCommands(CLI::App& app, int* exit_code) {
  auto join_args = std::make_shared<LatticeArgs>();
  AddBinary(app, "join", "Print the join of two virtual devices, or `none` (exit 1) when they conflict", join_args)
      ->callback([join_args, exit_code] {
        std::optional<VirtualDevice> a = ParseDeviceArgument("A", join_args->lhs);
        std::optional<VirtualDevice> b = ParseDeviceArgument("B", join_args->rhs);
        if (!a || !b) {
          *exit_code = kExitUsage;
          return;
        }
        std::optional<VirtualDevice> joined = Join(*a, *b);
        std::cout << (joined ? joined->ToString() : "none") << "\n";
        *exit_code = joined ? kExitOk : kExitNegative;
      });
  auto default_args = std::make_shared<LatticeArgs>();
  AddBinary(app, "default", "Print Default(A, B): A's fields where set, otherwise B's", default_args)
      ->callback([default_args, exit_code] {
        std::optional<VirtualDevice> a = ParseDeviceArgument("A", default_args->lhs);
        std::optional<VirtualDevice> b = ParseDeviceArgument("B", default_args->rhs);
        if (!a || !b) {
          *exit_code = kExitUsage;
          return;
        }
        std::cout << Default(*a, *b).ToString() << "\n";
        *exit_code = kExitOk;
      });
}

}  // namespace vdev::cli
