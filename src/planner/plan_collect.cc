// PlanDevices, collection: signatures, then one domain per value in program order, unified as the
// placement semantics say (docs/spec/ir-text.md); conflicts go to plan_unify.cc.
#include <algorithm>

#include "src/planner/internal/planner.h"

#include "vdev/ir/builtin_ops.h"
#include "vdev/support/status_macros.h"

namespace vdev::planner_internal {

// --- Signatures -------------------------------------------------------------------------------

// A function type gets a signature domain (built bottom-up, no recursion); anything else a plain one.
DomainId Planner::DomainForType(ir::TypeId type) {
  if (type == ir::kNoType || m_.types.kind(type) != ir::TypeKind::kFunc) return domains_.MakeFirstOrder();
  struct Frame {
    ir::TypeId type;
    size_t next;
    std::vector<DomainId> kids;
  };
  std::vector<Frame> stack{{type, 0, {}}};
  DomainId made = kNoDomain;
  while (true) {
    Frame& f = stack.back();
    auto params = m_.types.func_params(f.type);
    if (made != kNoDomain) {
      f.kids.push_back(made);
      made = kNoDomain;
    }
    if (f.next <= params.size()) {
      ir::TypeId kid = f.next < params.size() ? params[f.next] : m_.types.func_result(f.type);
      ++f.next;
      if (kid != ir::kNoType && m_.types.kind(kid) == ir::TypeKind::kFunc) {
        stack.push_back({kid, 0, {}});
      } else {
        made = domains_.MakeFirstOrder();
      }
      continue;
    }
    DomainId result = f.kids.back();
    f.kids.pop_back();
    made = domains_.MakeHigherOrder(f.kids, result);
    stack.pop_back();
    if (stack.empty()) return made;
  }
}

ir::TypeId Planner::ResultType(FuncId f) const {
  const ir::Function& fn = m_.functions[f];
  if (fn.result_type == ir::kNoType && fn.type != ir::kNoType && m_.types.kind(fn.type) == ir::TypeKind::kFunc) {
    return m_.types.func_result(fn.type);
  }
  return fn.result_type;
}

bool Planner::DefersResult(FuncId f) const {
  const ir::Function& fn = m_.functions[f];
  ir::TypeId result = ResultType(f);
  return analysed_[f] && fn.kind == FuncKind::kLocal && fn.result_device == ir::kNoDevice && result != ir::kNoType &&
         m_.types.kind(result) == ir::TypeKind::kFunc;
}

absl::Status Planner::MakeSignatures() {
  size_t nf = m_.functions.size();
  param_domain_.assign(m_.params.size(), kNoDomain);
  result_domain_.assign(nf, kNoDomain);
  func_domain_.assign(nf, kNoDomain);
  analysed_.assign(nf, false);
  for (FuncId f = 0; f < nf; ++f) {
    const ir::Function& fn = m_.functions[f];
    bool inside_primitive = fn.kind == FuncKind::kLocal && fn.parent != ir::kNoFunc && !analysed_[fn.parent];
    analysed_[f] = fn.kind != FuncKind::kKernel && !fn.primitive && !inside_primitive;
    if (fn.kind == FuncKind::kKernel) {
      auto device_part = [&](ir::DeviceId d) {
        if (d == ir::kNoDevice) return false;
        const VirtualDevice& vd = m_.Device(d);
        return vd.has_device_type() || vd.has_id() || vd.has_target();
      };
      for (const ir::Param& param : m_.Params(fn)) {
        if (!device_part(param.device)) continue;
        return ConflictError(
            UnifyConflict{0, 0, 0, 0, true}, param.device_loc,
            absl::StrCat("kernel @", m_.Name(fn.name), ": parameter %", m_.Name(param.name), " is written on ",
                         m_.Device(param.device).ToString(), "; a kernel's signature carries scopes only"));
      }
      if (device_part(fn.result_device)) {
        return ConflictError(
            UnifyConflict{0, 0, 0, 0, true}, fn.result_device_loc,
            absl::StrCat("kernel @", m_.Name(fn.name), ": the result is written on ",
                         m_.Device(fn.result_device).ToString(), "; a kernel's signature carries scopes only"));
      }
    }
    std::vector<DomainId> params;
    PinKind param_pin = fn.kind == FuncKind::kKernel ? PinKind::kKernelParam : PinKind::kParam;
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      const ir::Param& param = m_.params[p];
      DomainId d = DomainForType(param.type);
      if (param.device != ir::kNoDevice) {
        DeviceIndex device = FromModule(param.device);
        pins_.push_back({domains_.ResultLeaf(d), device, param_pin, p});
        domains_.Constrain(d, device, static_cast<uint32_t>(pins_.size() - 1));
      }
      param_domain_[p] = d;
      params.push_back(d);
    }
    if (DefersResult(f)) continue;  // FinishFunction makes them
    DomainId result = DomainForType(ResultType(f));
    if (fn.result_device != ir::kNoDevice) {
      DeviceIndex device = FromModule(fn.result_device);
      PinKind kind = fn.kind == FuncKind::kKernel ? PinKind::kKernelResult : PinKind::kResult;
      pins_.push_back({domains_.ResultLeaf(result), device, kind, f});
      domains_.Constrain(result, device, static_cast<uint32_t>(pins_.size() - 1));
    }
    result_domain_[f] = result;
    func_domain_[f] = domains_.MakeHigherOrder(params, result);
  }
  return absl::OkStatus();
}

