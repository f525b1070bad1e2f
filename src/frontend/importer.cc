// The ONNX importer's walk: graph inputs, nodes in order, then @main built from the emitted ops.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "internal/graph.h"
#include "vdev/executor/npy.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/status_macros.h"

namespace vdev::frontend {
namespace internal {

std::string Importer::UniqueName(absl::string_view onnx_name) {
  const std::string base = SanitizeName(onnx_name);
  std::string name = base;
  for (int k = 1; !used_names_.insert(name).second; ++k) name = absl::StrCat(base, "_", k);
  return name;
}

absl::Status Importer::AddGraphInputs(const onnx::GraphProto& graph) {
  for (const onnx::TensorProto& init : graph.initializer()) {
    absl::StatusOr<HostTensor> t = TensorFromProto(init);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(file_, ": initializer: ", t.status().message()));
    GraphValue v{.info = {t->dtype, Dims(t->shape.begin(), t->shape.end())}, .name = init.name(), .initializer = true};
    v.constant = *std::move(t);
    by_name_[init.name()] = static_cast<int>(values_.size());
    values_.push_back(std::move(v));
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (by_name_.contains(input.name())) continue;  // an initializer listed as an input (old exporters)
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(file_, ": graph input '", input.name(), "' ", what));
    };
    const onnx::TypeProto& type = input.type();
    if (!type.has_tensor_type()) return error("is not a tensor (unsupported input type)");
    std::optional<ir::DType> dtype = DTypeFromOnnx(type.tensor_type().elem_type());
    if (!dtype) return error("has an element type vdev lacks");
    GraphValue v{.name = input.name()};
    v.info.dtype = *dtype;
    auto known = options_.known_inputs.find(input.name());
    if (known != options_.known_inputs.end()) {
      v.info.dims.assign(known->second.shape.begin(), known->second.shape.end());
      v.constant = known->second;
      v.known_input = true;
    } else {
      if (!type.tensor_type().has_shape()) return error("has no shape");
      for (const onnx::TensorShapeProto::Dimension& d : type.tensor_type().shape().dim()) {
        if (!d.has_dim_value())
          return error(absl::StrCat("has a dynamic dimension '", d.dim_param(),
                                    "'; vdev imports static shapes (give the input's value to fix it)"));
        v.info.dims.push_back(d.dim_value());
      }
    }
    v.runtime = RuntimeValue{.param = static_cast<int>(params_.size())};
    params_.push_back(PendingParam{UniqueName(input.name()), v.info, -1});
    model_.inputs.push_back(ImportedParam{input.name(), params_.back().name});
    by_name_[input.name()] = static_cast<int>(values_.size());
    values_.push_back(std::move(v));
  }
  return absl::OkStatus();
}

int Importer::RuntimeOf(int value) {
  GraphValue& v = values_[value];
  if (!v.runtime) {
    v.runtime = RuntimeValue{.param = static_cast<int>(params_.size())};
    params_.push_back(PendingParam{UniqueName(v.name.empty() ? "constant" : v.name), v.info, value});
  }
  return value;
}

absl::StatusOr<std::vector<TensorInfo>> Importer::InferResult(const PendingOp& op) const {
  ir::ModuleBuilder b;
  b.BeginFunction("f");
  std::vector<ir::Arg> args;
  for (size_t i = 0; i < op.args.size(); ++i) {
    if (op.args[i].literal) {
      args.push_back(*op.args[i].literal);
    } else {
      const TensorInfo& info = values_[op.args[i].value].info;
      args.push_back(b.Param(absl::StrCat("a", i), b.TensorType(info.dtype, info.dims)));
    }
  }
  ir::ValueRef r = b.Op(op.op, std::move(args), op.attrs, "r");
  b.Return(r);
  b.EndFunction();
  VDEV_ASSIGN_OR_RETURN(ir::Module m, std::move(b).Finish());
  const ir::TypeId t = m.bindings.back().type;
  auto info = [&](ir::TypeId id) {
    return TensorInfo{m.types.node(id).dtype, Dims(m.types.dims(id).begin(), m.types.dims(id).end())};
  };
  if (t == ir::kNoType) return absl::InvalidArgumentError(absl::StrCat("the type of '", op.op, "' is unknown"));
  if (m.types.kind(t) == ir::TypeKind::kTensor) return std::vector<TensorInfo>{info(t)};
  std::vector<TensorInfo> fields;
  for (ir::TypeId f : m.types.fields(t)) fields.push_back(info(f));
  return fields;
}

