// Join and Default: every documented case by example, and every law exhaustively over a small domain.
#include "gtest/gtest.h"
#include "testing/arbitrary.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev {
namespace {

VirtualDevice Vd(absl::string_view text) { return *ParseVirtualDevice(text); }
std::string JoinText(absl::string_view a, absl::string_view b) {
  std::optional<VirtualDevice> joined = Join(Vd(a), Vd(b));
  return joined ? joined->ToString() : "none";
}
std::string DefaultText(absl::string_view a, absl::string_view b) { return Default(Vd(a), Vd(b)).ToString(); }

TEST(JoinTest, MergesDisjointFields) {
  EXPECT_EQ(JoinText("cuda:3", "cuda[cuda]/global"), "cuda:3[cuda]/global");
  EXPECT_EQ(JoinText("*:3", "cuda"), "cuda:3");
  EXPECT_EQ(JoinText("/global", "cpu:0"), "cpu:0/global");
}

TEST(JoinTest, ConflictingFieldsGiveNone) {
  EXPECT_EQ(JoinText("cuda:3", "cuda:4"), "none");
  EXPECT_EQ(JoinText("cpu", "cuda"), "none");
  EXPECT_EQ(JoinText("/global", "/ipc_memory"), "none");
  EXPECT_EQ(JoinText("cuda[cuda -arch=sm_90]", "cuda[cuda -arch=sm_80]"), "none");
}

TEST(JoinTest, TargetImpliedTypeConflicts) { EXPECT_EQ(JoinText("cpu", "*[cuda]"), "none"); }

TEST(JoinTest, StructurallyEqualTargetsJoin) {
  // TVM compares targets by reference; these two are built separately and must join.
  VirtualDevice a = *VirtualDevice::Make(DeviceType::kCUDA, 0, *Target::Parse("cuda -arch=sm_90"));
  VirtualDevice b =
      *VirtualDevice::Make(DeviceType::kCUDA, -1, Target::Make(TargetKind::kCUDA, {{"arch", "sm_90"}}), "global");
  std::optional<VirtualDevice> joined = Join(a, b);
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->ToString(), "cuda:0[cuda -arch=sm_90]/global");
}

TEST(JoinTest, UnconstrainedIsIdentity) {
  EXPECT_EQ(JoinText("?", "cuda:0/global"), "cuda:0/global");
  EXPECT_EQ(JoinText("?", "?"), "?");
}

TEST(DefaultTest, TakesLhsFieldsWhereSet) {
  EXPECT_EQ(DefaultText("cuda", "cpu:0/global"), "cuda:0/global");
  EXPECT_EQ(DefaultText("cuda:1", "cuda:0"), "cuda:1");
  EXPECT_EQ(DefaultText("/ipc_memory", "cuda:0/global"), "cuda:0/ipc_memory");
}

TEST(DefaultTest, TakesRhsTargetOnlyWhenTypesMatch) {
  EXPECT_EQ(DefaultText("cpu", "cuda:0[cuda]"), "cpu:0");
  EXPECT_EQ(DefaultText("cuda", "cuda:0[cuda]"), "cuda:0[cuda]");
  EXPECT_EQ(DefaultText("?", "cuda:0[cuda]"), "cuda:0[cuda]");
  EXPECT_EQ(DefaultText("cuda[cuda -arch=sm_90]", "cuda:0[cuda]"), "cuda:0[cuda -arch=sm_90]");
}

TEST(DefaultTest, ConflictingFieldsKeepLhs) { EXPECT_EQ(DefaultText("cuda:3", "cuda:4"), "cuda:3"); }

// Exhaustive checks over all 54 devices of the small domain: every pair and triple.
class LatticeExhaustiveTest : public ::testing::Test {
 protected:
  std::vector<VirtualDevice> domain_ = testing::SmallDomain();
};

TEST_F(LatticeExhaustiveTest, DomainCoversEveryFieldCombination) { EXPECT_EQ(domain_.size(), 54u); }

TEST_F(LatticeExhaustiveTest, JoinIsCommutativeIdempotentWithIdentity) {
  for (const VirtualDevice& a : domain_) {
    EXPECT_EQ(Join(a, a), a);
    EXPECT_EQ(Join(a, VirtualDevice()), a);
    for (const VirtualDevice& b : domain_) EXPECT_EQ(Join(a, b), Join(b, a)) << a << " " << b;
  }
}

TEST_F(LatticeExhaustiveTest, JoinIsAssociative) {
  int defined = 0;
  for (const VirtualDevice& a : domain_)
    for (const VirtualDevice& b : domain_)
      for (const VirtualDevice& c : domain_) {
        std::optional<VirtualDevice> ab = Join(a, b), bc = Join(b, c);
        std::optional<VirtualDevice> left = ab ? Join(*ab, c) : std::nullopt;
        std::optional<VirtualDevice> right = bc ? Join(a, *bc) : std::nullopt;
        ASSERT_EQ(left, right) << a << " " << b << " " << c;
        defined += left.has_value();
      }
  EXPECT_GT(defined, 0);
}

TEST_F(LatticeExhaustiveTest, JoinIsTheLeastUpperBound) {
  // Join(a, b) is below every device above both a and b (in the information order d ⊑ e iff
  // Join(d, e) == e).
  for (const VirtualDevice& a : domain_)
    for (const VirtualDevice& b : domain_) {
      std::optional<VirtualDevice> joined = Join(a, b);
      for (const VirtualDevice& upper : domain_) {
        bool above_both = Join(a, upper) == upper && Join(b, upper) == upper;
        if (!above_both) continue;
        ASSERT_TRUE(joined.has_value()) << a << " " << b << " under " << upper;
        EXPECT_EQ(Join(*joined, upper), upper);
      }
    }
}

TEST_F(LatticeExhaustiveTest, DefaultLaws) {
  for (const VirtualDevice& a : domain_) {
    EXPECT_EQ(Default(a, VirtualDevice()), a);
    EXPECT_EQ(Default(VirtualDevice(), a), a);
    EXPECT_EQ(Default(a, a), a);
    for (const VirtualDevice& b : domain_) {
      VirtualDevice d = Default(a, b);
      EXPECT_EQ(Default(d, b), d);
      EXPECT_TRUE(Join(d, a).has_value() && *Join(d, a) == d) << a << " " << b;
      if (std::optional<VirtualDevice> joined = Join(a, b)) EXPECT_EQ(d, *joined) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace vdev