// --- Collection -------------------------------------------------------------------------------

// Walks the module in program order; a binding is collected once its nested blocks are. The first
// walk (`ordering`) only records that order, so that unused on_device bindings are known before
// anything is collected.
class Planner::Collector : public ir::Visitor {
 public:
  Collector(Planner* planner, bool ordering) : p_(planner), ordering_(ordering) {}
  void EnterFunction(FuncId f) override {
    if (!p_->analysed_[f]) ++skipping_;
  }
  void ExitFunction(FuncId f) override {
    if (!p_->analysed_[f]) {
      --skipping_;
    } else if (status_.ok() && !ordering_) {
      status_ = p_->FinishFunction(f);
    }
  }
  void BindingDone(BindingId b) override {
    if (skipping_ > 0 || !status_.ok()) return;
    if (ordering_) {
      p_->order_.push_back(b);
    } else if (!p_->IsMove(b) || p_->Has(b, kLive)) {
      status_ = p_->CollectBinding(b);
    }
  }
  absl::Status status() const { return status_; }

 private:
  Planner* p_;
  bool ordering_;
  int skipping_ = 0;
  absl::Status status_;
};

void Planner::OrderBindings() {
  Collector ordering(this, /*ordering=*/true);
  for (FuncId f : m_.items) {
    size_t begin = order_.size();
    ir::WalkFunction(m_, f, ordering);
    if (m_.functions[f].kind != FuncKind::kKernel) item_ranges_.push_back({f, {begin, order_.size()}});
  }
}

absl::Status Planner::CollectAll() {
  Collector collector(this, /*ordering=*/false);
  for (FuncId f : m_.items) {
    ir::WalkFunction(m_, f, collector);
    VDEV_RETURN_IF_ERROR(collector.status());
  }
  return absl::OkStatus();
}

void Planner::NoteAnnotation(BindingId b) {
  std::optional<ir::OnDeviceCall> on = ir::AsOnDevice(m_, B(b).expr);
  if (!on || !on->constrain_body || !on->value.is_local() || !on->value.value.is_binding()) return;
  BindingId x = on->value.value.index;
  const ir::Expr& e = B(x).expr;
  bool computation =
      (e.kind == ExprKind::kOpCall && !IsMove(x) && m_.OpName(e) != "vm.shape_of" && !ir::AsAllocStorage(m_, e)) ||
      (e.kind == ExprKind::kCallGlobal && m_.functions[e.func].kind == FuncKind::kKernel);
  if (!computation) return;
  annotated_by_.emplace_back(x, b);
  Set(x, kAnnotated);
}

void Planner::FinishAnnotations() {
  // Noted in reverse program order: of one computation's annotations, the last noted is the first.
  std::stable_sort(annotated_by_.begin(), annotated_by_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < annotated_by_.size(); ++i) {
    if (i + 1 < annotated_by_.size() && annotated_by_[i + 1].first == annotated_by_[i].first) continue;
    annotated_by_[kept++] = annotated_by_[i];
  }
  annotated_by_.resize(kept);
}

DomainId Planner::AnnotatedSite(BindingId b, bool kernel_call) {
  if (!Has(b, kAnnotated)) return kNoDomain;
  auto it = annotated_by_.begin() + std::min(annotated_cursor_, annotated_by_.size());
  if (it == annotated_by_.end() || it->first != b) {
    it = std::lower_bound(annotated_by_.begin(), annotated_by_.end(), std::pair<BindingId, BindingId>(b, 0));
  }
  annotated_cursor_ = static_cast<size_t>(it - annotated_by_.begin()) + 1;
  const ir::Expr& annotation = B(it->second).expr;
  DeviceIndex device = FromModule(m_.Args(annotation)[1].index);
  if (kernel_call) device = WithScope(device, DeviceTable::kUnconstrained);
  return PinnedDomain(device, PinKind::kOnDevice, it->second);
}

