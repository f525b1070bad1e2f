// NodeCtx: what an op handler reads of its node and how it emits vdev ops.
#include "absl/strings/str_join.h"
#include "internal/graph.h"
#include "vdev/support/status_macros.h"

namespace vdev::frontend::internal {

absl::Status NodeCtx::Error(absl::string_view message) const {
  const std::string name = node_.name().empty() ? absl::StrCat("#", index_) : node_.name();
  return absl::InvalidArgumentError(
      absl::StrCat(importer_.file_, ": node ", name, " (", node_.op_type(), "): ", message));
}

absl::Status NodeCtx::Unsupported(absl::string_view what) const {
  return Error(absl::StrCat("unsupported op ", node_.op_type(), what.empty() ? "" : ": ", what));
}

absl::StatusOr<int> NodeCtx::Input(size_t i) const {
  if (!has_input(i)) return Error(absl::StrCat("input ", i + 1, " is missing"));
  return importer_.by_name_.at(node_.input(i));
}

const TensorInfo& NodeCtx::Info(int value) const { return importer_.values_[value].info; }

bool NodeCtx::IsConstant(int value) const {
  const GraphValue& v = importer_.values_[value];
  return v.constant.has_value() && !v.known_input;
}

const HostTensor* NodeCtx::ConstantOf(int value) const {
  return IsConstant(value) ? &*importer_.values_[value].constant : nullptr;
}

bool NodeCtx::AllInputsConstant() const {
  for (size_t i = 0; i < num_inputs(); ++i) {
    if (has_input(i) && !IsConstant(importer_.by_name_.at(node_.input(i)))) return false;
  }
  return true;
}

absl::StatusOr<const HostTensor*> NodeCtx::ConstInput(size_t i) const {
  VDEV_ASSIGN_OR_RETURN(int v, Input(i));
  const GraphValue& value = importer_.values_[v];
  if (!value.constant)
    return Error(
        absl::StrCat("input ", i + 1, " ('", node_.input(i),
                     "') must be known at import (it is computed at run time); vdev folds only static shapes"));
  return &*value.constant;
}

absl::StatusOr<std::vector<int64_t>> NodeCtx::IntsInput(size_t i) const {
  VDEV_ASSIGN_OR_RETURN(const HostTensor* t, ConstInput(i));
  std::vector<int64_t> out(t->NumElements());
  for (size_t k = 0; k < out.size(); ++k) out[k] = ReadInt(*t, k);
  return out;
}

const onnx::AttributeProto* NodeCtx::Attr(absl::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeCtx::IntAttr(absl::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a == nullptr ? fallback : a->i();
}

float NodeCtx::FloatAttr(absl::string_view name, float fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a == nullptr ? fallback : a->f();
}

std::string NodeCtx::StringAttr(absl::string_view name, absl::string_view fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a == nullptr ? std::string(fallback) : a->s();
}

std::optional<std::vector<int64_t>> NodeCtx::IntsAttr(absl::string_view name) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::StatusOr<std::vector<int>> NodeCtx::EmitTuple(std::string op, std::vector<OpArg> args,
                                                    std::vector<ir::NamedArg> attrs) {
  for (const OpArg& a : args) {
    if (!a.literal) importer_.RuntimeOf(a.value);
  }
  PendingOp pending{.op = std::move(op), .args = std::move(args), .attrs = std::move(attrs)};
  absl::StatusOr<std::vector<TensorInfo>> results = importer_.InferResult(pending);
  if (!results.ok()) return Error(results.status().message());
  pending.name = importer_.UniqueName(importer_.current_output_);
  const int op_index = static_cast<int>(importer_.ops_.size());
  importer_.ops_.push_back(std::move(pending));
  std::vector<int> values;
  for (size_t f = 0; f < results->size(); ++f) {
    GraphValue v{.info = (*results)[f]};
    v.runtime = RuntimeValue{.op = op_index, .field = static_cast<int>(f)};
    values.push_back(static_cast<int>(importer_.values_.size()));
    importer_.values_.push_back(std::move(v));
  }
  return values;
}

absl::StatusOr<int> NodeCtx::Emit(std::string op, std::vector<OpArg> args, std::vector<ir::NamedArg> attrs) {
  VDEV_ASSIGN_OR_RETURN(std::vector<int> values, EmitTuple(std::move(op), std::move(args), std::move(attrs)));
  if (values.size() != 1) return Error("an op that should give one tensor gave a tuple");
  importer_.values_[values[0]].runtime->field = -1;
  return values[0];
}

int NodeCtx::Constant(HostTensor tensor) {
  GraphValue v{.info = {tensor.dtype, Dims(tensor.shape.begin(), tensor.shape.end())}};
  v.constant = std::move(tensor);
  importer_.values_.push_back(std::move(v));
  return static_cast<int>(importer_.values_.size() - 1);
}

void NodeCtx::SetOutput(size_t i, int value) {
  if (!has_output(i)) return;
  GraphValue& v = importer_.values_[value];
  if (v.name.empty()) v.name = node_.output(i);
  importer_.by_name_[node_.output(i)] = value;
}

}  // namespace vdev::frontend::internal
