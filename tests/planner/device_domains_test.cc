// Device domains: union-find unification with Join, higher-order signatures, collapse, defaulting.
#include "src/planner/device_domains.h"

#include "gtest/gtest.h"

namespace vdev::planner_internal {
namespace {

VirtualDevice Vd(absl::string_view text) { return *ParseVirtualDevice(text); }

class DeviceDomainsTest : public ::testing::Test {
 protected:
  DeviceIndex D(absl::string_view text) { return devices_.Intern(Vd(text)); }
  std::string Show(DomainId d) { return devices_.Get(domains_.Device(d)).ToString(); }

  DeviceTable devices_;
  DeviceDomains domains_{&devices_};
};

TEST_F(DeviceDomainsTest, UnifyJoinsPartialDevices) {
  DomainId a = domains_.MakeFirstOrder(D("cuda"));
  DomainId b = domains_.MakeFirstOrder(D("*:3"));
  DomainId c = domains_.MakeFirstOrder(D("/global"));
  EXPECT_FALSE(domains_.Unify(a, b).has_value());
  EXPECT_FALSE(domains_.Unify(c, b).has_value());
  EXPECT_EQ(Show(a), "cuda:3/global");
  EXPECT_EQ(domains_.Find(a), domains_.Find(c));
}

TEST_F(DeviceDomainsTest, ConflictLeavesBothSidesUnchanged) {
  DomainId a = domains_.MakeFirstOrder(D("cpu:0"));
  DomainId b = domains_.MakeFirstOrder(D("cuda"));
  EXPECT_FALSE(domains_.CanUnify(a, b));
  std::optional<UnifyConflict> conflict = domains_.Unify(a, b);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_FALSE(conflict->arity_mismatch);
  EXPECT_EQ(devices_.Get(conflict->lhs_device).ToString(), "cpu:0");
  EXPECT_EQ(devices_.Get(conflict->rhs_device).ToString(), "cuda");
  EXPECT_NE(domains_.Find(a), domains_.Find(b));
  EXPECT_EQ(Show(a), "cpu:0");
  EXPECT_EQ(Show(b), "cuda");
}

TEST_F(DeviceDomainsTest, CanUnifyChangesNothing) {
  DomainId a = domains_.MakeFirstOrder(D("cuda"));
  DomainId b = domains_.MakeFirstOrder(D("*:1"));
  EXPECT_TRUE(domains_.CanUnify(a, b));
  EXPECT_NE(domains_.Find(a), domains_.Find(b));
  EXPECT_EQ(Show(a), "cuda");
}

TEST_F(DeviceDomainsTest, HigherOrderUnifiesPointwise) {
  DomainId p1 = domains_.MakeFirstOrder(D("cpu:0"));
  DomainId r1 = domains_.MakeFirstOrder();
  DomainId f = domains_.MakeHigherOrder({p1}, r1);
  DomainId p2 = domains_.MakeFirstOrder();
  DomainId r2 = domains_.MakeFirstOrder(D("cuda:0"));
  DomainId g = domains_.MakeHigherOrder({p2}, r2);
  EXPECT_FALSE(domains_.Unify(f, g).has_value());
  EXPECT_EQ(Show(p2), "cpu:0");
  EXPECT_EQ(Show(r1), "cuda:0");
  EXPECT_TRUE(domains_.IsHigherOrder(f));
  EXPECT_EQ(Show(f), "cuda:0");  // a function value reports its result's device
}

TEST_F(DeviceDomainsTest, ArityMismatchIsAConflict) {
  DomainId f = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, domains_.MakeFirstOrder());
  DomainId g = domains_.MakeHigherOrder({}, domains_.MakeFirstOrder());
  std::optional<UnifyConflict> conflict = domains_.Unify(f, g);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_TRUE(conflict->arity_mismatch);
}

TEST_F(DeviceDomainsTest, FirstOrderCollapsesAFunction) {
  DomainId p = domains_.MakeFirstOrder();
  DomainId inner_p = domains_.MakeFirstOrder();
  DomainId inner = domains_.MakeHigherOrder({inner_p}, domains_.MakeFirstOrder());
  DomainId r = domains_.MakeFirstOrder();
  DomainId f = domains_.MakeHigherOrder({p, inner}, r);
  DomainId tuple = domains_.MakeFirstOrder(D("cpu:0"));
  EXPECT_FALSE(domains_.Unify(tuple, f).has_value());
  EXPECT_EQ(Show(p), "cpu:0");
  EXPECT_EQ(Show(r), "cpu:0");
  EXPECT_EQ(Show(inner_p), "cpu:0");  // collapse goes through nested signatures
  EXPECT_FALSE(domains_.IsHigherOrder(f));
}

TEST_F(DeviceDomainsTest, CollapseConflictIsReported) {
  DomainId f = domains_.MakeHigherOrder({domains_.MakeFirstOrder(D("cuda:0"))}, domains_.MakeFirstOrder());
  DomainId tuple = domains_.MakeFirstOrder(D("cpu:0"));
  EXPECT_FALSE(domains_.CanUnify(tuple, f));
  EXPECT_TRUE(domains_.Unify(tuple, f).has_value());
}

TEST_F(DeviceDomainsTest, ConstrainJoinsOrRefuses) {
  DomainId a = domains_.MakeFirstOrder(D("cuda"));
  EXPECT_TRUE(domains_.Constrain(a, D("*:2")));
  EXPECT_EQ(Show(a), "cuda:2");
  EXPECT_FALSE(domains_.Constrain(a, D("cpu")));
  EXPECT_EQ(Show(a), "cuda:2");
}

TEST_F(DeviceDomainsTest, DefaultFillsOnlyUnsetFields) {
  DomainId a = domains_.MakeFirstOrder(D("/shared"));
  domains_.SetDefault(a, D("cuda:0/global"));
  EXPECT_EQ(Show(a), "cuda:0/shared");
}

TEST_F(DeviceDomainsTest, DefaultingHappensOnce) {
  DomainId a = domains_.MakeFirstOrder(D("cuda"));
  domains_.SetDefault(a, D("*:1"));
  domains_.SetDefault(a, D("cuda:2/global"));
  EXPECT_EQ(Show(a), "cuda:1");
}

TEST_F(DeviceDomainsTest, DefaultResultThenParams) {
  DomainId p = domains_.MakeFirstOrder();
  DomainId q = domains_.MakeFirstOrder(D("cpu:0"));
  DomainId r = domains_.MakeFirstOrder(D("*:1"));
  DomainId f = domains_.MakeHigherOrder({p, q}, r);
  domains_.SetDefault(f, D("cuda:0"));
  EXPECT_EQ(Show(r), "cuda:1");
  EXPECT_EQ(Show(p), "cuda:1");  // a parameter takes the result's device
  EXPECT_EQ(Show(q), "cpu:0");
}

TEST_F(DeviceDomainsTest, LongChainsNeedNoRecursion) {
  constexpr int kN = 1'000'000;
  std::vector<DomainId> ids;
  ids.reserve(kN);
  for (int i = 0; i < kN; ++i) ids.push_back(domains_.MakeFirstOrder());
  for (int i = 1; i < kN; ++i) ASSERT_FALSE(domains_.Unify(ids[i - 1], ids[i]).has_value());
  ASSERT_TRUE(domains_.Constrain(ids[kN / 2], D("cpu:0")));
  EXPECT_EQ(Show(ids[0]), "cpu:0");
  EXPECT_EQ(Show(ids[kN - 1]), "cpu:0");
}

TEST_F(DeviceDomainsTest, DeeplyNestedSignaturesUnifyAndDefault) {
  constexpr int kDepth = 20'000;
  auto nest = [&](DeviceIndex leaf) {
    DomainId d = domains_.MakeFirstOrder(leaf);
    for (int i = 0; i < kDepth; ++i) d = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, d);
    return d;
  };
  DomainId a = nest(D("cpu:0"));
  DomainId b = nest(DeviceTable::kUnconstrained);
  ASSERT_FALSE(domains_.Unify(a, b).has_value());
  domains_.SetDefault(b, D("cuda:0"));
  EXPECT_EQ(Show(a), "cpu:0");
  EXPECT_EQ(Show(domains_.Param(a, 0)), "cpu:0");
}

