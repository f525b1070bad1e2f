// VirtualDevice construction, predicates, ToDevice and the literal syntax.
#include "vdev/lattice/virtual_device.h"

#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;

VirtualDevice Vd(absl::string_view text) {
  absl::StatusOr<VirtualDevice> d = ParseVirtualDevice(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status();
  return d.ok() ? *d : VirtualDevice();
}

TEST(VirtualDeviceTest, DefaultIsFullyUnconstrained) {
  VirtualDevice d;
  EXPECT_TRUE(d.IsFullyUnconstrained());
  EXPECT_FALSE(d.IsFullyConstrained());
  EXPECT_EQ(d.ToString(), "?");
}

TEST(VirtualDeviceTest, FullyConstrainedNeedsTargetIdAndScope) {
  EXPECT_TRUE(Vd("cuda:0[cuda]/global").IsFullyConstrained());
  EXPECT_FALSE(Vd("cuda:0/global").IsFullyConstrained());
  EXPECT_FALSE(Vd("cuda[cuda]/global").IsFullyConstrained());
  EXPECT_FALSE(Vd("cuda:0[cuda]").IsFullyConstrained());
}

TEST(VirtualDeviceTest, TargetImpliesDeviceType) {
  VirtualDevice d = Vd("*[llvm -mcpu=znver4]");
  EXPECT_EQ(d.device_type(), DeviceType::kCPU);
  EXPECT_EQ(d.ToString(), "cpu[llvm -mcpu=znver4]");
}

TEST(VirtualDeviceTest, DeviceTypeDisagreeingWithTargetIsAnError) {
  size_t offset = 0;
  absl::StatusOr<VirtualDevice> d = ParseVirtualDevice("cpu:0[cuda]", &offset);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("disagrees with target"));
  EXPECT_EQ(offset, 6u);
  EXPECT_FALSE(VirtualDevice::Make(DeviceType::kCPU, 0, *Target::Parse("cuda")).ok());
}

TEST(VirtualDeviceTest, MakeRejectsBadIdsAndScopes) {
  EXPECT_FALSE(VirtualDevice::Make(DeviceType::kCUDA, -2).ok());
  EXPECT_FALSE(VirtualDevice::Make(DeviceType::kCUDA, 0, std::nullopt, "bad scope").ok());
}

TEST(VirtualDeviceTest, ToDeviceNeedsTypeAndId) {
  absl::StatusOr<Device> d = Vd("cuda:3/global").ToDevice();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (Device{DeviceType::kCUDA, 3}));
  EXPECT_EQ(Vd("cuda").ToDevice().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Vd("*:3").ToDevice().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(Vd("/global").ToDevice().status().message()), HasSubstr("no device type"));
}

TEST(VirtualDeviceTest, CanonicalLiteralsRoundTripExactly) {
  for (absl::string_view text :
       {"?", "cpu", "cpu:0", "cuda:3", "*:3", "/global", "/global.texture", "cuda:0/ipc_memory", "cuda[cuda]/global",
        "cuda:0[cuda -arch=sm_90]", "cpu:1[llvm -mcpu=znver4]/global", "rocm:2", "metal", "vulkan:1", "opencl:0",
        "hexagon", "webgpu:0", "cuda:0[cuda -host=llvm]"}) {
    EXPECT_EQ(Vd(text).ToString(), text);
  }
}

TEST(VirtualDeviceTest, NonCanonicalLiteralsPrintCanonically) {
  EXPECT_EQ(Vd("*").ToString(), "?");
  EXPECT_EQ(Vd("cuda:0[cuda  -b=2 -a=1]").ToString(), "cuda:0[cuda -a=1 -b=2]");
  EXPECT_EQ(Vd("*[cuda]").ToString(), "cuda[cuda]");
}

struct BadLiteral {
  const char* text;
  size_t offset;
  const char* message;
};

TEST(VirtualDeviceTest, BadLiteralsReportTheirOffset) {
  for (const BadLiteral& bad : std::vector<BadLiteral>{
           {"cuda:x", 5, "device id"},
           {"gpu:0", 0, "unknown device type 'gpu'"},
           {"cuda:", 5, "device id"},
           {"cuda:0/", 7, "memory scope"},
           {"cuda:0[cuda", 6, "unterminated"},
           {"cuda:0[tpu]", 7, "unknown target kind"},
           {"cuda:0 x", 6, "after device literal"},
           {"cuda:0#", 6, "unexpected"},
           {"", 0, "expected a device literal"},
           {"?x", 1, "unexpected"},
       }) {
    size_t offset = 1234;
    absl::StatusOr<VirtualDevice> d = ParseVirtualDevice(bad.text, &offset);
    ASSERT_FALSE(d.ok()) << bad.text;
    EXPECT_EQ(offset, bad.offset) << bad.text;
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(bad.message)) << bad.text;
  }
}

TEST(VirtualDeviceTest, PrefixParseStopsAtTerminators) {
  size_t consumed = 0;
  absl::StatusOr<VirtualDevice> d = ParseVirtualDevicePrefix("cuda:0[cuda -arch=sm_90]/global, x)", &consumed);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(consumed, 31u);
  EXPECT_EQ(d->memory_scope(), "global");
  ASSERT_TRUE(ParseVirtualDevicePrefix("? {", &consumed).ok());
  EXPECT_EQ(consumed, 1u);
  ASSERT_TRUE(ParseVirtualDevicePrefix("cpu:0)", &consumed).ok());
  EXPECT_EQ(consumed, 5u);
}

TEST(VirtualDeviceTest, HashAndEqualityAreStructural) {
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly({
      VirtualDevice(),
      Vd("cpu:0"),
      Vd("cuda:0"),
      Vd("cuda:1"),
      Vd("cuda:0[cuda]"),
      Vd("cuda:0[cuda -arch=sm_90]"),
      Vd("cuda:0/global"),
      Vd("/global"),
      Vd("*:0"),
  }));
  EXPECT_EQ(Vd("cuda:0[cuda -arch=sm_90]"), Vd("cuda:0[cuda  -arch=sm_90]"));
}

TEST(VirtualDeviceCacheTest, InternSharesEqualDevices) {
  VirtualDeviceCache cache;
  const VirtualDevice& a = cache.Intern(Vd("cuda:0/global"));
  const VirtualDevice& b = cache.Intern(Vd("cuda:0/global"));
  const VirtualDevice& c = cache.Intern(Vd("cuda:1/global"));
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(&cache.Unconstrained(), &cache.Intern(VirtualDevice()));
  EXPECT_EQ(cache.size(), 3u);
}

}  // namespace
}  // namespace vdev
