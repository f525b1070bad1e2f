// The ONNX importer's state while it walks a graph, and what the op handlers see of it.
//
// The walk is one pass over the nodes in file order (ONNX requires topological order), so nothing
// recurses with the graph's depth. Each ONNX value is either known at import (a constant: an
// initializer, a Constant, or a folded shape computation) or computed at run time (a graph input
// or the result of an emitted vdev op), or both (an initializer). Emitted ops are kept as a list
// and become bindings of @main at the end, after every parameter is known (the builder wants
// parameters first); each op's result type is inferred when it is emitted, by the IR's own type
// rules, so a bad shape is reported at the node that made it.
#ifndef VDEV_SRC_FRONTEND_INTERNAL_GRAPH_H_
#define VDEV_SRC_FRONTEND_INTERNAL_GRAPH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"
#include "vdev/frontend/onnx_import.h"
#include "vdev/ir/ir.h"
#include "vdev/ir/ir_builder.h"
#include "vdev/kernels/tensor.h"

namespace vdev::frontend::internal {

using Dims = std::vector<int64_t>;

// A tensor's dtype and static shape.
struct TensorInfo {
  ir::DType dtype = ir::DType::kF32;
  Dims dims;
};

// A run-time value: a parameter of @main, or field `field` (-1: the whole result) of emitted op `op`.
struct RuntimeValue {
  int param = -1;
  int op = -1;
  int field = -1;
};

struct GraphValue {
  std::optional<RuntimeValue> runtime;
  std::optional<HostTensor> constant;
  TensorInfo info;
  std::string name;  // the ONNX name (empty for a handler's intermediate constant)
  bool initializer = false;
  // A graph input whose value was given (ImportOptions::known_inputs): readable where a value must
  // be known (ConstInput), but not folded into the ops that compute with it.
  bool known_input = false;
};

// A positional operand of an emitted op: a value (by index into Importer's values) or a literal.
struct OpArg {
  int value = -1;
  std::optional<ir::Arg> literal;
  OpArg(int v) : value(v) {}                   // NOLINT: implicit by design
  OpArg(ir::Arg a) : literal(std::move(a)) {}  // NOLINT
};

struct PendingOp {
  std::string op;
  std::vector<OpArg> args;
  std::vector<ir::NamedArg> attrs;
  std::string name;                 // binding name
  std::vector<TensorInfo> results;  // one; several when the op returns a tuple
  bool tuple = false;
};

struct PendingParam {
  std::string name;
  TensorInfo info;
  int constant = -1;  // index into ImportedModel::constants, -1 for a graph input
};

class Importer;

// One node as its handler sees it.
class NodeCtx {
 public:
  NodeCtx(Importer& importer, const onnx::NodeProto& node, int index, int64_t opset)
      : importer_(importer), node_(node), index_(index), opset_(opset) {}

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return node_.input_size(); }
  // Whether input i is given (ONNX marks a skipped optional input with an empty name).
  bool has_input(size_t i) const { return i < num_inputs() && !node_.input(i).empty(); }
  size_t num_outputs() const { return node_.output_size(); }
  bool has_output(size_t i) const { return i < num_outputs() && !node_.output(i).empty(); }

  // The value of input i (an error when absent).
  absl::StatusOr<int> Input(size_t i) const;
  const TensorInfo& Info(int value) const;
  // The value of input i when known at import; an error naming the input otherwise.
  absl::StatusOr<const HostTensor*> ConstInput(size_t i) const;
  // Input i as integers (shape, axes, bounds), which must be known at import.
  absl::StatusOr<std::vector<int64_t>> IntsInput(size_t i) const;
  bool IsConstant(int value) const;
  // The value known at import; nullptr when it is computed at run time.
  const HostTensor* ConstantOf(int value) const;
  bool AllInputsConstant() const;

  // Attributes, with defaults.
  const onnx::AttributeProto* Attr(absl::string_view name) const;
  int64_t IntAttr(absl::string_view name, int64_t fallback) const;
  float FloatAttr(absl::string_view name, float fallback) const;
  std::string StringAttr(absl::string_view name, absl::string_view fallback) const;
  std::optional<std::vector<int64_t>> IntsAttr(absl::string_view name) const;

  // Emits a vdev op; its type is inferred now (an error names this node). Returns the new value.
  absl::StatusOr<int> Emit(std::string op, std::vector<OpArg> args, std::vector<ir::NamedArg> attrs = {});
  // Emits an op returning a tuple; one value per field.
  absl::StatusOr<std::vector<int>> EmitTuple(std::string op, std::vector<OpArg> args,
                                             std::vector<ir::NamedArg> attrs = {});
  // A new value known at import.
  int Constant(HostTensor tensor);

  // Binds output i to `value`.
  void SetOutput(size_t i, int value);

  // InvalidArgument "FILE: node NAME (OP): message".
  absl::Status Error(absl::string_view message) const;
  absl::Status Unsupported(absl::string_view what) const;

 private:
  Importer& importer_;
  const onnx::NodeProto& node_;
  int index_;
  int64_t opset_;
};

using Handler = absl::Status (*)(NodeCtx& ctx);

// The handlers by ONNX op type (ops_math.cc, ops_shape.cc); nullptr when unsupported.
Handler FindHandler(absl::string_view op_type);
void AddMathHandlers(absl::flat_hash_map<std::string, Handler>& table);
void AddShapeHandlers(absl::flat_hash_map<std::string, Handler>& table);

// ONNX element type <-> vdev dtype; nullopt when vdev has no such dtype.
std::optional<ir::DType> DTypeFromOnnx(int32_t onnx_type);
absl::StatusOr<HostTensor> TensorFromProto(const onnx::TensorProto& proto);

// Integer element i of an integer or float tensor (exact for i32/i64).
int64_t ReadInt(const HostTensor& t, int64_t i);
// An i64 tensor: 1-d by default, `dims` ({} for a scalar) when given.
HostTensor IntTensor(const std::vector<int64_t>& values, std::optional<Dims> dims = std::nullopt);

class Importer {
 public:
  Importer(std::string file, const ImportOptions& options) : file_(std::move(file)), options_(options) {}
  absl::StatusOr<ImportedModel> Run(const onnx::ModelProto& model);

 private:
  friend class NodeCtx;
  absl::Status AddGraphInputs(const onnx::GraphProto& graph);
  absl::Status ImportNode(const onnx::NodeProto& node, int index, int64_t opset);
  absl::StatusOr<std::vector<TensorInfo>> InferResult(const PendingOp& op) const;
  int RuntimeOf(int value);  // materialises a constant as a parameter when it has no runtime value
  absl::StatusOr<ImportedModel> Build(const onnx::GraphProto& graph);
  std::string UniqueName(absl::string_view onnx_name);

  std::string file_;
  const ImportOptions& options_;
  std::vector<GraphValue> values_;
  absl::flat_hash_map<std::string, int> by_name_;
  std::vector<PendingParam> params_;
  std::vector<PendingOp> ops_;
  absl::flat_hash_set<std::string> used_names_;
  ImportedModel model_;
  std::string current_output_;  // the ONNX name the next emitted op's binding is named after
};

}  // namespace vdev::frontend::internal

#endif  // VDEV_SRC_FRONTEND_INTERNAL_GRAPH_H_
