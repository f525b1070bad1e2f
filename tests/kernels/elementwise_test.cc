// The element-wise CPU kernels against double-precision references: broadcasting shapes, 0-d
// operands, every float dtype, integer wrap-around, and the errors.
#include <cmath>
#include <functional>

#include "kernels/kernel_test_util.h"

namespace vdev::testing {
namespace {

struct BroadcastCase {
  Shape a, b, out;
};

const BroadcastCase kBroadcastCases[] = {
    {{3, 7}, {3, 7}, {3, 7}},       {{3, 7}, {7}, {3, 7}},         {{3, 1}, {1, 7}, {3, 7}},
    {{}, {2, 3}, {2, 3}},           {{129}, {}, {129}},            {{2, 1, 5}, {3, 1}, {2, 3, 5}},
    {{1}, {1}, {1}},                {{}, {}, {}},                  {{0, 3}, {3}, {0, 3}},
    {{4, 1, 1, 3}, {1, 5, 2, 1}, {4, 5, 2, 3}}, {{7, 1}, {129}, {7, 129}},
};

// +, -, * and / of values of one dtype, computed exactly in double and rounded once to the dtype,
// are what the kernel stores: the f32 computation's double rounding is innocuous for them.
void CheckBinary(absl::string_view op, std::function<double(double, double)> f, DType dtype) {
  for (const BroadcastCase& c : kBroadcastCases) {
    HostTensor a = Random(dtype, c.a, 1), b = Random(dtype, c.b, 2, 0.25, 3.0);
    HostTensor out = HostTensor::Zeros(dtype, c.out);
    ASSERT_TRUE(RunKernel(op, {&a, &b}, {&out}).ok()) << op;
    HostTensor want = HostTensor::Zeros(dtype, c.out);
    for (int64_t i = 0; i < out.NumElements(); ++i)
      Write(want, i, f(Read(a, BroadcastSource(c.out, c.a, i)), Read(b, BroadcastSource(c.out, c.b, i))));
    EXPECT_EQ(out.bytes, want.bytes) << op << " " << DTypeLabel(dtype) << " " << c.a.size() << "/" << c.b.size();
  }
}

TEST(ElementwiseTest, AddBroadcastsInEveryFloatDType) {
  for (DType d : kFloatDTypes) CheckBinary("add", std::plus<double>(), d);
}
TEST(ElementwiseTest, SubtractBroadcastsInEveryFloatDType) {
  for (DType d : kFloatDTypes) CheckBinary("subtract", std::minus<double>(), d);
}
TEST(ElementwiseTest, MultiplyBroadcastsInEveryFloatDType) {
  for (DType d : kFloatDTypes) CheckBinary("multiply", std::multiplies<double>(), d);
}
TEST(ElementwiseTest, DivideBroadcastsInEveryFloatDType) {
  for (DType d : kFloatDTypes) CheckBinary("divide", std::divides<double>(), d);
}
TEST(ElementwiseTest, IntegerArithmeticBroadcasts) {
  for (DType d : {DType::kI32, DType::kI64}) {
    CheckBinary("add", std::plus<double>(), d);
    CheckBinary("subtract", std::minus<double>(), d);
    CheckBinary("multiply", std::multiplies<double>(), d);
  }
}

TEST(ElementwiseTest, IntegerAdditionWrapsAround) {
  HostTensor a = Make(DType::kI32, {2}, {2147483647.0, -2147483648.0}), b = Make(DType::kI32, {}, {1});
  HostTensor out = HostTensor::Zeros(DType::kI32, {2});
  ASSERT_TRUE(RunKernel("add", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Read(out, 0), -2147483648.0);
  EXPECT_EQ(Read(out, 1), -2147483647.0);
}

TEST(ElementwiseTest, ScalarOperandOnEitherSide) {
  HostTensor x = Random(DType::kF16, {3, 7}, 5), half = Make(DType::kF16, {}, {0.5});
  HostTensor left = HostTensor::Zeros(DType::kF16, {3, 7}), right = left;
  ASSERT_TRUE(RunKernel("subtract", {&half, &x}, {&left}).ok());
  ASSERT_TRUE(RunKernel("subtract", {&x, &half}, {&right}).ok());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    EXPECT_EQ(Read(left, i), -Read(right, i)) << i;
    EXPECT_EQ(Read(right, i), static_cast<double>(HalfToFloat(FloatToHalf(static_cast<float>(Read(x, i) - 0.5)))));
  }
}

struct UnaryCase {
  const char* op;
  std::function<double(double)> f;
};

double Gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double GeluTanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST(ElementwiseTest, UnaryOpsMatchDoubleReference) {
  const UnaryCase cases[] = {
      {"relu", [](double x) { return x < 0 ? 0.0 : x; }},
      {"nn.relu", [](double x) { return x < 0 ? 0.0 : x; }},
      {"gelu", Gelu},
      {"silu", [](double x) { return x * Sigmoid(x); }},
      {"exp", [](double x) { return std::exp(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", Sigmoid},
      {"negative", [](double x) { return -x; }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
  };
  for (DType d : kFloatDTypes) {
    for (const UnaryCase& c : cases) {
      const bool positive = std::string(c.op).find("sqrt") != std::string::npos;
      for (Shape shape : {Shape{}, Shape{1}, Shape{129}, Shape{3, 7}}) {
        HostTensor x = Random(d, shape, 7, positive ? 0.01 : -6.0, 6.0);
        HostTensor out = HostTensor::Zeros(d, shape);
        ASSERT_TRUE(RunKernel(c.op, {&x}, {&out}).ok()) << c.op;
        std::vector<double> want;
        for (double v : Values(x)) want.push_back(c.f(v));
        // f32 math (libm's float functions: tens of f32 ulps at most) then one rounding to the dtype.
        ExpectNear(out, want, Ulp(d) + 32 * Ulp(DType::kF32), Tiny(d), absl::StrCat(c.op, " ", DTypeLabel(d)));
      }
    }
  }
}

TEST(ElementwiseTest, GeluTanhFormByAttribute) {
  HostTensor x = Random(DType::kF32, {129}, 3, -5, 5), erf_out = HostTensor::Zeros(DType::kF32, {129});
  HostTensor tanh_out = erf_out;
  KernelAttrs attrs;
  attrs.Set("approximate", std::string("tanh"));
  ASSERT_TRUE(RunKernel("gelu", {&x}, {&tanh_out}, attrs).ok());
  ASSERT_TRUE(RunKernel("gelu", {&x}, {&erf_out}).ok());
  std::vector<double> want;
  for (double v : Values(x)) want.push_back(GeluTanh(v));
  ExpectNear(tanh_out, want, 1e-5, 1e-6);
  EXPECT_NE(tanh_out.bytes, erf_out.bytes);
  attrs.Set("approximate", std::string("cubic"));
  EXPECT_EQ(RunKernel("gelu", {&x}, {&tanh_out}, attrs).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, UnsupportedDTypesAreErrorsNamingTheOp) {
  HostTensor i8 = HostTensor::Zeros(DType::kI8, {3}), i8_out = i8;
  absl::Status s = RunKernel("add", {&i8, &i8}, {&i8_out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'add'"), std::string::npos) << s;
  HostTensor i32 = HostTensor::Zeros(DType::kI32, {3}), i32_out = i32;
  s = RunKernel("divide", {&i32, &i32}, {&i32_out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'divide'"), std::string::npos) << s;
  s = RunKernel("exp", {&i32}, {&i32_out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'exp'"), std::string::npos) << s;
}

TEST(ElementwiseTest, ShapeAndDTypeMismatchesAreErrors) {
  HostTensor a = HostTensor::Zeros(DType::kF32, {3, 7}), b = HostTensor::Zeros(DType::kF32, {5});
  HostTensor out = HostTensor::Zeros(DType::kF32, {3, 7});
  EXPECT_EQ(RunKernel("add", {&a, &b}, {&out}).code(), absl::StatusCode::kInvalidArgument);  // 7 vs 5
  HostTensor wrong_out = HostTensor::Zeros(DType::kF32, {3, 8});
  EXPECT_EQ(RunKernel("add", {&a, &a}, {&wrong_out}).code(), absl::StatusCode::kInvalidArgument);
  HostTensor f16 = HostTensor::Zeros(DType::kF16, {3, 7});
  EXPECT_EQ(RunKernel("multiply", {&a, &f16}, {&out}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunKernel("relu", {&a}, {&wrong_out}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunKernel("relu", {&a, &a}, {&out}).code(), absl::StatusCode::kInvalidArgument);  // arity
}

}  // namespace
}  // namespace vdev::testing