DomainId Planner::AnnotatedBody(BindingId annotation, const Operand& value) {
  if (!value.is_local() || !value.value.is_binding()) return kNoDomain;
  BindingId x = value.value.index;
  if (!Has(x, kAnnotated) || Has(x, kKernelCall)) return kNoDomain;
  // x was collected just before, as a rule: its entry is the one before the cursor.
  auto it = annotated_by_.begin() + (annotated_cursor_ > 0 ? annotated_cursor_ - 1 : 0);
  if (it == annotated_by_.end() || it->first != x) {
    it = std::lower_bound(annotated_by_.begin(), annotated_by_.end(), std::pair<BindingId, BindingId>(x, 0));
  }
  return it != annotated_by_.end() && it->first == x && it->second == annotation ? binding_domain_[x] : kNoDomain;
}

DomainId Planner::OperandDomain(const Operand& o) {
  if (o.kind == ir::OperandKind::kGlobal) return o.index == ir::kNoFunc ? kNoDomain : func_domain_[o.index];
  if (!o.is_local()) return kNoDomain;
  return o.value.is_param() ? param_domain_[o.value.index] : binding_domain_[o.value.index];
}

void Planner::NoteUse(const Operand& o, DomainId site, BindingId user) {
  if (o.is_local() && o.value.is_binding() && first_use_[o.value.index] == kNoDomain) {
    first_use_[o.value.index] = site;
    first_user_[o.value.index] = user;
  }
}

void Planner::NoteAttributeUses(BindingId b) {
  for (const ir::Attr& a : m_.Attrs(B(b).expr)) {
    const Operand& o = a.value;
    if (o.is_local() && o.value.is_binding() && first_use_[o.value.index] == kNoDomain) {
      first_use_[o.value.index] = binding_domain_[b];
    }
  }
}

DomainId Planner::PinnedDomain(DeviceIndex device, PinKind kind, uint32_t ref) {
  DomainId d = domains_.MakeFirstOrder(device, static_cast<uint32_t>(pins_.size()));
  pins_.push_back({d, device, kind, ref});
  return d;
}

SourceLoc Planner::AttrLoc(const ir::Expr& e, absl::string_view key) const {
  const ir::Attr* a = m_.FindAttr(e, key);
  return a != nullptr && a->value.loc.valid() ? a->value.loc : e.loc;
}

SourceLoc Planner::PinLoc(const Pin& pin) const {
  switch (pin.kind) {
    case PinKind::kParam:
    case PinKind::kKernelParam: return m_.params[pin.ref].device_loc;
    case PinKind::kResult:
    case PinKind::kKernelResult: return m_.functions[pin.ref].result_device_loc;
    case PinKind::kOnDevice: {
      const ir::Expr& e = B(pin.ref).expr;
      const Operand& device = m_.Args(e)[1];
      return device.loc.valid() ? device.loc : e.loc;
    }
    case PinKind::kCopySrc: return AttrLoc(B(pin.ref).expr, "src");
    case PinKind::kCopyDst: return AttrLoc(B(pin.ref).expr, "dst");
    case PinKind::kAlloc: return AttrLoc(B(pin.ref).expr, "device");
    case PinKind::kHost: return B(pin.ref).expr.loc;
  }
  return {};
}

void Planner::ReserveForAnnotations() {
  size_t domains = 0;
  size_t pins = 0;
  for (BindingId b : order_) {
    const ir::Expr& e = B(b).expr;
    if (e.kind != ExprKind::kOpCall) continue;
    absl::string_view op = m_.OpName(e);
    if (op == "on_device" && Has(b, kLive)) {  // at most: its body's and its result's, one pinned
      domains += 2;
      pins += 1;
    } else if (op == "device_copy" && Has(b, kLive)) {  // src and dst
      domains += 2;
      pins += 2;
    } else if (op == "memory.alloc_storage") {  // its device, and the host for each operand
      domains += 1 + e.args.count;
      pins += 1 + e.args.count;
    }
  }
  // A pinned site per annotated computation; an op call's site is also its annotation's body
  // (AnnotatedBody), so that annotation's own body, counted above, is never made.
  for (const auto& [computation, annotation] : annotated_by_) {
    if (B(computation).expr.kind == ExprKind::kOpCall) continue;
    domains += 1;
    pins += 1;
  }
  domains_.Reserve(domains_.size() + domains);
  pins_.reserve(pins_.size() + pins);
}