TEST_F(DeviceDomainsTest, ResultLeafIsAskedAgainAfterALinkMovesItsRoot) {
  // ResultLeaf remembers a chain's leaf; a link that makes another domain the leaf's root voids that.
  DomainId leaf = domains_.MakeFirstOrder(D("cuda"));
  DomainId f = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, leaf);
  DomainId g = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, f);
  EXPECT_EQ(Show(g), "cuda");
  EXPECT_EQ(domains_.ResultLeaf(g), leaf);
  // A root of higher rank than the leaf's takes it over in the link.
  DomainId other = domains_.MakeFirstOrder(D("*:3"));
  ASSERT_FALSE(domains_.Unify(other, domains_.MakeFirstOrder()).has_value());
  ASSERT_FALSE(domains_.Unify(leaf, other).has_value());
  EXPECT_EQ(domains_.ResultLeaf(g), domains_.Find(other));
  EXPECT_NE(domains_.ResultLeaf(g), leaf);
  EXPECT_EQ(Show(g), "cuda:3");
  EXPECT_EQ(Show(f), "cuda:3");
}

TEST_F(DeviceDomainsTest, DefaultingAgainAfterALinkReachesTheNewParameters) {
  // SetDefault skips a chain whose parameters it already defaulted, but not once a link changed it.
  DomainId inner = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, domains_.MakeFirstOrder(D("cuda")));
  DomainId outer = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, inner);
  domains_.SetDefault(outer, D("/global"));
  EXPECT_EQ(Show(domains_.Param(outer, 0)), "cuda/global");
  EXPECT_EQ(Show(domains_.Param(inner, 0)), "cuda/global");
  // A signature joined to the inner one after defaulting: its parameter's class gets a new root.
  DomainId fresh = domains_.MakeFirstOrder();
  ASSERT_FALSE(domains_.Unify(domains_.MakeHigherOrder({fresh}, domains_.MakeFirstOrder()), inner).has_value());
  ASSERT_EQ(domains_.Find(fresh), fresh);
  // Defaulting from the outer chain again reaches it (a domain is defaulted once: the later default
  // from *:7 must then change nothing).
  domains_.SetDefault(outer, D("/global"));
  domains_.SetDefault(fresh, D("*:7"));
  EXPECT_EQ(Show(fresh), "cuda/global");
}

