// `vdev fmt FILE` and `vdev parse FILE`: read, verify and print the IR text.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "commands.h"
#include "vdev/diagnostic.h"
#include "vdev/ir_text.h"

namespace vdev::cli {

std::optional<ir::Module> LoadModule(const std::string& path, std::string* source) {
  std::string name = path == "-" ? "<stdin>" : path;
  if (path == "-") {
    source->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << name << ": error: cannot open file\n";
      return std::nullopt;
    }
    in.seekg(0, std::ios::end);
    std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : -1;
    if (size >= 0) {
      // One read into a string of the file's size (a stringstream would hold the text twice).
      source->resize(static_cast<size_t>(size));
      in.seekg(0);
      in.read(source->data(), static_cast<std::streamsize>(source->size()));
      source->resize(static_cast<size_t>(in.gcount()));
    } else {  // a pipe or another file without a size
      in.clear();
      in.seekg(0);
      in.clear();
      source->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(*source, &diag);
  if (module.ok() && ir::VerifyModule(*module, &diag).ok()) return std::move(*module);
  std::cerr << FormatDiagnostic(name, *source, diag);
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
    std::string source;
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
                  "Parse and verify FILE, print its canonical text with every inferred binding type written",
                  true, exit_code);
}

}  // namespace vdev::cli
