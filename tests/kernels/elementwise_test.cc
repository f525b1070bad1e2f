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
    {{3, 7}, {3, 7}, {3, 7}},  {{3, 7}, {7}, {3, 7}},
    {{3, 1}, {1, 7}, {3, 7}},  {{}, {2, 3}, {2, 3}},
    {{129}, {}, {129}},        {{2, 1, 5}, {3, 1}, {2, 3, 5}},
    {{1}, {1}, {1}},           {{}, {}, {}},
    {{0, 3}, {3}, {0, 3}},     {{4, 1, 1, 3}, {1, 5, 2, 1}, {4, 5, 2, 3}},
    {{7, 1}, {129}, {7, 129}},
};

// +, -, * and / of values of one dtype, computed exactly in double and rounded once to the dtype,
// are what the kernel stores: the f32 computation's double rounding is innocuous for them. For f64
// the double operation itself is the kernel's (IEEE + - * / round correctly, so bit for bit).
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
TEST(ElementwiseTest, F64ArithmeticBroadcastsInDoublePrecision) {
  CheckBinary("add", std::plus<double>(), DType::kF64);
  CheckBinary("subtract", std::minus<double>(), DType::kF64);
  CheckBinary("multiply", std::multiplies<double>(), DType::kF64);
  CheckBinary("divide", std::divides<double>(), DType::kF64);
  // 1 + 2^-40 is 1 in f32: a kernel computing in f32 would store 2 here, not 2 + 2^-40.
  const double tiny = std::ldexp(1.0, -40);
  HostTensor a = Make(DType::kF64, {}, {1.0 + tiny}), b = Make(DType::kF64, {}, {1.0}), out = a;
  ASSERT_TRUE(RunKernel("add", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Read(out, 0), 2.0 + tiny);
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

// u8 and i8 wrap around like their unsigned arithmetic modulo 256; the results are exact.
TEST(ElementwiseTest, SmallIntegerArithmeticWrapsAround) {
  HostTensor a = Make(DType::kU8, {4}, {250, 3, 0, 200}), b = Make(DType::kU8, {4}, {10, 5, 1, 2});
  HostTensor out = HostTensor::Zeros(DType::kU8, {4});
  ASSERT_TRUE(RunKernel("add", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Values(out), (std::vector<double>{4, 8, 1, 202}));
  ASSERT_TRUE(RunKernel("subtract", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Values(out), (std::vector<double>{240, 254, 255, 198}));
  ASSERT_TRUE(RunKernel("multiply", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Values(out), (std::vector<double>{196, 15, 0, 144}));  // 2500 and 400 mod 256
  HostTensor c = Make(DType::kI8, {3}, {127, -128, 100}), d = Make(DType::kI8, {3}, {1, -1, 3});
  HostTensor i8 = HostTensor::Zeros(DType::kI8, {3});
  ASSERT_TRUE(RunKernel("add", {&c, &d}, {&i8}).ok());
  EXPECT_EQ(Values(i8), (std::vector<double>{-128, 127, 103}));
  ASSERT_TRUE(RunKernel("multiply", {&c, &d}, {&i8}).ok());
  EXPECT_EQ(Values(i8), (std::vector<double>{127, -128, 44}));  // 128 and 300 wrap
}

// Integer division truncates toward zero; x / 0 is 0 and MIN / -1 wraps to MIN.
TEST(ElementwiseTest, IntegerDivideTruncatesTowardZero) {
  HostTensor a = Make(DType::kI32, {6}, {7, -7, 7, -7, 5, -2147483648.0}),
             b = Make(DType::kI32, {6}, {2, 2, -2, -2, 0, -1});
  HostTensor out = HostTensor::Zeros(DType::kI32, {6});
  ASSERT_TRUE(RunKernel("divide", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Values(out), (std::vector<double>{3, -3, -3, 3, 0, -2147483648.0}));
  HostTensor u = Make(DType::kU8, {3}, {255, 7, 9}), v = Make(DType::kU8, {}, {2}),
             q = HostTensor::Zeros(DType::kU8, {3});
  ASSERT_TRUE(RunKernel("divide", {&u, &v}, {&q}).ok());
  EXPECT_EQ(Values(q), (std::vector<double>{127, 3, 4}));
}

// Integer power is exact where it fits and wraps where it does not; a negative exponent truncates
// 1 / base^-e (0 unless |base| is 1).
TEST(ElementwiseTest, IntegerPowerIsExactAndWraps) {
  HostTensor a = Make(DType::kI64, {8}, {2, 3, -2, 0, 1, -1, -1, 5}),
             b = Make(DType::kI64, {8}, {10, 4, 3, 0, -5, 3, -4, -1});
  HostTensor out = HostTensor::Zeros(DType::kI64, {8});
  ASSERT_TRUE(RunKernel("power", {&a, &b}, {&out}).ok());
  EXPECT_EQ(Values(out), (std::vector<double>{1024, 81, -8, 1, 1, -1, 1, 0}));
  HostTensor x = Make(DType::kI32, {2}, {3, 2}), e = Make(DType::kI32, {2}, {20, 31}),
             y = HostTensor::Zeros(DType::kI32, {2});
  ASSERT_TRUE(RunKernel("power", {&x, &e}, {&y}).ok());
  EXPECT_EQ(Values(y), (std::vector<double>{3486784401.0 - 4294967296.0, -2147483648.0}));  // mod 2^32
  HostTensor s = Make(DType::kU8, {2}, {3, 2}), t = Make(DType::kU8, {2}, {5, 8}),
             z = HostTensor::Zeros(DType::kU8, {2});
  ASSERT_TRUE(RunKernel("power", {&s, &t}, {&z}).ok());
  EXPECT_EQ(Values(z), (std::vector<double>{243, 0}));
}

// maximum and minimum of f64, i8 and u8 are exact selections; f64 NaN propagates from either side.
TEST(ElementwiseTest, MaximumAndMinimumOfF64AndSmallIntegers) {
  const double nan = std::nan("");
  HostTensor a = Make(DType::kF64, {3}, {1.0 + std::ldexp(1.0, -40), nan, 2}), b = Make(DType::kF64, {3}, {1, 0, nan});
  HostTensor hi = a, lo = a;
  ASSERT_TRUE(RunKernel("maximum", {&a, &b}, {&hi}).ok());
  ASSERT_TRUE(RunKernel("minimum", {&a, &b}, {&lo}).ok());
  EXPECT_EQ(Read(hi, 0), 1.0 + std::ldexp(1.0, -40));
  EXPECT_EQ(Read(lo, 0), 1.0);
  for (int64_t i : {1, 2}) EXPECT_TRUE(std::isnan(Read(hi, i)) && std::isnan(Read(lo, i))) << i;
  HostTensor c = Make(DType::kI8, {2}, {-128, 127}), d = Make(DType::kI8, {2}, {-1, 0}), i8 = c;
  ASSERT_TRUE(RunKernel("maximum", {&c, &d}, {&i8}).ok());
  EXPECT_EQ(Values(i8), (std::vector<double>{-1, 127}));
  HostTensor u = Make(DType::kU8, {2}, {255, 0}), v = Make(DType::kU8, {2}, {1, 128}), u8 = u;
  ASSERT_TRUE(RunKernel("minimum", {&u, &v}, {&u8}).ok());
  EXPECT_EQ(Values(u8), (std::vector<double>{1, 0}));
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
  HostTensor flags = HostTensor::Zeros(DType::kBool, {3}), flags_out = flags;
  absl::Status s = RunKernel("add", {&flags, &flags}, {&flags_out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'add'"), std::string::npos) << s;
  s = RunKernel("divide", {&flags, &flags}, {&flags_out});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'divide'"), std::string::npos) << s;
  HostTensor i32 = HostTensor::Zeros(DType::kI32, {3}), i32_out = i32;
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
