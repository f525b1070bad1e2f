// PlanDevices, rewrite (capture): on_device bindings go, every device change becomes a device_copy
// binding, parameters and results get `on vd`.
#include "src/planner/internal/planner.h"

namespace vdev::planner_internal {

// --- Capture -----------------------------------------------------------------------------------

ValueRef Planner::Resolve(ValueRef v) const {
  while (v.is_binding() && Has(v.index, kReplaced)) v = replaced_by_.at(v.index);
  return v;
}

ir::Expr Planner::DeviceCopyExpr(const Operand& value, DeviceIndex src, DeviceIndex dst, SourceLoc loc) {
  Operand x = value.is_local() ? m_.LocalOperand(value.value) : value;
  ir::Expr e;
  e.kind = ExprKind::kOpCall;
  e.op = device_copy_symbol_;
  e.args = m_.AddOperands({&x, 1});
  e.attrs = CopyAttrs(src, dst);
  e.loc = loc;
  return e;
}

void Planner::MarkLive() {
  auto mark = [&](const Operand& o) {
    if (o.is_local() && o.value.is_binding()) Set(o.value.index, kLive);
  };
  for (const ir::Block& block : m_.blocks) {
    if (analysed_[block.func]) mark(block.result);
  }
  for (size_t i = order_.size(); i-- > 0;) {
    BindingId b = order_[i];
    bool move = IsMove(b);
    if (move && !Has(b, kLive)) continue;
    if (move) NoteAnnotation(b);  // its users, later in program order, are marked already
    // An attribute that names a value reads it too (kept verbatim, so it must stay defined).
    ir::ForEachLocalRead(m_, B(b).expr, mark);
  }
  FinishAnnotations();
}

ir::Attr Planner::DeviceAttr(ir::Symbol key, DeviceIndex device) {
  ir::Attr attr;
  attr.key = key;
  attr.value.kind = ir::OperandKind::kDevice;
  attr.value.index = ToModule(device);
  return attr;
}

ir::Range Planner::CopyAttrs(DeviceIndex src, DeviceIndex dst) {
  auto [it, added] = copy_attrs_.try_emplace({src, dst});
  if (added) {
    ir::Attr attrs[] = {DeviceAttr(src_symbol_, src), DeviceAttr(dst_symbol_, dst)};
    it->second = m_.AddAttrs(attrs);
  }
  return it->second;
}

ir::Expr Planner::RewriteAsCopy(const ir::Expr& e, DeviceIndex src, DeviceIndex dst) {
  ir::Expr copy = e;
  copy.op = device_copy_symbol_;
  copy.args.count = 1;
  copy.attrs = CopyAttrs(src, dst);
  // Attributes the planner does not interpret (such as a lowered program's `out=`) are kept.
  std::vector<ir::Attr> kept;
  for (const ir::Attr& attr : m_.Attrs(e)) {
    absl::string_view key = m_.symbols.Name(attr.key);
    if (key != "src" && key != "dst" && key != "constrain_body" && key != "constrain_result") kept.push_back(attr);
  }
  if (!kept.empty()) {
    absl::Span<const ir::Attr> devices = m_.Attrs(copy);
    kept.insert(kept.begin(), devices.begin(), devices.end());
    copy.attrs = m_.AddAttrs(kept);
  }
  return copy;
}

void Planner::ResolveAttrs(BindingId b) {
  ir::Expr& e = m_.bindings[b].expr;
  absl::Span<const ir::Attr> attrs = m_.Attrs(e);
  std::vector<ir::Attr> resolved;
  for (size_t k = 0; k < attrs.size(); ++k) {
    const Operand& o = attrs[k].value;
    if (!o.is_local() || !o.value.is_binding()) continue;
    ValueRef v = Resolve(o.value);
    if (v == o.value) continue;
    if (resolved.empty()) resolved.assign(attrs.begin(), attrs.end());
    resolved[k].value = m_.LocalOperand(v, o.loc);
  }
  if (resolved.empty()) return;
  result_.input_edits.exprs.emplace_back(b, e);
  e.attrs = m_.AddAttrs(resolved);
}

void Planner::NoteConsumer(const Operand& o, BindingId consumer) {
  if (!o.is_local() || !o.value.is_binding() || !Has(o.value.index, kAwaiting)) return;
  auto it = awaiting_consumer_.find(o.value.index);
  result_.copies[it->second].into = consumer;
  awaiting_consumer_.erase(it);
  flags_[o.value.index] &= ~kAwaiting;
}

BindingId Planner::CopyFor(BlockId block, BindingId consumer, ValueRef value, DeviceIndex src, DeviceIndex dst,
                           std::vector<BindingId>& out) {
  // A copy made earlier in this function is shared when its block encloses this one (so it is in
  // scope here); copies are made in program order, so it also comes first.
  std::vector<BindingId>& made = shared_copies_[std::make_tuple(m_.blocks[block].func, value, dst)];
  for (BindingId c : made) {
    BlockId home = B(c).block;
    for (BlockId at = block;;) {
      if (at == home) return c;
      BindingId owner = m_.blocks[at].owner;
      if (owner == ir::kNoBinding) break;
      at = B(owner).block;
    }
  }
  ir::Symbol name = m_.FreshName(absl::StrCat(m_.Name(m_.ValueName(value)), "_copy"));
  BindingId c = AddPlannedBinding(block, name, DeviceCopyExpr(m_.LocalOperand(value), src, dst, B(consumer).expr.loc),
                                  B(consumer).loc, dst);
  made.push_back(c);
  out.push_back(c);
  result_.copies.push_back({m_.blocks[block].func, value, ToModule(src), ToModule(dst), c, consumer, false});
  added_copy_[c] = result_.copies.size() - 1;
  return c;
}

void Planner::AddResultCopy(BindingId b, DeviceIndex src, DeviceIndex dst, std::vector<BindingId>& out) {
  ir::Symbol name = m_.FreshName(absl::StrCat(m_.Name(B(b).name), "_copy"));
  BindingId c = AddPlannedBinding(
      B(b).block, name, DeviceCopyExpr(m_.LocalOperand(ValueRef::Binding(b)), src, dst, B(b).expr.loc), B(b).loc, dst);
  out.push_back(c);
  Replace(b, ValueRef::Binding(c));
  result_.copies.push_back({FuncOf(b), ValueRef::Binding(b), ToModule(src), ToModule(dst), c, ir::kNoBinding, false});
  AwaitConsumer(c, result_.copies.size() - 1);
}

BindingId Planner::AddPlannedBinding(BlockId block, ir::Symbol name, ir::Expr expr, SourceLoc loc, DeviceIndex device) {
  BindingId c = m_.AddBinding(block, name, std::move(expr), loc);
  flags_.push_back(0);
  binding_domain_.push_back(domains_.MakeFirstOrder(device));  // later uses may read through it
  result_.binding_devices.push_back(ToModule(device));
  result_.binding_replaced.push_back(false);
  return c;
}

void Planner::NoteOpenScope(absl::flat_hash_map<uint32_t, DeviceIndex>& agreed, uint32_t key, DomainId signature,
                            DeviceIndex value_device) {
  if (devices_.Get(domains_.Device(signature)).has_memory_scope()) return;
  DeviceIndex scope = WithScope(DeviceTable::kUnconstrained, value_device);
  auto [it, added] = agreed.try_emplace(key, scope);
  if (!added && it->second != scope) it->second = kMixedScopes;
}

void Planner::DropUnreadCopies(std::vector<std::vector<BindingId>>& lists) {
  absl::flat_hash_set<BindingId> read;
  auto note = [&](const Operand& o) {
    if (o.is_local() && o.value.is_binding() && maybe_unread_.contains(o.value.index)) read.insert(o.value.index);
  };
  for (const std::vector<BindingId>& list : lists) {
    for (BindingId b : list) ir::ForEachLocalRead(m_, B(b).expr, note);
  }
  for (const ir::Block& block : m_.blocks) {
    if (analysed_[block.func]) note(block.result);
  }
  auto unread = [&](BindingId c) { return maybe_unread_.contains(c) && !read.contains(c) && IsMove(c); };
  for (std::vector<BindingId>& list : lists) std::erase_if(list, unread);
  std::erase_if(result_.copies, [&](const PlannedCopy& c) { return unread(c.binding); });
  for (BindingId c : maybe_unread_) {
    if (unread(c)) result_.binding_devices[c] = ir::kNoDevice;
  }
}

void Planner::CaptureSignatures() {
  for (FuncId f = 0; f < m_.functions.size(); ++f) {
    ir::Function& fn = m_.functions[f];
    if (fn.kind == FuncKind::kKernel) continue;  // scopes still flow into it (CaptureKernelSignatures)
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      SetParamDevice(p, ToModule(domains_.Device(param_domain_[p])));
    }
    SetResultDevice(f, ToModule(domains_.Device(result_domain_[f])));
    // `on vd` needs a written result type: take the inferred one where none was written.
    if (fn.result_type == ir::kNoType && fn.type != ir::kNoType && m_.types.kind(fn.type) == ir::TypeKind::kFunc) {
      fn.result_type = m_.types.func_result(fn.type);
    }
  }
}

