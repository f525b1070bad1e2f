// The RapidCheck generators of tests/testing/arbitrary.h: what they draw is valid (devices
// round-trip through their literal, programs parse, verify and print to a fixed point) and covers
// the domain.
#include <algorithm>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"
#include "rapidcheck/gtest.h"
#include "testing/arbitrary.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

TEST(SmallDomainTest, HoldsFiftyFourDistinctDevices) {
  std::vector<VirtualDevice> domain = testing::SmallDomain();
  EXPECT_EQ(absl::flat_hash_set<VirtualDevice>(domain.begin(), domain.end()).size(), 54u);
}

RC_GTEST_PROP(ArbitraryTest, DevicesAreInTheDomainAndRoundTrip, (const VirtualDevice& d)) {
  static const std::vector<VirtualDevice> domain = testing::SmallDomain();
  RC_ASSERT(std::find(domain.begin(), domain.end(), d) != domain.end());
  RC_ASSERT(*ParseVirtualDevice(d.ToString()) == d);
}

RC_GTEST_PROP(ArbitraryTest, TargetsRoundTrip, (const Target& t)) { RC_ASSERT(*Target::Parse(t.ToString()) == t); }

RC_GTEST_PROP(ArbitraryTest, ProgramsParseVerifyAndPrintToAFixedPoint, ()) {
  const std::string text = *testing::ProgramText();
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(text, &diag);
  RC_ASSERT(module.ok());
  RC_ASSERT(ir::VerifyModule(*module, &diag).ok());
  const std::string printed = ir::PrintModule(*module);
  absl::StatusOr<ir::Module> again = ir::ParseModule(printed);
  RC_ASSERT(again.ok());
  RC_ASSERT(ir::PrintModule(*again) == printed);
}

}  // namespace
}  // namespace vdev