absl::Status Planner::CollectOnDevice(BindingId b, const ir::OnDeviceCall& on) {
  DeviceIndex vd = FromModule(on.device);
  bool constrain_result = on.constrain_result;
  const ir::Block& block = m_.blocks[B(b).block];
  bool returned =
      block.owner == ir::kNoBinding && block.result.is_local() && block.result.value == ValueRef::Binding(b);
  if (returned && on.constrain_body) constrain_result = true;  // a returned on_device pins the result
  DomainId body = on.constrain_body ? AnnotatedBody(b, on.value) : kNoDomain;
  bool annotated_site = body != kNoDomain;
  if (annotated_site) {
    NoteUse(on.value, body, b);
  } else if (on.constrain_body) {
    body = PinnedDomain(vd, PinKind::kOnDevice, b);
    VDEV_RETURN_IF_ERROR(PrimitiveUse(b, 0, body));
  } else {
    body = OperandDomain(on.value);
    if (body == kNoDomain) body = domains_.MakeFirstOrder();
  }
  DomainId result;
  if (constrain_result) {
    result = on.constrain_body ? body : PinnedDomain(vd, PinKind::kOnDevice, b);
  } else {
    result = domains_.MakeFirstOrder();
    if (on.is_free()) free_boundaries_.push_back({body, result, ir::kNoBinding});
  }
  binding_domain_[b] = result;
  // Also when result == body: the on_device goes, as a copy from src to src.
  SetCopyPoint(b, body, annotated_site);
  return absl::OkStatus();
}

absl::Status Planner::CollectOpCall(BindingId b) {
  const ir::Expr& e = B(b).expr;
  absl::string_view op = m_.OpName(e);
  auto args = m_.Args(e);
  auto host_site = [&]() { return PinnedDomain(host_device_, PinKind::kHost, b); };

  if (std::optional<ir::OnDeviceCall> on = ir::AsOnDevice(m_, e)) return CollectOnDevice(b, *on);
  if (std::optional<ir::DeviceCopyCall> copy = ir::AsDeviceCopy(m_, e)) {
    DomainId body = PinnedDomain(FromModule(copy->src), PinKind::kCopySrc, b);
    VDEV_RETURN_IF_ERROR(PrimitiveUse(b, 0, body));
    binding_domain_[b] = PinnedDomain(FromModule(copy->dst), PinKind::kCopyDst, b);
    SetCopyPoint(b, body);
    return absl::OkStatus();
  }
  if (op == "vm.shape_of") {
    // The operand may live anywhere; the shape is on the host.
    DomainId result = host_site();
    if (!args.empty()) NoteUse(args[0], result, b);
    binding_domain_[b] = result;
    return absl::OkStatus();
  }
  if (std::optional<ir::AllocStorageCall> alloc = ir::AsAllocStorage(m_, e)) {
    for (uint32_t k = 0; k < args.size(); ++k) VDEV_RETURN_IF_ERROR(PrimitiveUse(b, k, host_site()));
    binding_domain_[b] = PinnedDomain(FromModule(alloc->device), PinKind::kAlloc, b);
    return absl::OkStatus();
  }
  if (op == "memory.alloc_tensor" || op == "vm.reshape_tensor") {
    // The first operand (storage, data) shares the result's device; the others are on the host.
    DomainId result = AnnotatedSite(b, /*kernel_call=*/false);
    if (result == kNoDomain) result = domains_.MakeFirstOrder();
    for (uint32_t k = 0; k < args.size(); ++k) {
      absl::Status s = PrimitiveUse(b, k, k == 0 ? result : host_site());
      if (!s.ok()) return s;
    }
    binding_domain_[b] = result;
    return absl::OkStatus();
  }
  return CollectPrimitiveCall(b);
}