void Planner::ReserveCopies() {
  // The copies are reserved once: a doubling vector would hold up to twice their number, and both
  // buffers at once while it grows. This counts every copy CaptureBinding can make.
  size_t copies_bound = 0;
  for (BindingId b : order_) {
    if (Has(b, kCopyPoint)) {
      copies_bound += Same(domains_.Device(CopyBody(b)), domains_.Device(binding_domain_[b])) ? 0 : 1;
    }
    if (Has(b, kCopiedUses)) copies_bound += copied_uses_.at(b).size();
    if (Has(b, kKernelCall)) copies_bound += B(b).expr.args.count + 1;
  }
  result_.copies.reserve(result_.copies.size() + copies_bound);
}

void Planner::SetOperand(const ir::Expr& e, uint32_t k, ValueRef v) {
  Operand& o = m_.operands[e.args.begin + k];
  result_.input_edits.operands.emplace_back(e.args.begin + k, o);
  o = m_.LocalOperand(v, o.loc);
}

void Planner::SetExpr(BindingId b, const ir::Expr& e) {
  result_.input_edits.exprs.emplace_back(b, m_.bindings[b].expr);
  m_.bindings[b].expr = e;
}

void Planner::SetParamDevice(uint32_t p, ir::DeviceId device) {
  result_.input_edits.param_devices.emplace_back(p, m_.params[p].device);
  m_.params[p].device = device;
}

