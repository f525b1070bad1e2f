// PlanDevices, unification: primitive uses (joined, or copied with a warning), structural equality,
// free boundaries, and the error that names the smallest set of annotations in conflict.
#include <algorithm>

#include "src/planner/conflict_core.h"
#include "src/planner/internal/planner.h"

namespace vdev::planner_internal {

std::string Planner::DescribeValue(const Operand& o) const {
  if (o.kind == ir::OperandKind::kGlobal) return absl::StrCat("@", m_.Name(o.symbol));
  return absl::StrCat("%", m_.Name(m_.ValueName(o.value)));
}

std::string Planner::DescribePin(const Pin& pin) const {
  std::string device = DeviceText(pin.device);
  switch (pin.kind) {
    case PinKind::kOnDevice: {
      const Operand& x = m_.Args(B(pin.ref).expr)[0];
      return absl::StrCat("on_device(", x.is_local() ? DescribeValue(x) : "…", ", ", device, ")");
    }
    case PinKind::kCopySrc: return absl::StrCat("device_copy src=", device, " of %", m_.Name(B(pin.ref).name));
    case PinKind::kCopyDst: return absl::StrCat("device_copy dst=", device, " of %", m_.Name(B(pin.ref).name));
    case PinKind::kParam: return absl::StrCat("parameter %", m_.Name(m_.params[pin.ref].name), " on ", device);
    case PinKind::kKernelParam:
      return absl::StrCat("kernel parameter %", m_.Name(m_.params[pin.ref].name), " on ", device);
    case PinKind::kResult:
      return absl::StrCat("result of ", m_.functions[pin.ref].kind == FuncKind::kLocal ? "%" : "@",
                          m_.Name(m_.functions[pin.ref].name), " on ", device);
    case PinKind::kKernelResult:
      return absl::StrCat("result of kernel @", m_.Name(m_.functions[pin.ref].name), " on ", device);
    case PinKind::kHost: return absl::StrCat("host operand of ", m_.OpName(B(pin.ref).expr), " (", device, ")");
    case PinKind::kAlloc: return absl::StrCat("memory.alloc_storage device=", device);
  }
  return device;
}

absl::Status Planner::ConflictError(const UnifyConflict& conflict, SourceLoc loc, std::string message) {
  PlanError error;
  error.loc = loc;
  error.message = std::move(message);
  if (!conflict.arity_mismatch) {
    // The two classes that failed to join, their forest edges plus the failed edge, their pins.
    DomainId lhs = domains_.Find(conflict.lhs);
    DomainId rhs = domains_.Find(conflict.rhs);
    ConflictProblem problem;
    absl::flat_hash_map<DomainId, uint32_t> node;
    auto node_of = [&](DomainId d) {
      auto [it, inserted] = node.try_emplace(d, problem.num_nodes);
      if (inserted) ++problem.num_nodes;
      return it->second;
    };
    for (DomainId d = 0; d < domains_.size(); ++d) {
      DomainId root = domains_.Find(d);
      if ((root == lhs || root == rhs) && domains_.ParentOf(d) != d) {
        problem.equalities.emplace_back(node_of(d), node_of(domains_.ParentOf(d)));
      }
    }
    problem.equalities.emplace_back(node_of(conflict.lhs), node_of(conflict.rhs));
    std::vector<size_t> pin_of;
    for (size_t i = 0; i < pins_.size(); ++i) {
      DomainId root = domains_.Find(pins_[i].domain);
      if (root != lhs && root != rhs) continue;
      problem.pins.push_back({node_of(pins_[i].domain), devices_.Get(pins_[i].device)});
      pin_of.push_back(i);
    }
    planner_internal::ConflictCoreStats stats;
    absl::StatusOr<std::vector<size_t>> core = planner_internal::FindMinimalConflict(problem, &stats);
    result_.stats.solver_calls += stats.solver_calls;
    result_.stats.solver_seconds += stats.solver_seconds;
    if (core.ok()) {
      for (size_t k : *core) {
        const Pin& pin = pins_[pin_of[k]];
        error.conflicts.push_back({PinLoc(pin), devices_.Get(pin.device), DescribePin(pin)});
      }
      std::sort(error.conflicts.begin(), error.conflicts.end(), [](const auto& a, const auto& b) {
        return std::tie(a.loc.line, a.loc.col) < std::tie(b.loc.line, b.loc.col);
      });
    } else if (!absl::IsNotFound(core.status())) {
      return core.status();
    }
  }
  std::string text = absl::StrCat(LocText(error.loc), ": ", error.message);
  for (const ConflictAnnotation& c : error.conflicts) {
    absl::StrAppend(&text, "\n  ", LocText(c.loc), ": ", c.what);
  }
  if (error_ != nullptr) *error_ = std::move(error);
  return absl::InvalidArgumentError(text);
}

absl::Status Planner::HardUnify(DomainId a, DomainId b, SourceLoc loc, absl::string_view what) {
  std::optional<UnifyConflict> conflict = domains_.Unify(a, b);
  if (!conflict) return absl::OkStatus();
  std::string message = conflict->arity_mismatch ? absl::StrCat(what, ": a function of the wrong number of parameters")
                                                 : absl::StrCat(what, ": ", DeviceText(conflict->lhs_device), " and ",
                                                                DeviceText(conflict->rhs_device), " cannot be joined");
  return ConflictError(*conflict, loc, std::move(message));
}

absl::Status Planner::PrimitiveUse(BindingId b, uint32_t operand, DomainId site) {
  const Operand& o = m_.Args(B(b).expr)[operand];
  DomainId value = OperandDomain(o);
  if (value == kNoDomain) return absl::OkStatus();
  BindingId earlier_user = o.is_local() && o.value.is_binding() ? first_user_[o.value.index] : ir::kNoBinding;
  NoteUse(o, site, b);
  // What a conflict's message names, read before unifying only where a failed unification may have
  // changed it (a function on a side: its signature's steps before the failing one stay done). Two
  // first-order domains fail before anything links, so the common use reads it only on a conflict.
  const bool higher_order = domains_.IsHigherOrder(value) || domains_.IsHigherOrder(site);
  DeviceIndex value_device = 0;
  uint32_t value_origin = 0, site_origin = 0;
  auto read_sides = [&] {
    value_device = domains_.Device(value);
    value_origin = domains_.Origin(value);
    site_origin = domains_.Origin(site);
  };
  if (higher_order) read_sides();
  std::optional<UnifyConflict> conflict = domains_.Unify(value, site);
  if (!conflict) return absl::OkStatus();
  if (!higher_order) read_sides();
  // A device written on a parameter or result is not a use: conflicting with it is an error.
  auto written = [&](uint32_t origin) {
    return origin < pins_.size() && (pins_[origin].kind == PinKind::kParam || pins_[origin].kind == PinKind::kResult);
  };
  bool from_signature = written(value_origin) || written(site_origin);
  SourceLoc use_loc = o.loc.valid() ? o.loc : B(b).loc;
  if (options_.strict || from_signature || conflict->arity_mismatch || !o.is_local()) {
    return ConflictError(*conflict, use_loc,
                         absl::StrCat(DescribeValue(o), " is needed on ", DeviceText(value_device), " and on ",
                                      DeviceText(domains_.Device(site)), " at once"));
  }
  // Copy for this (the later) use; the warning names the earlier use and what fixed its device.
  std::string message = absl::StrCat(DescribeValue(o), " is needed on ", DeviceText(value_device));
  if (earlier_user != ir::kNoBinding && earlier_user != b) {
    absl::StrAppend(&message, " by the use at ", LocText(B(earlier_user).expr.loc));
  }
  if (value_origin < pins_.size()) {
    absl::StrAppend(&message, " (", DescribePin(pins_[value_origin]), " at ", LocText(PinLoc(pins_[value_origin])),
                    ")");
  }
  absl::StrAppend(&message, " and on ", DeviceText(domains_.Device(site)), " by the use at ", LocText(use_loc),
                  "; copied for the later use");
  result_.warnings.push_back({Severity::kWarning, use_loc, std::move(message)});
  copied_uses_[b].push_back({operand, site});
  Set(b, kCopiedUses);
  ++result_.stats.conflict_copies;
  return absl::OkStatus();
}

// --- Free boundaries and defaults ---------------------------------------------------------------

void Planner::JoinFreeBoundaries() {
  for (const FreeBoundary& f : free_boundaries_) {
    if (f.kernel_call != ir::kNoBinding) {
      ResolveKernelCall(f.kernel_call);
    } else if (domains_.CanUnify(f.a, f.b)) {
      (void)domains_.Unify(f.a, f.b);
    }
  }
}

DeviceIndex Planner::WithScope(DeviceIndex device, DeviceIndex scope_of) {
  const VirtualDevice& d = devices_.Get(device);
  const std::string& scope = devices_.Get(scope_of).memory_scope();
  if (d.memory_scope() == scope) return device;
  // The parts of a valid device with another scope form a valid device.
  return devices_.Intern(*VirtualDevice::Make(d.device_type(), d.virtual_device_id(), d.target(), scope));
}

void Planner::ResolveKernelCall(BindingId call) {
  const ir::Expr& e = B(call).expr;
  const ir::Function& kernel = m_.functions[e.func];
  DomainId site = kernel_site_.at(call);
  // Like a primitive call's site: the first operands decide, then the result's consumers; what none
  // decides is the default device's.
  DeviceIndex device = domains_.Device(site);
  auto take = [&](DomainId value) {
    if (value == kNoDomain || domains_.IsHigherOrder(value)) return;
    DeviceIndex part = WithScope(domains_.Device(value), DeviceTable::kUnconstrained);
    if (std::optional<DeviceIndex> joined = devices_.Join(device, part)) device = *joined;
  };
  for (const Operand& o : m_.Args(e)) take(OperandDomain(o));
  take(binding_domain_[call]);
  device = devices_.Default(device, WithScope(default_device_, DeviceTable::kUnconstrained));
  domains_.Constrain(site, device);
  // The result first: its consumers may give scopes to operands of the same class.
  auto join = [&](DomainId value, DomainId signature) {
    if (value == kNoDomain || domains_.IsHigherOrder(value)) return;
    // A conflict is copied at capture.
    domains_.Constrain(value, KernelTarget(call, signature, DeviceTable::kUnconstrained));
  };
  join(binding_domain_[call], result_domain_[e.func]);
  for (uint32_t k = 0; k < e.args.count; ++k) {
    join(OperandDomain(m_.Args(e)[k]), param_domain_[kernel.params.begin + k]);
  }
}

absl::Status Planner::PlaceClasses() {
  PlacementClasses classes;
  absl::flat_hash_map<DomainId, uint32_t> index;
  std::vector<DomainId> roots;
  auto class_of = [&](DomainId d) -> uint32_t {
    if (d == kNoDomain || domains_.IsHigherOrder(d)) return UINT32_MAX;
    DomainId root = domains_.Find(d);
    auto [it, added] = index.try_emplace(root, roots.size());
    if (added) {
      roots.push_back(root);
      classes.device.push_back(devices_.Get(domains_.Device(root)));
      uint32_t origin = domains_.Origin(root);
      classes.origin.push_back(origin < pins_.size()
                                   ? absl::StrCat(DescribePin(pins_[origin]), " at ", LocText(PinLoc(pins_[origin])))
                                   : "");
    }
    return it->second;
  };
  auto edge = [&](DomainId a, DomainId b, ir::TypeId type) {
    uint32_t ca = class_of(a);
    uint32_t cb = class_of(b);
    if (ca != UINT32_MAX && cb != UINT32_MAX && ca != cb) classes.edges.push_back({ca, cb, type});
  };
  auto type_of = [&](const Operand& o) {
    if (!o.is_local()) return ir::kNoType;
    return o.value.is_param() ? m_.params[o.value.index].type : B(o.value.index).type;
  };
  for (BindingId b : order_) {
    const ir::Expr& e = B(b).expr;
    if (IsMove(b) && !Has(b, kLive)) continue;
    if (Has(b, kKernelCall)) {
      DomainId site = kernel_site_.at(b);
      classes.ops.push_back({b, class_of(site)});
      for (const Operand& o : m_.Args(e)) edge(OperandDomain(o), site, type_of(o));
      edge(binding_domain_[b], site, B(b).type);
      continue;
    }
    if (Has(b, kCopyPoint)) edge(CopyBody(b), binding_domain_[b], B(b).type);
    if (Has(b, kCopiedUses)) {
      for (const CopiedUse& use : copied_uses_.at(b)) {
        const Operand& o = m_.Args(e)[use.operand];
        edge(OperandDomain(o), use.site, type_of(o));
      }
    }
    if (e.kind == ExprKind::kOpCall && !IsMove(b)) classes.ops.push_back({b, class_of(binding_domain_[b])});
  }
  // Values in none of those classes get passive ones (no ops, no edges), so that a capacity cut can
  // name every value.
  const size_t active = roots.size();
  classes.binding_class.assign(input_bindings_, UINT32_MAX);
  for (BindingId b : order_) classes.binding_class[b] = class_of(binding_domain_[b]);
  classes.param_class.assign(m_.params.size(), UINT32_MAX);
  for (size_t p = 0; p < m_.params.size(); ++p) {
    if (analysed_[m_.params[p].func]) classes.param_class[p] = class_of(param_domain_[p]);
  }
  classes.passive.assign(roots.size(), false);
  std::fill(classes.passive.begin() + active, classes.passive.end(), true);
  absl::StatusOr<std::vector<std::optional<VirtualDevice>>> chosen = (*placement_)(m_, classes);
  if (!chosen.ok()) {
    if (error_ != nullptr) error_->message = std::string(chosen.status().message());
    return chosen.status();
  }
  for (size_t c = 0; c < roots.size() && c < chosen->size(); ++c) {
    if (!(*chosen)[c]) continue;
    if (!domains_.Constrain(roots[c], devices_.Intern(*(*chosen)[c]))) {
      return absl::InternalError(
          absl::StrCat("placement chose ", (*chosen)[c]->ToString(), " for a class on ", classes.device[c].ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace vdev::planner_internal