// Any other op: operands and result on one device, chosen for this call site. The first operand's
// domain serves as the site (joining it with a fresh `?` would change nothing) and saves a domain.
// An annotated call's site is pinned first: its operands join the annotation or are copied.
absl::Status Planner::CollectPrimitiveCall(BindingId b) {
  auto args = m_.Args(B(b).expr);
  DomainId site = AnnotatedSite(b, /*kernel_call=*/false);
  for (const Operand& o : args) {
    if (site != kNoDomain || o.is_device()) continue;
    DomainId first = OperandDomain(o);
    if (first != kNoDomain && !domains_.IsHigherOrder(first)) site = first;
    break;
  }
  if (site == kNoDomain) site = domains_.MakeFirstOrder();
  for (uint32_t k = 0; k < args.size(); ++k) {
    if (args[k].is_device()) continue;
    absl::Status s = PrimitiveUse(b, k, site);
    if (!s.ok()) return s;
  }
  binding_domain_[b] = site;
  return absl::OkStatus();
}

absl::Status Planner::CollectGlobalCall(BindingId b) {
  const ir::Expr& e = B(b).expr;
  auto args = m_.Args(e);
  const ir::Function& callee = m_.functions[e.func];
  auto params = m_.Params(callee);
  if (params.size() != args.size()) {
    return ConflictError(
        UnifyConflict{0, 0, 0, 0, true}, e.loc,
        absl::StrCat("@", m_.Name(callee.name), " takes ", params.size(), " arguments, not ", args.size()));
  }
  if (callee.kind == FuncKind::kKernel) return CollectKernelCall(b);
  for (uint32_t k = 0; k < args.size(); ++k) {
    DomainId value = OperandDomain(args[k]);
    if (value == kNoDomain) continue;
    NoteUse(args[k], param_domain_[callee.params.begin + k], b);
    VDEV_RETURN_IF_ERROR(HardUnify(value, param_domain_[callee.params.begin + k],
                                   args[k].loc.valid() ? args[k].loc : e.loc,
                                   absl::StrCat("argument ", k + 1, " of @", m_.Name(callee.name))));
  }
  binding_domain_[b] = result_domain_[e.func];
  return absl::OkStatus();
}

absl::Status Planner::CollectValueCall(BindingId b) {
  const ir::Expr& e = B(b).expr;
  auto args = m_.Args(e);
  DomainId callee = OperandDomain(args[0]);
  NoteUse(args[0], callee, b);
  if (callee != kNoDomain && domains_.IsHigherOrder(callee)) {
    if (domains_.Arity(callee) != args.size() - 1) {
      return ConflictError(
          UnifyConflict{0, 0, 0, 0, true}, e.loc,
          absl::StrCat(DescribeValue(args[0]), " takes ", domains_.Arity(callee), " arguments, not ", args.size() - 1));
    }
    for (uint32_t k = 1; k < args.size(); ++k) {
      DomainId value = OperandDomain(args[k]);
      if (value == kNoDomain) continue;
      DomainId param = domains_.Param(callee, k - 1);
      NoteUse(args[k], param, b);
      VDEV_RETURN_IF_ERROR(HardUnify(value, param, args[k].loc.valid() ? args[k].loc : e.loc,
                                     absl::StrCat("argument ", k, " of ", DescribeValue(args[0]))));
    }
    binding_domain_[b] = domains_.Result(callee);
    return absl::OkStatus();
  }
  // A collapsed function (from a tuple or an if): arguments and result on its one device.
  DomainId site = callee != kNoDomain ? callee : domains_.MakeFirstOrder();
  for (uint32_t k = 1; k < args.size(); ++k) {
    DomainId value = OperandDomain(args[k]);
    if (value == kNoDomain) continue;
    NoteUse(args[k], site, b);
    VDEV_RETURN_IF_ERROR(HardUnify(value, site, args[k].loc.valid() ? args[k].loc : e.loc,
                                   absl::StrCat("argument ", k, " of ", DescribeValue(args[0]))));
  }
  binding_domain_[b] = site;
  return absl::OkStatus();
}

absl::Status Planner::CollectTuple(BindingId b) {
  const ir::Expr& e = B(b).expr;
  DomainId tuple = domains_.MakeFirstOrder();
  for (const Operand& field : m_.Args(e)) {
    DomainId value = OperandDomain(field);
    if (value == kNoDomain) continue;
    NoteUse(field, tuple, b);
    VDEV_RETURN_IF_ERROR(HardUnify(tuple, value, field.loc.valid() ? field.loc : e.loc, "a tuple field"));
  }
  binding_domain_[b] = tuple;
  return absl::OkStatus();
}