TEST_F(DeviceDomainsTest, CurriedChainDefaultedFromEveryLevelGivesEveryParameterTheLeafDevice) {
  // 20,000 signatures each returning the next, defaulted from every level inwards (as PlanDevices
  // does for nested closures); each level's parameter is pushed once, not once per level above it.
  constexpr int kDepth = 20'000;
  std::vector<DomainId> levels;
  DomainId d = domains_.MakeFirstOrder();
  for (int i = 0; i < kDepth; ++i) levels.push_back(d = domains_.MakeHigherOrder({domains_.MakeFirstOrder()}, d));
  for (int i = kDepth; i-- > 0;) domains_.SetDefault(levels[i], D("cuda:2"));
  for (DomainId level : levels) ASSERT_EQ(Show(domains_.Param(level, 0)), "cuda:2");
  EXPECT_EQ(Show(levels.front()), "cuda:2");
}

TEST(DeviceTableTest, JoinAndDefaultAreMemoisedLatticeOps) {
  DeviceTable devices;
  DeviceIndex a = devices.Intern(Vd("cuda"));
  DeviceIndex b = devices.Intern(Vd("*:3"));
  EXPECT_EQ(devices.Get(*devices.Join(a, b)).ToString(), "cuda:3");
  EXPECT_EQ(devices.Join(a, b), devices.Join(b, a));
  EXPECT_FALSE(devices.Join(a, devices.Intern(Vd("cpu"))).has_value());
  EXPECT_EQ(devices.Get(devices.Default(a, devices.Intern(Vd("cpu:1")))).ToString(), "cuda:1");
  EXPECT_EQ(devices.Intern(Vd("cuda")), a);
}

}  // namespace
}  // namespace vdev::planner_internal