void Planner::SetResultDevice(FuncId f, ir::DeviceId device) {
  result_.input_edits.result_devices.emplace_back(f, m_.functions[f].result_device);
  m_.functions[f].result_device = device;
}

void Planner::CaptureProjection(BindingId b, const ir::Expr& e, ValueRef annotation, DeviceIndex src, DeviceIndex dst,
                                std::vector<BindingId>& out) {
  // Project the annotated value itself, then copy the field if it moves. The annotation may now be
  // read by nothing.
  maybe_unread_.insert(annotation.index);
  const Operand& annotated = m_.Args(B(annotation.index).expr)[0];
  SetOperand(e, 0, Resolve(annotated.value));
  NoteConsumer(m_.Args(e)[0], b);
  out.push_back(b);
  if (Same(src, dst)) return;
  // The projection keeps its name on the tuple's device; its consumers read `%<name>_copy`.
  result_.binding_devices[b] = ToModule(src);
  AddResultCopy(b, src, dst, out);
  maybe_unread_.insert(out.back());
}

void Planner::CaptureCopyPoint(BindingId b, const ir::Expr& e, ValueRef first_operand, std::vector<BindingId>& out) {
  DeviceIndex src = domains_.Device(CopyBody(b));
  DeviceIndex dst = domains_.Device(binding_domain_[b]);
  result_.binding_devices[b] = ToModule(dst);
  if (e.kind == ExprKind::kProject) return CaptureProjection(b, e, first_operand, src, dst, out);
  const Operand x = m_.Args(e)[0];
  bool written = m_.OpName(e) == "device_copy";
  result_.binding_replaced[b] = !written;
  if (Same(src, dst) && !x.is_local()) {
    // A constant atom (`on_device(3, cpu:0)`) that moves nothing: no name to read instead, so the
    // binding stays, as an alias of the atom (its operand slot reused).
    ir::Expr alias;
    alias.kind = ExprKind::kAlias;
    alias.args = {e.args.begin, 1};
    alias.loc = e.loc;
    SetExpr(b, alias);
    result_.binding_replaced[b] = false;
    ++result_.stats.copies_dropped;
    out.push_back(b);
    return;
  }
  if (Same(src, dst) && x.is_local()) {
    Replace(b, x.value);
    result_.binding_replaced[b] = true;
    result_.binding_devices[b] = ir::kNoDevice;
    ++result_.stats.copies_dropped;
    // A copy made for this binding now feeds this binding's consumers.
    if (auto added = added_copy_.find(x.value.index);
        x.value.is_binding() && added != added_copy_.end() && result_.copies[added->second].into == b) {
      AwaitConsumer(x.value.index, added->second);
    }
    return;
  }
  NoteConsumer(x, b);
  for (const ir::Attr& a : m_.Attrs(e)) NoteConsumer(a.value, b);  // RewriteAsCopy keeps them
  SetExpr(b, RewriteAsCopy(e, src, dst));
  // A copy of a constant atom (`on_device(3, cpu:0)`) is reported as a copy of itself: `of` names
  // a value of the input (PlannedCopy).
  result_.copies.push_back({FuncOf(b), x.is_local() ? x.value : ValueRef::Binding(b), ToModule(src), ToModule(dst), b,
                            written ? b : ir::kNoBinding, written});
  if (!written) AwaitConsumer(b, result_.copies.size() - 1);
  out.push_back(b);
}

