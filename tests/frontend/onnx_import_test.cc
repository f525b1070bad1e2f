// The ONNX importer on models built here with ONNX's protobuf classes: the module it makes, the
// shapes it folds, the results it runs to, and its refusals.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "vdev/executor/executor.h"
#include "vdev/frontend/onnx_import.h"
#include "vdev/ir/ir_text.h"

namespace vdev::frontend {
namespace {

using ::testing::HasSubstr;

struct ModelMaker {
  onnx::ModelProto model;
  onnx::GraphProto* graph = model.mutable_graph();

  explicit ModelMaker(int opset = 13) {
    model.set_ir_version(8);
    onnx::OperatorSetIdProto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  void Input(const std::string& name, std::vector<int64_t> dims, int type = onnx::TensorProto::FLOAT,
             const std::string& dynamic = "") {
    onnx::ValueInfoProto* v = graph->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    if (!dynamic.empty()) t->mutable_shape()->add_dim()->set_dim_param(dynamic);
  }
  void Output(const std::string& name) { graph->add_output()->set_name(name); }
  void Initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void IntInitializer(const std::string& name, std::vector<int64_t> values) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    onnx::NodeProto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(out.empty() ? op : out[0] + "_node");
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  absl::StatusOr<ImportedModel> Import(const ImportOptions& options = {}) const {
    return ImportOnnx(model.SerializeAsString(), "m.onnx", options);
  }
};

HostTensor F32(Shape shape, std::vector<float> values) {
  HostTensor t = HostTensor::Zeros(ir::DType::kF32, shape);
  for (size_t i = 0; i < values.size(); ++i) WriteFromDouble(t.Ref(), i, values[i]);
  return t;
}

std::vector<HostTensor> RunOnHost(ImportedModel& m, std::vector<HostTensor> inputs) {
  for (const HostTensor& c : m.constant_values) inputs.push_back(c);
  absl::StatusOr<LoweredProgram> program = CompileForExecution(std::move(m.module), "m.onnx");
  EXPECT_TRUE(program.ok()) << program.status();
  auto backend = CreateHostBackend(nullptr);
  auto exec = Executor::Load(*program, backend->get());
  EXPECT_TRUE(exec.ok()) << exec.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*exec)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

TEST(OnnxImport, GemmReluRunsAndNamesParametersAfterOnnx) {
  ModelMaker m;
  m.Input("x.in", {1, 2});
  m.Initializer("fc/w", {3, 2}, {1, 2, 3, 4, 5, 6});
  m.Initializer("fc/b", {3}, {0.5f, -100, 1});
  onnx::NodeProto* gemm = m.Node("Gemm", {"x.in", "fc/w", "fc/b"}, {"h"});
  onnx::AttributeProto* trans = gemm->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(1);
  m.Node("Relu", {"h"}, {"y"});
  m.Output("y");
  absl::StatusOr<ImportedModel> model = m.Import();
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "x_in");
  ASSERT_EQ(model->constants.size(), 2u);
  EXPECT_EQ(model->constants[0].name, "fc_w");
  EXPECT_EQ(model->constants[1].name, "fc_b");
  // x = [1, 1]: x W^T = [3, 7, 11]; + b = [3.5, -93, 12]; relu: [3.5, 0, 12] (exact in f32).
  std::vector<HostTensor> out = RunOnHost(*model, {F32({1, 2}, {1, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, Shape({1, 3}));
  EXPECT_DOUBLE_EQ(ReadAsDouble(out[0].Ref(), 0), 3.5);
  EXPECT_DOUBLE_EQ(ReadAsDouble(out[0].Ref(), 1), 0.0);
  EXPECT_DOUBLE_EQ(ReadAsDouble(out[0].Ref(), 2), 12.0);
}

TEST(OnnxImport, FoldsShapeComputationsIntoAStaticReshape) {
  ModelMaker m;
  m.Input("x", {2, 3, 4});
  m.IntInitializer("zero", {0});
  m.IntInitializer("minus_one", {-1});
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Gather", {"s", "zero"}, {"batch"});
  m.Node("Concat", {"batch", "minus_one"}, {"shape"})->add_attribute()->set_name("axis");
  m.Node("Reshape", {"x", "shape"}, {"y"});
  m.Output("y");
  absl::StatusOr<ImportedModel> model = m.Import();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string text = ir::PrintModule(model->module);
  EXPECT_THAT(text, HasSubstr("reshape(%x, newshape=[2, 12])"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Shape")));
  EXPECT_TRUE(model->constants.empty()) << "the shape initializers only feed folding";
}

TEST(OnnxImport, RefusesBadInputNamingFileNodeAndOp) {
  EXPECT_THAT(ImportOnnx("not a model", "bad.onnx").status().message(), HasSubstr("bad.onnx: not an ONNX model"));
  ModelMaker good;
  good.Input("x", {2});
  good.Node("Relu", {"x"}, {"y"});
  good.Output("y");
  const std::string bytes = good.model.SerializeAsString();
  EXPECT_THAT(ImportOnnx(bytes.substr(0, bytes.size() / 2), "cut.onnx").status().message(), HasSubstr("cut.onnx"));

  ModelMaker newer(18);
  newer.Input("x", {2});
  newer.Node("Relu", {"x"}, {"y"});
  newer.Output("y");
  EXPECT_THAT(newer.Import().status().message(), HasSubstr("opset 18 is newer"));

  ModelMaker unsupported;
  unsupported.Input("x", {2});
  unsupported.Node("Frobnicate", {"x"}, {"y"});
  unsupported.Output("y");
  EXPECT_THAT(unsupported.Import().status().message(),
              HasSubstr("m.onnx: node y_node (Frobnicate): unsupported op Frobnicate"));

  ModelMaker dynamic;
  dynamic.Input("x", {2}, onnx::TensorProto::FLOAT, "batch");
  dynamic.Node("Relu", {"x"}, {"y"});
  dynamic.Output("y");
  EXPECT_THAT(dynamic.Import().status().message(), HasSubstr("dynamic dimension 'batch'"));

  ModelMaker runtime_shape;
  runtime_shape.Input("x", {6});
  runtime_shape.Input("shape", {2}, onnx::TensorProto::INT64);
  runtime_shape.Node("Reshape", {"x", "shape"}, {"y"});
  runtime_shape.Output("y");
  EXPECT_THAT(runtime_shape.Import().status().message(),
              HasSubstr("node y_node (Reshape): input 2 ('shape') must be known at import"));
  ImportOptions known;
  known.known_inputs["shape"] = HostTensor::Zeros(ir::DType::kI64, {2});
  WriteFromDouble(known.known_inputs["shape"].Ref(), 0, 2);
  WriteFromDouble(known.known_inputs["shape"].Ref(), 1, 3);
  EXPECT_TRUE(runtime_shape.Import(known).ok());
}

HostTensor Tensor(ir::DType dtype, Shape shape, std::vector<double> values) {
  HostTensor t = HostTensor::Zeros(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) WriteFromDouble(t.Ref(), i, values[i]);
  return t;
}

// Dropout(x, ratio, training_mode) with both given as graph inputs whose values are known.
absl::StatusOr<ImportedModel> ImportTrainingDropout(float ratio) {
  ModelMaker m;
  m.Input("x", {3});
  m.Input("r", {});
  m.Input("t", {}, onnx::TensorProto::BOOL);
  m.Node("Dropout", {"x", "r", "t"}, {"y", "mask"});
  m.Output("y");
  m.Output("mask");
  ImportOptions known;
  known.known_inputs["r"] = Tensor(ir::DType::kF32, {}, {ratio});
  known.known_inputs["t"] = Tensor(ir::DType::kBool, {}, {1});
  return m.Import(known);
}

TEST(OnnxImport, TrainingDropoutWithRatioZeroIsTheIdentity) {
  absl::StatusOr<ImportedModel> model = ImportTrainingDropout(0.0f);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<HostTensor> out =
      RunOnHost(*model, {F32({3}, {1, -2, 3}), F32({}, {0}), Tensor(ir::DType::kBool, {}, {1})});
  ASSERT_EQ(out.size(), 2u);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ReadAsDouble(out[0].Ref(), i), ReadAsDouble(F32({3}, {1, -2, 3}).Ref(), i));
    EXPECT_EQ(ReadAsDouble(out[1].Ref(), i), 1.0) << "the mask keeps every element";
  }
}

TEST(OnnxImport, TrainingDropoutWithARatioIsRefusedForItsRandomMask) {
  EXPECT_THAT(ImportTrainingDropout(0.5f).status().message(),
              HasSubstr("node y_node (Dropout): training mode with ratio 0.5 draws a random mask"));
}

TEST(OnnxImport, RangeOfARunTimeValueIsRefusedForItsShape) {
  ModelMaker m;
  m.Input("n", {1}, onnx::TensorProto::INT64);
  m.IntInitializer("start", {0});
  m.IntInitializer("delta", {1});
  m.Node("Range", {"start", "n", "delta"}, {"y"});
  m.Output("y");
  EXPECT_THAT(m.Import().status().message(),
              HasSubstr("node y_node (Range): the output shape depends on a run-time value: input 2 ('n')"));
  ImportOptions known;
  known.known_inputs["n"] = Tensor(ir::DType::kI64, {1}, {4});
  absl::StatusOr<ImportedModel> model = m.Import(known);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<HostTensor> out = RunOnHost(*model, {known.known_inputs["n"]});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, Shape({4}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(ReadAsDouble(out[0].Ref(), i), i);
}

// An integer base with a float exponent: the power of the exact values, truncated to the base's
// type (4^0.5 = 2, 3^0.5 -> 1), as ONNX's reference computes it; casting the exponent to the
// base's type instead would make both 1.
TEST(OnnxImport, PowOfAnIntegerBaseAndAFloatExponentComputesInF64) {
  ModelMaker m;
  m.Input("x", {4}, onnx::TensorProto::INT32);
  m.Input("e", {4});
  m.Node("Pow", {"x", "e"}, {"y"});
  m.Output("y");
  absl::StatusOr<ImportedModel> model = m.Import();
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<HostTensor> out =
      RunOnHost(*model, {Tensor(ir::DType::kI32, {4}, {2, 4, 3, -2}), F32({4}, {10, 0.5, 0.5, 3})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, ir::DType::kI32);
  const double want[] = {1024, 2, 1, -8};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(ReadAsDouble(out[0].Ref(), i), want[i]) << i;
}

TEST(OnnxImport, ABadShapeIsRefusedAtItsNode) {
  ModelMaker m;
  m.Input("a", {2, 3});
  m.Input("b", {4, 5});
  m.Node("MatMul", {"a", "b"}, {"y"});
  m.Output("y");
  absl::Status s = m.Import().status();
  EXPECT_THAT(s.message(), HasSubstr("node y_node (MatMul)"));
}

TEST(OnnxImport, ImportsALongChainWithoutRecursion) {
  ModelMaker m;
  m.Input("x", {4});
  std::string last = "x";
  for (int i = 0; i < 10000; ++i) {
    const std::string next = "t" + std::to_string(i);
    m.Node(i % 2 == 0 ? "Relu" : "Neg", {last}, {next});
    last = next;
  }
  m.Output(last);
  absl::StatusOr<ImportedModel> model = m.Import();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->module.bindings.size(), 10000u);
}

TEST(OnnxImport, WritesAProgramThatParsesAndOneNpyPerConstant) {
  ModelMaker m;
  m.Input("x", {1, 2});
  m.Initializer("w", {2, 2}, {1, 0, 0, 1});
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y");
  absl::StatusOr<ImportedModel> model = m.Import();
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string dir = ::testing::TempDir() + "/onnx_import_write";
  ASSERT_TRUE(WriteImportedModel(*model, dir).ok());
  std::ifstream in(dir + "/program.vdev");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(ir::ParseModule(text).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/w.npy"));
}

}  // namespace
}  // namespace vdev::frontend