void Planner::CollectProjection(BindingId b) {
  const Operand& t = m_.Args(B(b).expr)[0];
  // Projecting an on_device result projects the annotated tuple, then copies only the field.
  if (t.is_local() && t.value.is_binding()) {
    const ir::Expr& te = B(t.value.index).expr;
    if (Has(t.value.index, kCopyPoint) && te.kind == ExprKind::kOpCall && m_.OpName(te) == "on_device") {
      binding_domain_[b] = domains_.MakeFirstOrder();
      SetCopyPoint(b, CopyBody(t.value.index));
      return;
    }
  }
  DomainId tuple = OperandDomain(t);
  binding_domain_[b] = tuple != kNoDomain ? tuple : domains_.MakeFirstOrder();
  NoteUse(t, binding_domain_[b], b);
}

absl::Status Planner::CollectIf(BindingId b) {
  const ir::Expr& e = B(b).expr;
  auto args = m_.Args(e);
  DomainId site = domains_.MakeFirstOrder();
  DomainId cond = OperandDomain(args[0]);
  if (cond != kNoDomain) {
    NoteUse(args[0], site, b);
    VDEV_RETURN_IF_ERROR(HardUnify(site, cond, args[0].loc.valid() ? args[0].loc : e.loc, "an if condition"));
  }
  for (BlockId arm : {e.then_block, e.else_block}) {
    const Operand& r = m_.blocks[arm].result;
    DomainId value = OperandDomain(r);
    if (value == kNoDomain) continue;
    NoteUse(r, site, b);
    VDEV_RETURN_IF_ERROR(HardUnify(site, value, m_.blocks[arm].return_loc, "an if arm's value"));
  }
  binding_domain_[b] = site;
  return absl::OkStatus();
}

absl::Status Planner::CollectBinding(BindingId b) {
  const ir::Expr& e = B(b).expr;
  auto args = m_.Args(e);
  switch (e.kind) {
    case ExprKind::kOpCall:
      VDEV_RETURN_IF_ERROR(CollectOpCall(b));
      if (e.attrs.count > 0) NoteAttributeUses(b);
      return absl::OkStatus();
    case ExprKind::kCallGlobal: return CollectGlobalCall(b);
    case ExprKind::kCallValue: return CollectValueCall(b);
    case ExprKind::kTuple: return CollectTuple(b);
    case ExprKind::kProject: CollectProjection(b); return absl::OkStatus();
    case ExprKind::kIf: return CollectIf(b);
    case ExprKind::kFn: binding_domain_[b] = func_domain_[e.func]; return absl::OkStatus();
    case ExprKind::kConst: binding_domain_[b] = domains_.MakeFirstOrder(); return absl::OkStatus();
    case ExprKind::kAlias: {
      DomainId value = OperandDomain(args[0]);
      binding_domain_[b] = value != kNoDomain ? value : domains_.MakeFirstOrder();
      NoteUse(args[0], binding_domain_[b], b);
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown expression kind");
}

// A kernel call runs on one device, like a primitive call, but its boundary may copy: operands and
// result are joined with their targets (ResolveKernelCall) only where they can be.
absl::Status Planner::CollectKernelCall(BindingId b) {
  DomainId site = AnnotatedSite(b, /*kernel_call=*/true);
  if (site == kNoDomain) site = domains_.MakeFirstOrder();
  for (const Operand& o : m_.Args(B(b).expr)) NoteUse(o, site, b);
  kernel_site_[b] = site;
  free_boundaries_.push_back({kNoDomain, kNoDomain, b});
  Set(b, kKernelCall);
  binding_domain_[b] = domains_.MakeFirstOrder();
  return absl::OkStatus();
}

absl::Status Planner::FinishFunction(FuncId f) {
  const ir::Function& fn = m_.functions[f];
  DomainId value = fn.body == ir::kNoBlock ? kNoDomain : OperandDomain(m_.blocks[fn.body].result);
  if (func_domain_[f] == kNoDomain) {  // deferred (DefersResult): unifying a fresh result with value makes them one
    result_domain_[f] = value != kNoDomain ? value : DomainForType(ResultType(f));
    func_domain_[f] = domains_.MakeHigherOrder(
        absl::MakeConstSpan(param_domain_).subspan(fn.params.begin, fn.params.count), result_domain_[f]);
  }
  if (value == kNoDomain) return absl::OkStatus();
  const ir::Block& body = m_.blocks[fn.body];
  NoteUse(body.result, result_domain_[f], ir::kNoBinding);
  return HardUnify(result_domain_[f], value, body.return_loc.valid() ? body.return_loc : body.result.loc,
                   "the returned value");
}

}  // namespace vdev::planner_internal
