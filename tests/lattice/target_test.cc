// Target parsing, canonical printing and interning.
#include "vdev/lattice/target.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vdev {
namespace {

TEST(TargetTest, SeparatelyParsedEqualTargetsAreTheSameObject) {
  absl::StatusOr<Target> a = Target::Parse("cuda -arch=sm_90");
  absl::StatusOr<Target> b = Target::Parse("cuda   -arch=sm_90");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(&a->ToString(), &b->ToString());
}

TEST(TargetTest, OptionOrderDoesNotMatter) {
  EXPECT_EQ(*Target::Parse("llvm -mcpu=znver4 -opt=3"), *Target::Parse("llvm -opt=3 -mcpu=znver4"));
}

TEST(TargetTest, CanonicalPrintSortsOptionsAndRoundTrips) {
  Target t = *Target::Parse("cuda -max_threads=1024 -arch=sm_90 -host=\"llvm -mcpu=znver4\"");
  EXPECT_EQ(t.ToString(), "cuda -arch=sm_90 -max_threads=1024 -host=\"llvm -mcpu=znver4\"");
  EXPECT_EQ(*Target::Parse(t.ToString()), t);
  ASSERT_TRUE(t.host().has_value());
  EXPECT_EQ(t.host()->kind(), TargetKind::kLLVM);
}

TEST(TargetTest, FlagMeansTrue) { EXPECT_EQ(*Target::Parse("llvm -fast"), *Target::Parse("llvm -fast=true")); }

TEST(TargetTest, DifferentOptionsAreDifferentTargets) {
  EXPECT_NE(*Target::Parse("cuda -arch=sm_90"), *Target::Parse("cuda -arch=sm_80"));
  EXPECT_NE(*Target::Parse("cuda"), *Target::Parse("cuda -host=llvm"));
}

TEST(TargetTest, KindsMapToDeviceTypes) {
  EXPECT_EQ(Target::Parse("llvm")->device_type(), DeviceType::kCPU);
  EXPECT_EQ(Target::Parse("cuda")->device_type(), DeviceType::kCUDA);
  EXPECT_EQ(Target::Parse("rocm")->device_type(), DeviceType::kROCm);
  EXPECT_EQ(Target::Parse("metal")->device_type(), DeviceType::kMetal);
  EXPECT_EQ(Target::Parse("vulkan")->device_type(), DeviceType::kVulkan);
  EXPECT_EQ(Target::Parse("opencl")->device_type(), DeviceType::kOpenCL);
  EXPECT_EQ(Target::Parse("hexagon")->device_type(), DeviceType::kHexagon);
  EXPECT_EQ(Target::Parse("webgpu")->device_type(), DeviceType::kWebGPU);
}

TEST(TargetTest, UnknownKindIsAnErrorAtItsOffset) {
  size_t offset = 99;
  absl::StatusOr<Target> t = Target::Parse("  tpu -x=1", &offset);
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(offset, 2u);
  EXPECT_THAT(std::string(t.status().message()), testing::HasSubstr("unknown target kind 'tpu'"));
}

TEST(TargetTest, MalformedOptionsAreErrors) {
  size_t offset = 0;
  EXPECT_FALSE(Target::Parse("cuda arch", &offset).ok());
  EXPECT_EQ(offset, 5u);
  EXPECT_FALSE(Target::Parse("cuda -", &offset).ok());
  EXPECT_FALSE(Target::Parse("cuda -arch=", &offset).ok());
  EXPECT_FALSE(Target::Parse("cuda -a=1 -a=2", &offset).ok());
  EXPECT_FALSE(Target::Parse("cuda -host=\"llvm", &offset).ok());
  EXPECT_FALSE(Target::Parse("cuda -host=\"llvm -host=llvm\"", &offset).ok());
  EXPECT_FALSE(Target::Parse("", &offset).ok());
}

TEST(TargetTest, MakeInternsLikeParse) {
  EXPECT_EQ(Target::Make(TargetKind::kCUDA, {{"arch", "sm_90"}}), *Target::Parse("cuda -arch=sm_90"));
}

}  // namespace
}  // namespace vdev
