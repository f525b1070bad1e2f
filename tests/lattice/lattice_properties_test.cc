// The laws of Join and Default (virtual_device.h), as RapidCheck properties over generated devices.
// CMake runs these with RC_PARAMS=max_success=1000 (VDEV_RC_CASES), so each law sees at least 1,000
// cases in the main build (250 in the sanitizer build, which looks for memory errors).
#include "gtest/gtest.h"
#include "rapidcheck/gtest.h"
#include "testing/arbitrary.h"
#include "vdev/lattice/virtual_device.h"

namespace vdev {
namespace {

// Each field set in `part` has the same value in `whole`.
bool AgreesOnSetFields(const VirtualDevice& whole, const VirtualDevice& part) {
  return (!part.has_device_type() || part.device_type() == whole.device_type()) &&
         (!part.has_id() || part.virtual_device_id() == whole.virtual_device_id()) &&
         (!part.has_target() || part.target() == whole.target()) &&
         (!part.has_memory_scope() || part.memory_scope() == whole.memory_scope());
}

bool FieldsConflict(const VirtualDevice& a, const VirtualDevice& b) {
  return (a.has_device_type() && b.has_device_type() && a.device_type() != b.device_type()) ||
         (a.has_id() && b.has_id() && a.virtual_device_id() != b.virtual_device_id()) ||
         (a.has_target() && b.has_target() && a.target() != b.target()) ||
         (a.has_memory_scope() && b.has_memory_scope() && a.memory_scope() != b.memory_scope());
}

RC_GTEST_PROP(JoinLaws, IsCommutative, (const VirtualDevice& a, const VirtualDevice& b)) {
  RC_ASSERT(Join(a, b) == Join(b, a));
}

RC_GTEST_PROP(JoinLaws, IsAssociativeWhereDefined,
              (const VirtualDevice& a, const VirtualDevice& b, const VirtualDevice& c)) {
  std::optional<VirtualDevice> ab = Join(a, b);
  std::optional<VirtualDevice> bc = Join(b, c);
  std::optional<VirtualDevice> left = ab ? Join(*ab, c) : std::nullopt;
  std::optional<VirtualDevice> right = bc ? Join(a, *bc) : std::nullopt;
  RC_CLASSIFY(left.has_value(), "defined");
  RC_ASSERT(left == right);
}

RC_GTEST_PROP(JoinLaws, IsIdempotent, (const VirtualDevice& a)) { RC_ASSERT(Join(a, a) == a); }

RC_GTEST_PROP(JoinLaws, UnconstrainedIsTheIdentity, (const VirtualDevice& a)) {
  RC_ASSERT(Join(a, VirtualDevice()) == a);
  RC_ASSERT(Join(VirtualDevice(), a) == a);
}

RC_GTEST_PROP(JoinLaws, ResultAgreesWithBothOperands, (const VirtualDevice& a, const VirtualDevice& b)) {
  std::optional<VirtualDevice> joined = Join(a, b);
  RC_PRE(joined.has_value());
  RC_ASSERT(AgreesOnSetFields(*joined, a));
  RC_ASSERT(AgreesOnSetFields(*joined, b));
}

RC_GTEST_PROP(JoinLaws, DefinedIffNoFieldConflicts, (const VirtualDevice& a, const VirtualDevice& b)) {
  RC_CLASSIFY(FieldsConflict(a, b), "conflict");
  RC_ASSERT(Join(a, b).has_value() == !FieldsConflict(a, b));
}

RC_GTEST_PROP(JoinLaws, ResultSetsOnlyFieldsAnOperandSets, (const VirtualDevice& a, const VirtualDevice& b)) {
  std::optional<VirtualDevice> joined = Join(a, b);
  RC_PRE(joined.has_value());
  RC_ASSERT(joined->has_device_type() == (a.has_device_type() || b.has_device_type()));
  RC_ASSERT(joined->has_id() == (a.has_id() || b.has_id()));
  RC_ASSERT(joined->has_target() == (a.has_target() || b.has_target()));
  RC_ASSERT(joined->has_memory_scope() == (a.has_memory_scope() || b.has_memory_scope()));
}

RC_GTEST_PROP(DefaultLaws, UnconstrainedRhsIsIdentity, (const VirtualDevice& a)) {
  RC_ASSERT(Default(a, VirtualDevice()) == a);
}

RC_GTEST_PROP(DefaultLaws, UnconstrainedLhsGivesRhs, (const VirtualDevice& b)) {
  RC_ASSERT(Default(VirtualDevice(), b) == b);
}

RC_GTEST_PROP(DefaultLaws, AgreesWithLhsOnItsSetFields, (const VirtualDevice& a, const VirtualDevice& b)) {
  RC_ASSERT(AgreesOnSetFields(Default(a, b), a));
}

RC_GTEST_PROP(DefaultLaws, IsIdempotentInItsFirstArgument, (const VirtualDevice& a, const VirtualDevice& b)) {
  VirtualDevice once = Default(a, b);
  RC_ASSERT(Default(once, b) == once);
}

RC_GTEST_PROP(DefaultLaws, DefaultOfItselfIsItself, (const VirtualDevice& a)) { RC_ASSERT(Default(a, a) == a); }

RC_GTEST_PROP(DefaultLaws, EqualsJoinWhereJoinIsDefined, (const VirtualDevice& a, const VirtualDevice& b)) {
  std::optional<VirtualDevice> joined = Join(a, b);
  RC_PRE(joined.has_value());
  RC_ASSERT(Default(a, b) == *joined);
}

RC_GTEST_PROP(DefaultLaws, NeverMakesADeviceDisagreeWithItsTarget, (const VirtualDevice& a, const VirtualDevice& b)) {
  VirtualDevice d = Default(a, b);
  // RC_ASSERT evaluates its whole expression (it does not short-circuit `||`): test before reading.
  if (!d.has_target()) return;
  RC_ASSERT(d.target()->device_type() == d.device_type());
}

RC_GTEST_PROP(LiteralLaws, PrintThenParseIsIdentity, (const VirtualDevice& a)) {
  absl::StatusOr<VirtualDevice> parsed = ParseVirtualDevice(a.ToString());
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == a);
}

}  // namespace
}  // namespace vdev