void Planner::CaptureKernelOperands(BindingId b, const ir::Expr& e, std::vector<BindingId>& out) {
  const ir::Function& callee = m_.functions[e.func];
  for (uint32_t k = 0; k < e.args.count; ++k) {
    const Operand& o = m_.Args(e)[k];
    DomainId value = OperandDomain(o);
    if (value == kNoDomain || !o.is_local()) continue;
    DeviceIndex src = domains_.Device(value);
    DomainId signature = param_domain_[callee.params.begin + k];
    NoteOpenScope(open_param_scope_, callee.params.begin + k, signature, src);
    DeviceIndex dst = KernelTarget(b, signature, src);
    if (Same(src, dst)) continue;
    SetOperand(e, k, ValueRef::Binding(CopyFor(B(b).block, b, o.value, src, dst, out)));
  }
}

void Planner::CaptureBinding(BindingId b, std::vector<BindingId>& out) {
  if (B(b).expr.attrs.count > 0) ResolveAttrs(b);
  const ir::Expr e = B(b).expr;
  const ValueRef first_operand = e.args.count > 0 ? m_.operands[e.args.begin].value : ValueRef();
  // Operands read through removed bindings.
  for (uint32_t k = 0; k < e.args.count; ++k) {
    const Operand& o = m_.operands[e.args.begin + k];
    if (!o.is_local() || !o.value.is_binding()) continue;
    ValueRef v = Resolve(o.value);
    if (!(v == o.value)) SetOperand(e, k, v);
  }
  // An unused move goes (it was never collected).
  if (IsMove(b) && !Has(b, kLive)) {
    if (m_.Args(e)[0].is_local()) Replace(b, m_.Args(e)[0].value);
    result_.binding_replaced[b] = true;
    ++result_.stats.copies_dropped;
    return;
  }
  // Conflicting primitive uses read from copies.
  if (Has(b, kCopiedUses)) {
    for (const CopiedUse& use : copied_uses_.at(b)) {
      const Operand& o = m_.Args(e)[use.operand];
      DeviceIndex src = domains_.Device(OperandDomain(o));
      DeviceIndex dst = domains_.Device(use.site);
      if (Same(src, dst)) continue;
      SetOperand(e, use.operand, ValueRef::Binding(CopyFor(B(b).block, b, o.value, src, dst, out)));
    }
  }
  if (Has(b, kCopyPoint)) return CaptureCopyPoint(b, e, first_operand, out);
  // Kernel calls copy operands to the call's device (with the kernel's scopes), and the result to
  // where it is used.
  const bool kernel = Has(b, kKernelCall);
  if (kernel) CaptureKernelOperands(b, e, out);
  ir::ForEachLocalRead(m_, e, [&](const Operand& o) { NoteConsumer(o, b); });
  if (e.kind == ExprKind::kIf) {
    for (BlockId arm : {e.then_block, e.else_block}) NoteConsumer(m_.blocks[arm].result, b);
  }
  out.push_back(b);
  result_.binding_devices[b] = ToModule(domains_.Device(binding_domain_[b]));
  if (kernel) {
    DeviceIndex used = domains_.Device(binding_domain_[b]);
    NoteOpenScope(open_result_scope_, e.func, result_domain_[e.func], used);
    DeviceIndex src = KernelTarget(b, result_domain_[e.func], used);
    result_.binding_devices[b] = ToModule(src);
    if (!Same(src, used)) AddResultCopy(b, src, used, out);
  }
}

