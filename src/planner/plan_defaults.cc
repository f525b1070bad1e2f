// PlanDevices, defaults: what no constraint decided takes its function's result device, its first
// consumer's device, or the config's default (docs/spec/ir-text.md, "Defaults").
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "src/planner/internal/planner.h"

namespace vdev::planner_internal {

void Planner::ApplyDefaults() {
  // A kernel operand that is copied is copied once per (value, destination), before its first such
  // call: only that call gives the value its default, as the copy binding does when the output is
  // planned again.
  absl::flat_hash_set<std::tuple<FuncId, ValueRef, DeviceIndex>> seen;
  absl::flat_hash_set<std::pair<BindingId, uint32_t>> later_use;
  for (const FreeBoundary& f : free_boundaries_) {
    if (f.kernel_call == ir::kNoBinding) continue;
    const ir::Expr& e = B(f.kernel_call).expr;
    const ir::Function& kernel = m_.functions[e.func];
    for (uint32_t k = 0; k < e.args.count; ++k) {
      const Operand& o = m_.Args(e)[k];
      if (!o.is_local()) continue;
      DeviceIndex target =
          KernelTarget(f.kernel_call, param_domain_[kernel.params.begin + k], DeviceTable::kUnconstrained);
      if (!seen.insert({FuncOf(f.kernel_call), o.value, target}).second) later_use.insert({f.kernel_call, k});
    }
  }
  for (const auto& [f, range] : item_ranges_) {
    domains_.SetDefault(func_domain_[f], default_device_);
    for (size_t i = range.second; i-- > range.first;) {
      BindingId b = order_[i];
      const ir::Expr& e = B(b).expr;
      if (IsMove(b) && !Has(b, kLive)) continue;  // never collected: it goes at capture
      if (e.kind == ExprKind::kFn) domains_.SetDefault(func_domain_[e.func], default_device_);
      // The first consumer's device; fields it leaves open come from the function's result.
      DeviceIndex fallback = domains_.Device(result_domain_[FuncOf(b)]);
      if (first_use_[b] != kNoDomain) {
        fallback = devices_.Default(domains_.Device(first_use_[b]), fallback);
      } else if (Has(b, kCopyPoint)) {
        fallback = devices_.Default(domains_.Device(CopyBody(b)), fallback);  // an unused copy moves nothing
      }
      domains_.SetDefault(binding_domain_[b], fallback);
      // What a copy reads takes the copy's destination where nothing else decided: the same rule for
      // copies that are bindings now and for those capture will write out (conflicting uses, kernel
      // operands), so that planning the output decides the same.
      if (Has(b, kCopyPoint)) domains_.SetDefault(CopyBody(b), domains_.Device(binding_domain_[b]));
      if (Has(b, kCopiedUses)) {
        for (const CopiedUse& use : copied_uses_.at(b)) {
          DomainId value = OperandDomain(m_.Args(e)[use.operand]);
          if (value != kNoDomain) domains_.SetDefault(value, domains_.Device(use.site));
        }
      }
      if (Has(b, kKernelCall)) {
        const ir::Function& kernel = m_.functions[e.func];
        for (uint32_t k = 0; k < e.args.count; ++k) {
          DomainId value = OperandDomain(m_.Args(e)[k]);
          DomainId signature = param_domain_[kernel.params.begin + k];
          // A scope the signature leaves open comes from the function's result, as for any consumer.
          if (value != kNoDomain && !later_use.contains({b, k})) {
            domains_.SetDefault(value, devices_.Default(KernelTarget(b, signature, DeviceTable::kUnconstrained),
                                                        domains_.Device(result_domain_[FuncOf(b)])));
          }
        }
      }
    }
  }
  // Primitive functions' signatures and anything no function reached; a kernel's signature keeps
  // its scopes only.
  for (FuncId f = 0; f < m_.functions.size(); ++f) {
    if (m_.functions[f].kind != FuncKind::kKernel) domains_.SetDefault(func_domain_[f], default_device_);
  }
}

}  // namespace vdev::planner_internal
