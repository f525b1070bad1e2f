// `vdev fmt FILE` and `vdev parse FILE`: read, verify and print the IR text.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/diagnostic.h"

namespace vdev::cli {

std::optional<ir::Module> LoadModule(const std::string& path, SourceText* source) {
  if (!ReadSource(path, source)) return std::nullopt;
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(source->view(), &diag);
  if (module.ok() && ir::VerifyModule(*module, &diag).ok()) return std::move(*module);
  std::cerr << FormatDiagnostic(DisplayName(path), source->view(), diag);
  return std::nullopt;
}

namespace {

struct IrArgs {
  std::string file;
};

void AddPrintCommand(CLI::App& app, const char* name, const char* help, bool inferred_types, int* exit_code) {
  auto args = std::make_shared<IrArgs>();
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_option("FILE", args->file, "IR text file, or - for standard input")->required();
  sub->callback([args, inferred_types, exit_code] {
    SourceText source;
    std::optional<ir::Module> module = LoadModule(args->file, &source);
    if (!module) {
      *exit_code = kExitUsage;
      return;
    }
    ir::PrintOptions options;
    options.inferred_types = inferred_types;
    std::cout << ir::PrintModule(*module, options);
    *exit_code = kExitOk;
  });
}

}  // namespace

void AddIrCommands(CLI::App& app, int* exit_code) {
  AddPrintCommand(app, "fmt", "Parse and verify FILE, print its canonical text", false, exit_code);
  AddPrintCommand(app, "parse",
                  "Parse and verify FILE, print its canonical text with every inferred binding type written", true,
                  exit_code);
}

}  // namespace vdev::cli
