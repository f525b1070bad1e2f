// `vdev import MODEL.onnx --out DIR`: the ONNX frontend (vdev/frontend/onnx_import.h) as a command.
#include <iostream>
#include <memory>

#include "commands.h"
#include "vdev/frontend/onnx_import.h"

namespace vdev::cli {
namespace {

struct ImportArgs {
  std::string model;
  std::string out;
  std::vector<std::string> placements;  // NAME=DEVICE
};

int Import(const ImportArgs& args) {
  frontend::ImportOptions options;
  for (const std::string& p : args.placements) {
    const size_t eq = p.rfind('=');
    std::optional<VirtualDevice> device =
        eq == std::string::npos ? std::nullopt : ParseDeviceArgument("--place", p.substr(eq + 1));
    if (!device) {
      if (eq == std::string::npos) std::cerr << "vdev import: --place expects NAME=DEVICE, found " << p << "\n";
      return kExitUsage;
    }
    options.placements[p.substr(0, eq)] = *device;
  }
  absl::StatusOr<frontend::ImportedModel> model = frontend::ImportOnnxFile(args.model, options);
  if (!model.ok()) {
    std::cerr << "vdev import: " << model.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s = frontend::WriteImportedModel(*model, args.out); !s.ok()) {
    std::cerr << "vdev import: " << s.message() << "\n";
    return kExitUsage;
  }
  std::cout << "wrote " << args.out << "/program.vdev and " << model->constants.size() << " constant(s); inputs:";
  for (const frontend::ImportedParam& p : model->inputs) std::cout << " " << p.name;
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

void AddImportCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Import an ONNX model: DIR/program.vdev and DIR/NAME.npy per initializer (vdev run --inputs DIR)");
  cmd->add_option("MODEL", args->model, "the .onnx file")->required();
  cmd->add_option("--out", args->out, "the directory to write")->required();
  cmd->add_option("--place", args->placements,
                  "NAME=DEVICE: annotate the ONNX value NAME with on_device(…, DEVICE), e.g. an embedding on cpu");
  cmd->callback([args, exit_code] { *exit_code = Import(*args); });
}

}  // namespace vdev::cli
