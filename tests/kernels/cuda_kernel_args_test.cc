// The CUDA kernels' registration and argument checks, which need no GPU: every op of kernels.h's
// list has a CUDA kernel (and a CPU one), registration is idempotent, and a call the kernel cannot
// do is an InvalidArgument naming the op before anything is launched (the tensors here point
// nowhere, so a launch would fail differently).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vdev/kernels/cuda_kernels.h"

namespace vdev {
namespace {

using ir::DType;

// kernels.h's op list.
const char* const kOps[] = {"matmul", "add",     "subtract",   "multiply",   "divide",    "relu",      "nn.relu",
                            "gelu",   "silu",    "exp",        "tanh",       "sigmoid",   "negative",  "sqrt",
                            "rsqrt",  "softmax", "nn.softmax", "layer_norm", "rms_norm",  "transpose", "concatenate",
                            "concat", "split",   "cast",       "take",       "attention", "silu_mul"};

TEST(CudaKernelRegistrationTest, EveryOpOfTheListHasACudaKernelAndACpuKernel) {
  KernelRegistry registry;
  RegisterCudaKernels(registry);
  for (const char* op : kOps) {
    EXPECT_NE(registry.Find(op, DeviceType::kCUDA), nullptr) << op;
    EXPECT_NE(KernelRegistry::Global().Find(op, DeviceType::kCPU), nullptr) << op;
  }
}

TEST(CudaKernelRegistrationTest, RegisteringTwiceKeepsTheFirstKernels) {
  KernelRegistry registry;
  RegisterCudaKernels(registry);
  const std::vector<std::string> ops = registry.Ops(DeviceType::kCUDA);
  const KernelFn add = registry.Find("add", DeviceType::kCUDA);
  RegisterCudaKernels(registry);
  EXPECT_EQ(registry.Ops(DeviceType::kCUDA), ops);
  EXPECT_EQ(registry.Find("add", DeviceType::kCUDA), add);
  EXPECT_TRUE(registry.Ops(DeviceType::kCPU).empty()) << "only CUDA kernels are added";
}

class CudaKernelArgsTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterCudaKernels(registry_); }

  // The status of `op` on tensors that point nowhere, with no stream and no backend.
  absl::Status Call(absl::string_view op, std::vector<TensorRef> in, std::vector<TensorRef> out,
                    const KernelAttrs& attrs = {}) {
    KernelContext context{.device_type = DeviceType::kCUDA};
    return registry_.Find(
        op, DeviceType::kCUDA)(KernelCall{.inputs = in, .outputs = out, .attrs = &attrs, .context = &context});
  }

  static TensorRef T(DType dtype, Shape shape) { return TensorRef{nullptr, dtype, std::move(shape)}; }

  // Expects InvalidArgument whose message names the op and contains `words`.
  static void ExpectRefused(const absl::Status& s, absl::string_view op, absl::string_view words) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(absl::StrCat(op, " (cuda)")), absl::string_view::npos) << s;
    EXPECT_NE(s.message().find(words), absl::string_view::npos) << s;
  }

  KernelRegistry registry_;
};

TEST_F(CudaKernelArgsTest, MatmulWithDifferentInnerDimsIsRefused) {
  ExpectRefused(Call("matmul", {T(DType::kF16, {4, 5}), T(DType::kF16, {6, 3})}, {T(DType::kF16, {4, 3})}), "matmul",
                "inner dimensions");
}

TEST_F(CudaKernelArgsTest, MatmulBatchDimsThatDoNotBroadcastAreRefused) {
  ExpectRefused(Call("matmul", {T(DType::kF32, {2, 4, 5}), T(DType::kF32, {3, 5, 3})}, {T(DType::kF32, {2, 4, 3})}),
                "matmul", "do not broadcast");
}

TEST_F(CudaKernelArgsTest, MatmulOfIntegersIsRefused) {
  ExpectRefused(Call("matmul", {T(DType::kI32, {4, 5}), T(DType::kI32, {5, 3})}, {T(DType::kI32, {4, 3})}), "matmul",
                "i32");
}

