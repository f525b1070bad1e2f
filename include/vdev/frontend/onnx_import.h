// The ONNX frontend: imports an ONNX model (a ModelProto file) as a vdev module.
//
// @main's parameters are the graph inputs, then the initializers, then the constants the import
// had to materialise (Constant/ConstantOfShape values that reach a kernel), each named after its
// ONNX name with every character outside [A-Za-z0-9_] replaced by `_`. Shape computations on
// static shapes (Shape, Gather on shapes, Unsqueeze, Concat, ConstantOfShape, Range, … feeding
// Reshape/Expand/Slice) are folded at import; anything that must be known at import and is not
// (a Reshape whose shape is a graph input, say) is an error naming the node and its op.
//
//   VDEV_ASSIGN_OR_RETURN(frontend::ImportedModel model, frontend::ImportOnnxFile("m.onnx"));
//   VDEV_RETURN_IF_ERROR(frontend::WriteImportedModel(model, "out"));  // out/program.vdev, out/*.npy
//
// Errors: InvalidArgument naming the file, and the node (its name or `#index`) and op where one
// is at fault: an unreadable or non-ONNX file, an opset newer than kMaxOnnxOpset, an unsupported op
// (the message starts "unsupported op" so callers can tell skips from failures), a dynamic
// dimension, a value that cannot be folded.
#ifndef VDEV_ONNX_IMPORT_H_
#define VDEV_ONNX_IMPORT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/tensor.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev::frontend {

// The newest default-domain opset the importer knows the semantics of (ONNX 1.12).
inline constexpr int64_t kMaxOnnxOpset = 17;

struct ImportOptions {
  // Values of graph inputs known at import (keyed by ONNX name). They stay parameters, but an op
  // that needs a value at import (a Reshape's shape, a Slice's bounds) may read them.
  std::map<std::string, HostTensor> known_inputs;
  // Placement annotations: the value of each named ONNX tensor is wrapped in
  // `on_device(%value, device)` where it is computed, and its users read the annotated value.
  std::map<std::string, VirtualDevice> placements;
};

struct ImportedParam {
  std::string onnx_name;
  std::string name;  // the parameter's name in the module (sanitised, unique)
};

struct ImportedModel {
  ir::Module module;
  std::vector<ImportedParam> inputs;        // graph inputs, in @main's parameter order
  std::vector<ImportedParam> constants;     // initializers and materialised constants, after the inputs
  std::vector<HostTensor> constant_values;  // one per `constants` entry
  std::vector<std::string> outputs;         // ONNX names of the graph outputs (@main returns a tuple when > 1)
};

absl::StatusOr<ImportedModel> ImportOnnx(absl::string_view model_bytes, absl::string_view file_name,
                                         const ImportOptions& options = {});
absl::StatusOr<ImportedModel> ImportOnnxFile(const std::string& path, const ImportOptions& options = {});

// Writes DIR/program.vdev and DIR/NAME.npy per constant; creates DIR. Nothing is written unless the
// model was imported.
absl::Status WriteImportedModel(const ImportedModel& model, const std::string& dir);

// The names of a model's graph inputs that are not initializers, in order (what input_N.pb of
// ONNX's test data sets match by position).
absl::StatusOr<std::vector<std::string>> OnnxGraphInputNames(const std::string& path);

// A serialised ONNX TensorProto (the test data's input_N.pb / output_N.pb) as a host tensor.
absl::StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path);

// `name` with every character outside [A-Za-z0-9_] replaced by `_` (empty: `_`).
std::string SanitizeName(absl::string_view name);

}  // namespace vdev::frontend

#endif  // VDEV_ONNX_IMPORT_H_