void Planner::ResolveBlockResults() {
  for (BlockId blk = 0; blk < m_.blocks.size(); ++blk) {
    ir::Block& block = m_.blocks[blk];
    if (!analysed_[block.func] || !block.result.is_local()) continue;
    ValueRef v = Resolve(block.result.value);
    if (!(v == block.result.value)) {
      result_.input_edits.block_results.emplace_back(blk, block.result);
      block.result = m_.LocalOperand(v, block.result.loc);
    }
    if (v.is_binding() && Has(v.index, kAwaiting)) {
      awaiting_consumer_.erase(v.index);
      flags_[v.index] &= ~kAwaiting;
    }
  }
}

void Planner::CaptureKernelSignatures() {
  // Kernels' signatures: scopes only. An open scope takes the one all calls agree on (planning the
  // output then decides the same), else stays open (unwritten).
  auto scope_only = [&](DomainId d, const absl::flat_hash_map<uint32_t, DeviceIndex>& agreed, uint32_t key) {
    DeviceIndex device = domains_.Device(d);
    if (auto it = agreed.find(key); it != agreed.end() && it->second != kMixedScopes) device = it->second;
    return devices_.IsFullyUnconstrained(device) ? ir::kNoDevice : ToModule(device);
  };
  for (FuncId f : m_.items) {
    ir::Function& fn = m_.functions[f];
    if (fn.kind != FuncKind::kKernel) continue;
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      SetParamDevice(p, scope_only(param_domain_[p], open_param_scope_, p));
    }
    SetResultDevice(f, scope_only(result_domain_[f], open_result_scope_, f));
  }
}

void Planner::Capture() {
  result_.binding_devices.assign(m_.bindings.size(), ir::kNoDevice);
  result_.binding_replaced.assign(m_.bindings.size(), false);
  CaptureSignatures();
  ReserveCopies();
  src_symbol_ = m_.symbols.Intern("src");
  dst_symbol_ = m_.symbols.Intern("dst");
  // Each block's new list is built in its old list's buffer (nothing below reads the old lists):
  // copies mostly replace their annotation in place, so a million-binding block's list neither
  // doubles nor exists twice.
  std::vector<std::vector<BindingId>> lists(m_.blocks.size());
  for (BlockId blk = 0; blk < m_.blocks.size(); ++blk) {
    if (!analysed_[m_.blocks[blk].func]) continue;
    lists[blk] = std::move(m_.blocks[blk].bindings);
    lists[blk].clear();
  }
  for (BindingId b : order_) CaptureBinding(b, lists[B(b).block]);
  ResolveBlockResults();
  if (!maybe_unread_.empty()) DropUnreadCopies(lists);
  for (BlockId blk = 0; blk < m_.blocks.size(); ++blk) {
    if (analysed_[m_.blocks[blk].func]) m_.blocks[blk].bindings = std::move(lists[blk]);
  }
  CaptureKernelSignatures();
  result_.stats.copies = result_.copies.size();
}

}  // namespace vdev::planner_internal