absl::Status Importer::ImportNode(const onnx::NodeProto& node, int index, int64_t opset) {
  NodeCtx ctx(*this, node, index, opset);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return ctx.Unsupported(absl::StrCat("domain '", node.domain(), "'"));
  for (int i = 0; i < node.input_size(); ++i) {
    if (!node.input(i).empty() && !by_name_.contains(node.input(i)))
      return ctx.Error(absl::StrCat("input '", node.input(i), "' is not defined before the node"));
  }
  Handler handler = FindHandler(node.op_type());
  if (handler == nullptr) return ctx.Unsupported("");
  current_output_ = node.output_size() > 0 ? node.output(0) : node.op_type();
  VDEV_RETURN_IF_ERROR(handler(ctx));
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && !by_name_.contains(node.output(i)))
      return ctx.Unsupported(absl::StrCat("output ", i + 1, " ('", node.output(i), "')"));
    auto place = options_.placements.find(node.output(i));
    if (place == options_.placements.end()) continue;
    VDEV_ASSIGN_OR_RETURN(int placed, ctx.Emit("on_device", {by_name_.at(node.output(i)), ir::Arg(place->second)}));
    values_[placed].name = node.output(i);
    by_name_[node.output(i)] = placed;
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportedModel> Importer::Build(const onnx::GraphProto& graph) {
  std::vector<int> outputs;
  for (const onnx::ValueInfoProto& out : graph.output()) {
    auto it = by_name_.find(out.name());
    if (it == by_name_.end())
      return absl::InvalidArgumentError(absl::StrCat(file_, ": graph output '", out.name(), "' is never computed"));
    outputs.push_back(RuntimeOf(it->second));
    model_.outputs.push_back(out.name());
  }
  // Parameter order: graph inputs, initializers, then the other materialised constants.
  std::vector<int> order;
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t p = 0; p < params_.size(); ++p) {
      const int c = params_[p].constant;
      const int rank = c < 0 ? 0 : values_[c].initializer ? 1 : 2;
      if (rank == pass) order.push_back(static_cast<int>(p));
    }
  }
  ir::ModuleBuilder b;
  b.BeginFunction("main");
  std::vector<ir::ValueRef> param_refs(params_.size());
  for (int p : order) {
    const PendingParam& pp = params_[p];
    param_refs[p] = b.Param(pp.name, b.TensorType(pp.info.dtype, pp.info.dims));
    if (pp.constant >= 0) {
      model_.constants.push_back(ImportedParam{values_[pp.constant].name, pp.name});
      model_.constant_values.push_back(*values_[pp.constant].constant);
    }
  }
  std::vector<ir::ValueRef> op_refs(ops_.size());
  absl::flat_hash_map<std::pair<int, int>, ir::ValueRef> projections;
  auto ref = [&](int value) -> ir::ValueRef {
    const RuntimeValue& rv = *values_[value].runtime;
    if (rv.param >= 0) return param_refs[rv.param];
    if (rv.field < 0) return op_refs[rv.op];
    auto [it, inserted] = projections.try_emplace(std::make_pair(rv.op, rv.field));
    if (inserted) it->second = b.Project(op_refs[rv.op], rv.field, UniqueName(values_[value].name));
    return it->second;
  };
  for (size_t i = 0; i < ops_.size(); ++i) {
    PendingOp& op = ops_[i];
    std::vector<ir::Arg> args;
    for (const OpArg& a : op.args) args.push_back(a.literal ? *a.literal : ir::Arg(ref(a.value)));
    op_refs[i] = b.Op(op.op, std::move(args), std::move(op.attrs), op.name);
  }
  if (outputs.size() == 1) {
    b.Return(ref(outputs[0]));
  } else {
    std::vector<ir::Arg> fields;
    for (int v : outputs) fields.push_back(ref(v));
    b.Return(b.Tuple(std::move(fields), UniqueName("outputs")));
  }
  b.EndFunction();
  absl::StatusOr<ir::Module> m = std::move(b).Finish();
  if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat(file_, ": the imported module: ", m.status().message()));
  model_.module = *std::move(m);
  return std::move(model_);
}

absl::StatusOr<ImportedModel> Importer::Run(const onnx::ModelProto& model) {
  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (id.domain().empty() || id.domain() == "ai.onnx") opset = id.version();
  }
  if (opset < 0) opset = 1;  // only other domains: their nodes are refused one by one
  if (opset > kMaxOnnxOpset)
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": opset ", opset, " is newer than the newest vdev supports (", kMaxOnnxOpset, ")"));
  if (!model.has_graph() || model.graph().output_size() == 0)
    return absl::InvalidArgumentError(absl::StrCat(file_, ": the model has no graph outputs"));
  const onnx::GraphProto& graph = model.graph();
  VDEV_RETURN_IF_ERROR(AddGraphInputs(graph));
  for (int i = 0; i < graph.node_size(); ++i) VDEV_RETURN_IF_ERROR(ImportNode(graph.node(i), i, opset));
  for (const auto& [name, device] : options_.placements) {
    if (!by_name_.contains(name))
      return absl::InvalidArgumentError(
          absl::StrCat(file_, ": --place names '", name, "', which the graph does not compute"));
  }
  return Build(graph);
}

}  // namespace internal

absl::StatusOr<ImportedModel> ImportOnnx(absl::string_view model_bytes, absl::string_view file_name,
                                         const ImportOptions& options) {
  onnx::ModelProto model;
  if (model_bytes.empty() || !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size())) ||
      !model.has_graph())
    return absl::InvalidArgumentError(absl::StrCat(file_name, ": not an ONNX model (truncated or another format)"));
  internal::Importer importer{std::string(file_name), options};
  return importer.Run(model);
}

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

absl::StatusOr<ImportedModel> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  VDEV_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ImportOnnx(bytes, path, options);
}

absl::StatusOr<std::vector<std::string>> OnnxGraphInputNames(const std::string& path) {
  VDEV_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes) || !model.has_graph())
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ONNX model (truncated or another format)"));
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    if (!initializers.contains(v.name())) names.push_back(v.name());
  }
  return names;
}

absl::Status WriteImportedModel(const ImportedModel& model, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot create the directory: ", ec.message()));
  const std::string program = dir + "/program.vdev";
  std::ofstream out(program);
  out << ir::PrintModule(model.module);
  if (!out.flush()) return absl::InvalidArgumentError(absl::StrCat(program, ": cannot write"));
  for (size_t i = 0; i < model.constants.size(); ++i)
    VDEV_RETURN_IF_ERROR(WriteNpy(absl::StrCat(dir, "/", model.constants[i].name, ".npy"), model.constant_values[i]));
  return absl::OkStatus();
}

}  // namespace vdev::frontend