TEST_F(CudaKernelArgsTest, MatmulWithoutABackendIsRefused) {
  ExpectRefused(Call("matmul", {T(DType::kF16, {4, 5}), T(DType::kF16, {5, 3})}, {T(DType::kF16, {4, 3})}), "matmul",
                "no CUDA backend");
}

TEST_F(CudaKernelArgsTest, OperandsThatDoNotBroadcastAreRefused) {
  ExpectRefused(Call("add", {T(DType::kF32, {4, 5}), T(DType::kF32, {3})}, {T(DType::kF32, {4, 5})}), "add",
                "do not broadcast");
}

TEST_F(CudaKernelArgsTest, BoolDivideIsRefused) {
  ExpectRefused(Call("divide", {T(DType::kBool, {4}), T(DType::kBool, {4})}, {T(DType::kBool, {4})}), "divide", "bool");
}

TEST_F(CudaKernelArgsTest, AttentionHeadOver256IsRefused) {
  ExpectRefused(Call("attention", {T(DType::kF16, {2, 3, 1, 264})}, {T(DType::kF16, {2, 1, 264})}), "attention",
                "head size 264");
}

TEST_F(CudaKernelArgsTest, AttentionNeedsQkvOfShapeT3HD) {
  ExpectRefused(Call("attention", {T(DType::kBF16, {2, 2, 1, 64})}, {T(DType::kBF16, {2, 1, 64})}), "attention",
                "[T,3,H,D]");
}

TEST_F(CudaKernelArgsTest, TakeWithFloatIndicesIsRefused) {
  ExpectRefused(Call("take", {T(DType::kF32, {10, 4}), T(DType::kF32, {3})}, {T(DType::kF32, {3, 4})}), "take",
                "indices must be i32 or i64");
}

TEST_F(CudaKernelArgsTest, CastWhoseAttributeDisagreesWithTheOutputIsRefused) {
  KernelAttrs attrs;
  attrs.Set("dtype", std::string("f16"));
  ExpectRefused(Call("cast", {T(DType::kF32, {4})}, {T(DType::kBF16, {4})}, attrs), "cast", "dtype=f16");
}

TEST_F(CudaKernelArgsTest, SplitIntoUnequalSectionsIsRefused) {
  KernelAttrs attrs;
  attrs.Set("indices_or_sections", int64_t{3});
  ExpectRefused(Call("split", {T(DType::kF32, {8, 2})}, {T(DType::kF32, {4, 2}), T(DType::kF32, {4, 2})}, attrs),
                "split", "equal sections");
}

TEST_F(CudaKernelArgsTest, TransposeAxesThatAreNoPermutationAreRefused) {
  KernelAttrs attrs;
  attrs.Set("axes", std::vector<int64_t>{0, 0});
  ExpectRefused(Call("transpose", {T(DType::kF32, {2, 3})}, {T(DType::kF32, {2, 2})}, attrs), "transpose",
                "not a permutation");
}

TEST_F(CudaKernelArgsTest, NormWithAGammaOfTheWrongLengthIsRefused) {
  ExpectRefused(Call("rms_norm", {T(DType::kBF16, {4, 8}), T(DType::kBF16, {7})}, {T(DType::kBF16, {4, 8})}),
                "rms_norm", "gamma has shape [7]");
}

TEST_F(CudaKernelArgsTest, SiluMulOfAnOddLastAxisIsRefused) {
  ExpectRefused(Call("silu_mul", {T(DType::kF16, {4, 7})}, {T(DType::kF16, {4, 3})}), "silu_mul", "even size");
}

TEST_F(CudaKernelArgsTest, ConcatenatedPartsMustAddUpToTheOutput) {
  KernelAttrs attrs;
  attrs.Set("axis", int64_t{1});
  ExpectRefused(Call("concat", {T(DType::kI64, {2, 3}), T(DType::kI64, {2, 4})}, {T(DType::kI64, {2, 8})}, attrs),
                "concat", "add up to 7, not 8");
}

}  // namespace
}  // namespace vdev
