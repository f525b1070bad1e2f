// PlanDevices: collect device constraints over domains, join free boundaries, default, capture.
//
// Every value gets a domain: a parameter from its function's signature, a binding from its
// expression (a primitive call site's own domain, a call's result domain, a tuple's domain, …).
// Copy points are the bindings whose value may live elsewhere than what they read: on_device,
// device_copy and projections of an on_device result; they keep their body's domain on the side.
// Capture turns each copy point whose two devices differ into a device_copy binding.
#include "vdev/plan_devices.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "src/planner/conflict_core.h"
#include "src/planner/device_domains.h"
#include "vdev/builtin_ops.h"
#include "vdev/status_macros.h"

namespace vdev {
namespace {

using ir::BindingId;
using ir::BlockId;
using ir::ExprKind;
using ir::FuncId;
using ir::FuncKind;
using ir::Operand;
using ir::ValueRef;
using planner_internal::ConflictProblem;
using planner_internal::DeviceDomains;
using planner_internal::DeviceIndex;
using planner_internal::DeviceTable;
using planner_internal::DomainId;
using planner_internal::UnifyConflict;

constexpr DomainId kNoDomain = UINT32_MAX;

// What put a device on a domain; the annotations of a conflict are reported from these.
enum class PinKind : uint8_t { kOnDevice, kCopySrc, kCopyDst, kParam, kResult, kHost, kAlloc, kKernelParam, kKernelResult };

// Where it is written follows from `kind` and `ref` (Planner::PinLoc): an annotation-heavy program
// has a pin per annotation, so it is not stored.
struct Pin {
  DomainId domain;
  DeviceIndex device;
  PinKind kind;
  uint32_t ref;  // the binding, parameter or function the pin is written on
};

// A use of an operand whose value could not join the use site: the value is copied to the site.
struct CopiedUse {
  uint32_t operand;
  DomainId site;
};

// Devices compare by type, id and scope when deciding whether a copy moves anything.
bool SameDevice(const VirtualDevice& a, const VirtualDevice& b) {
  return a.device_type() == b.device_type() && a.virtual_device_id() == b.virtual_device_id() &&
         a.memory_scope() == b.memory_scope();
}

std::string LocText(SourceLoc loc) { return absl::StrCat(loc.line, ":", loc.col); }

class Planner {
 public:
  Planner(ir::Module& module, const PlanOptions& options, PlanError* error)
      : m_(module), options_(options), error_(error), domains_(&devices_) {}

  absl::Status Run();
  PlanResult TakeResult();

 private:
  class Collector;

  // --- Signatures ---------------------------------------------------------------------------
  void MakeSignatures();
  DomainId DomainForType(ir::TypeId type);

  // --- Collection -----------------------------------------------------------------------------
  absl::Status CollectBinding(BindingId b);
  absl::Status CollectOpCall(BindingId b);
  absl::Status FinishFunction(FuncId f);
  DomainId OperandDomain(const Operand& o);
  void NoteUse(const Operand& o, DomainId site, BindingId user);
  DomainId PinnedDomain(DeviceIndex device, PinKind kind, uint32_t ref);
  SourceLoc PinLoc(const Pin& pin) const;
  // Where attribute `key` of an op call is written (its value), else the call.
  SourceLoc AttrLoc(const ir::Expr& e, absl::string_view key) const;
  // Annotations make most domains and every pin of an annotated program; reserving for them once
  // keeps those arenas from doubling (and from existing twice while they grow).
  void ReserveForAnnotations();
  // A value used by a primitive op at `site`: joined, or copied (with a warning), or an error.
  absl::Status PrimitiveUse(BindingId b, uint32_t operand, DomainId site);
  // Structural equality (calls, tuples, if, returns): a conflict is an error in both modes.
  absl::Status HardUnify(DomainId a, DomainId b, SourceLoc loc, absl::string_view what);
  absl::Status ConflictError(const UnifyConflict& conflict, SourceLoc loc, std::string message);
  std::string DescribePin(const Pin& pin) const;
  std::string DescribeValue(const Operand& o) const;
  std::string DeviceText(DeviceIndex d) const { return devices_.Get(d).ToString(); }

  // --- Later phases ----------------------------------------------------------------------------
  void JoinFreeBoundaries();
  void ApplyDefaults();
  void Capture();
  ValueRef Resolve(ValueRef v) const;
  // The device_copy binding that brings `value` to `dst` for a use in `block`, made on first need.
  BindingId CopyFor(BlockId block, BindingId consumer, ValueRef value, DeviceIndex src, DeviceIndex dst,
                    std::vector<BindingId>& out);
  ir::Expr DeviceCopyExpr(const Operand& value, DeviceIndex src, DeviceIndex dst, SourceLoc loc);
  // An on_device or device_copy as `device_copy(x, src, dst)`, reusing its operand slot for x (so
  // the operand arena does not grow).
  ir::Expr RewriteAsCopy(const ir::Expr& e, DeviceIndex src, DeviceIndex dst);
  ir::Attr DeviceAttr(ir::Symbol key, DeviceIndex device);
  // The `src=…, dst=…` attributes of a copy between two devices: one range shared by all such
  // copies (attribute ranges are never written through), so 300,000 copies add no attributes.
  ir::Range CopyAttrs(DeviceIndex src, DeviceIndex dst);
  // The planned module's id for a device (memoised: devices are few, bindings many).
  ir::DeviceId ToModule(DeviceIndex d) {
    if (d >= module_device_.size()) module_device_.resize(d + 1, ir::kNoDevice);
    if (module_device_[d] == ir::kNoDevice) module_device_[d] = m_.devices.Intern(devices_.Get(d));
    return module_device_[d];
  }
  // A binding the plan adds, with the device of its value.
  BindingId AddPlannedBinding(BlockId block, ir::Symbol name, ir::Expr expr, SourceLoc loc, DeviceIndex device);
  void NoteConsumer(const Operand& o, BindingId consumer);
  // on_device and device_copy: bindings that only move a value, and go when nothing reads them.
  bool IsMove(BindingId b) const {
    if (B(b).expr.kind != ExprKind::kOpCall) return false;
    absl::string_view op = m_.OpName(B(b).expr);
    return op == "on_device" || op == "device_copy";
  }
  // kLive on every binding something kept reads: moves read only by unused moves are unused too.
  void MarkLive();
  void AwaitConsumer(BindingId copy, size_t index) {
    awaiting_consumer_[copy] = index;
    Set(copy, kAwaiting);
  }
  void Replace(BindingId b, ValueRef by) {
    replaced_by_[b] = by;
    Set(b, kReplaced);
  }

  const ir::Binding& B(BindingId b) const { return m_.bindings[b]; }
  FuncId FuncOf(BindingId b) const { return m_.blocks[m_.bindings[b].block].func; }

  ir::Module& m_;
  const PlanOptions& options_;
  PlanError* error_;
  DeviceTable devices_;
  DeviceDomains domains_;
  DeviceIndex default_device_ = 0;
  DeviceIndex host_device_ = 0;
  size_t input_bindings_ = 0;

  std::vector<DomainId> param_domain_;
  std::vector<DomainId> result_domain_;   // by FuncId
  std::vector<DomainId> func_domain_;     // by FuncId: the signature
  std::vector<bool> analysed_;            // by FuncId: not a kernel, not inside fn[primitive]
  std::vector<DomainId> binding_domain_;  // by BindingId
  std::vector<DomainId> first_use_;       // by BindingId: the site of its first consumer
  std::vector<BindingId> first_user_;     // by BindingId: its first consumer
  // Copy points: on_device, device_copy and projections of an on_device result → body domain.
  // Nearly always the domain made just before the copy point's own (a pinned body, then the result)
  // or the same one, which flags record, so only the others are stored (a vector by binding would
  // cost every binding 4 bytes).
  absl::flat_hash_map<BindingId, DomainId> other_copy_body_;
  void SetCopyPoint(BindingId b, DomainId body) {
    Set(b, kCopyPoint);
    if (body == binding_domain_[b]) {
      Set(b, kBodyIsOwn);
    } else if (body + 1 == binding_domain_[b]) {
      Set(b, kBodyIsPrevious);
    } else {
      other_copy_body_[b] = body;
    }
  }
  DomainId CopyBody(BindingId b) const {
    if (Has(b, kBodyIsOwn)) return binding_domain_[b];
    if (Has(b, kBodyIsPrevious)) return binding_domain_[b] - 1;
    return other_copy_body_.at(b);
  }
  absl::flat_hash_map<BindingId, std::vector<CopiedUse>> copied_uses_;
  // Kernel calls: the kernel's parameter domains are the use sites; the result's own domain.
  absl::flat_hash_map<BindingId, DomainId> kernel_result_;
  std::vector<std::pair<DomainId, DomainId>> free_pairs_;  // free on_device, kernel boundaries
  std::vector<Pin> pins_;  // a domain's origin is an index into pins_
  // Post-order of analysed bindings (a binding after its nested blocks), and each item's range.
  std::vector<BindingId> order_;
  std::vector<std::pair<FuncId, std::pair<size_t, size_t>>> item_ranges_;

  // Capture.
  absl::flat_hash_map<BindingId, ValueRef> replaced_by_;
  // Copies made for conflicts and kernel boundaries, per (function, value, destination).
  absl::flat_hash_map<std::tuple<FuncId, ValueRef, DeviceIndex>, std::vector<BindingId>> shared_copies_;
  absl::flat_hash_map<BindingId, size_t> awaiting_consumer_;  // copy binding → index in copies
  absl::flat_hash_map<BindingId, size_t> added_copy_;         // copies the planner added → index
  absl::flat_hash_map<std::pair<DeviceIndex, DeviceIndex>, ir::Range> copy_attrs_;
  // Per binding: which of the maps above hold it (so the common binding costs no hash lookup), and
  // kLive (MarkLive).
  enum Flag : uint8_t {
    kCopyPoint = 1,
    kCopiedUses = 2,
    kKernelCall = 4,
    kReplaced = 8,
    kAwaiting = 16,
    kLive = 32,
    kBodyIsOwn = 64,       // a copy point's body domain is its own (SetCopyPoint)
    kBodyIsPrevious = 128  // … or the one before
  };
  std::vector<uint8_t> flags_;
  bool Has(BindingId b, uint8_t flag) const { return b < flags_.size() && (flags_[b] & flag) != 0; }
  void Set(BindingId b, uint8_t flag) { flags_[b] |= flag; }

  std::vector<ir::DeviceId> module_device_;
  ir::Symbol device_copy_symbol_ = ir::kNoSymbol;
  ir::Symbol src_symbol_ = ir::kNoSymbol;
  ir::Symbol dst_symbol_ = ir::kNoSymbol;
  PlanResult result_;
};

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

void Planner::MakeSignatures() {
  size_t nf = m_.functions.size();
  param_domain_.assign(m_.params.size(), kNoDomain);
  result_domain_.assign(nf, kNoDomain);
  func_domain_.assign(nf, kNoDomain);
  analysed_.assign(nf, false);
  for (FuncId f = 0; f < nf; ++f) {
    const ir::Function& fn = m_.functions[f];
    bool inside_primitive = fn.kind == FuncKind::kLocal && fn.parent != ir::kNoFunc && !analysed_[fn.parent];
    analysed_[f] = fn.kind != FuncKind::kKernel && !fn.primitive && !inside_primitive;
    std::vector<DomainId> params;
    PinKind param_pin = fn.kind == FuncKind::kKernel ? PinKind::kKernelParam : PinKind::kParam;
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      const ir::Param& param = m_.params[p];
      DomainId d = DomainForType(param.type);
      if (param.device != ir::kNoDevice) {
        DeviceIndex device = devices_.Intern(m_.Device(param.device));
        pins_.push_back({domains_.ResultLeaf(d), device, param_pin, p});
        domains_.Constrain(d, device, static_cast<uint32_t>(pins_.size() - 1));
      }
      param_domain_[p] = d;
      params.push_back(d);
    }
    ir::TypeId result_type = fn.result_type;
    if (result_type == ir::kNoType && fn.type != ir::kNoType && m_.types.kind(fn.type) == ir::TypeKind::kFunc) {
      result_type = m_.types.func_result(fn.type);
    }
    DomainId result = DomainForType(result_type);
    if (fn.result_device != ir::kNoDevice) {
      DeviceIndex device = devices_.Intern(m_.Device(fn.result_device));
      PinKind kind = fn.kind == FuncKind::kKernel ? PinKind::kKernelResult : PinKind::kResult;
      pins_.push_back({domains_.ResultLeaf(result), device, kind, f});
      domains_.Constrain(result, device, static_cast<uint32_t>(pins_.size() - 1));
    }
    result_domain_[f] = result;
    func_domain_[f] = domains_.MakeHigherOrder(params, result);
  }
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
    case PinKind::kKernelParam:
      return m_.params[pin.ref].device_loc;
    case PinKind::kResult:
    case PinKind::kKernelResult:
      return m_.functions[pin.ref].result_device_loc;
    case PinKind::kOnDevice: {
      const ir::Expr& e = B(pin.ref).expr;
      const Operand& device = m_.Args(e)[1];
      return device.loc.valid() ? device.loc : e.loc;
    }
    case PinKind::kCopySrc:
      return AttrLoc(B(pin.ref).expr, "src");
    case PinKind::kCopyDst:
      return AttrLoc(B(pin.ref).expr, "dst");
    case PinKind::kAlloc:
      return AttrLoc(B(pin.ref).expr, "device");
    case PinKind::kHost:
      return B(pin.ref).expr.loc;
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
  domains_.Reserve(domains_.size() + domains);
  pins_.reserve(pins_.size() + pins);
}

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
    case PinKind::kCopySrc:
      return absl::StrCat("device_copy src=", device, " of %", m_.Name(B(pin.ref).name));
    case PinKind::kCopyDst:
      return absl::StrCat("device_copy dst=", device, " of %", m_.Name(B(pin.ref).name));
    case PinKind::kParam:
      return absl::StrCat("parameter %", m_.Name(m_.params[pin.ref].name), " on ", device);
    case PinKind::kKernelParam:
      return absl::StrCat("kernel parameter %", m_.Name(m_.params[pin.ref].name), " on ", device);
    case PinKind::kResult:
      return absl::StrCat("result of ", m_.functions[pin.ref].kind == FuncKind::kLocal ? "%" : "@",
                          m_.Name(m_.functions[pin.ref].name), " on ", device);
    case PinKind::kKernelResult:
      return absl::StrCat("result of kernel @", m_.Name(m_.functions[pin.ref].name), " on ", device);
    case PinKind::kHost:
      return absl::StrCat("host operand of ", m_.OpName(B(pin.ref).expr), " (", device, ")");
    case PinKind::kAlloc:
      return absl::StrCat("memory.alloc_storage device=", device);
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
  std::string message =
      conflict->arity_mismatch
          ? absl::StrCat(what, ": a function of the wrong number of parameters")
          : absl::StrCat(what, ": ", DeviceText(conflict->lhs_device), " and ", DeviceText(conflict->rhs_device),
                         " cannot be joined");
  return ConflictError(*conflict, loc, std::move(message));
}

absl::Status Planner::PrimitiveUse(BindingId b, uint32_t operand, DomainId site) {
  const Operand& o = m_.Args(B(b).expr)[operand];
  DomainId value = OperandDomain(o);
  if (value == kNoDomain) return absl::OkStatus();
  BindingId earlier_user =
      o.is_local() && o.value.is_binding() ? first_user_[o.value.index] : ir::kNoBinding;
  NoteUse(o, site, b);
  DeviceIndex value_device = domains_.Device(value);
  uint32_t value_origin = domains_.Origin(value);
  uint32_t site_origin = domains_.Origin(site);
  std::optional<UnifyConflict> conflict = domains_.Unify(value, site);
  if (!conflict) return absl::OkStatus();
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
    absl::StrAppend(&message, " (", DescribePin(pins_[value_origin]), " at ", LocText(PinLoc(pins_[value_origin])), ")");
  }
  absl::StrAppend(&message, " and on ", DeviceText(domains_.Device(site)), " by the use at ", LocText(use_loc),
                  "; copied for the later use");
  result_.warnings.push_back({Severity::kWarning, use_loc, std::move(message)});
  copied_uses_[b].push_back({operand, site});
  Set(b, kCopiedUses);
  ++result_.stats.conflict_copies;
  return absl::OkStatus();
}

absl::Status Planner::CollectOpCall(BindingId b) {
  const ir::Expr& e = B(b).expr;
  absl::string_view op = m_.OpName(e);
  auto args = m_.Args(e);
  auto host_site = [&]() { return PinnedDomain(host_device_, PinKind::kHost, b); };

  if (std::optional<ir::OnDeviceCall> on = ir::AsOnDevice(m_, e)) {
    DeviceIndex vd = devices_.Intern(m_.Device(on->device));
    bool constrain_result = on->constrain_result;
    const ir::Block& block = m_.blocks[B(b).block];
    bool returned = block.owner == ir::kNoBinding && block.result.is_local() &&
                    block.result.value == ValueRef::Binding(b);
    if (returned && on->constrain_body) constrain_result = true;  // a returned on_device pins the result
    DomainId body;
    if (on->constrain_body) {
      body = PinnedDomain(vd, PinKind::kOnDevice, b);
      VDEV_RETURN_IF_ERROR(PrimitiveUse(b, 0, body));
    } else {
      body = OperandDomain(on->value);
      if (body == kNoDomain) body = domains_.MakeFirstOrder();
    }
    DomainId result;
    if (constrain_result) {
      result = on->constrain_body ? body : PinnedDomain(vd, PinKind::kOnDevice, b);
    } else {
      result = domains_.MakeFirstOrder();
      if (on->is_free()) free_pairs_.emplace_back(body, result);
    }
    binding_domain_[b] = result;
    SetCopyPoint(b, body);  // also when result == body: the on_device goes, as a copy from src to src
    return absl::OkStatus();
  }
  if (std::optional<ir::DeviceCopyCall> copy = ir::AsDeviceCopy(m_, e)) {
    DomainId body = PinnedDomain(devices_.Intern(m_.Device(copy->src)), PinKind::kCopySrc, b);
    VDEV_RETURN_IF_ERROR(PrimitiveUse(b, 0, body));
    binding_domain_[b] = PinnedDomain(devices_.Intern(m_.Device(copy->dst)), PinKind::kCopyDst, b);
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
    binding_domain_[b] =
        PinnedDomain(devices_.Intern(m_.Device(alloc->device)), PinKind::kAlloc, b);
    return absl::OkStatus();
  }
  if (op == "memory.alloc_tensor" || op == "vm.reshape_tensor") {
    // The first operand (storage, data) shares the result's device; the others are on the host.
    DomainId result = domains_.MakeFirstOrder();
    for (uint32_t k = 0; k < args.size(); ++k) {
      absl::Status s = PrimitiveUse(b, k, k == 0 ? result : host_site());
      if (!s.ok()) return s;
    }
    binding_domain_[b] = result;
    return absl::OkStatus();
  }
  // Any other op: operands and result on one device, chosen for this call site. The first operand's
  // domain serves as the site (joining it with a fresh `?` would change nothing) and saves a domain.
  DomainId site = kNoDomain;
  for (const Operand& o : args) {
    if (o.is_device()) continue;
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

absl::Status Planner::CollectBinding(BindingId b) {
  const ir::Binding& binding = B(b);
  const ir::Expr& e = binding.expr;
  auto args = m_.Args(e);
  switch (e.kind) {
    case ExprKind::kOpCall:
      return CollectOpCall(b);
    case ExprKind::kCallGlobal: {
      const ir::Function& callee = m_.functions[e.func];
      auto params = m_.Params(callee);
      if (params.size() != args.size()) {
        return ConflictError(UnifyConflict{0, 0, 0, 0, true}, e.loc,
                             absl::StrCat("@", m_.Name(callee.name), " takes ", params.size(), " arguments, not ",
                                          args.size()));
      }
      if (callee.kind == FuncKind::kKernel) {
        // The kernel boundary may copy: operands and result join the signature only where they can.
        for (uint32_t k = 0; k < args.size(); ++k) {
          DomainId value = OperandDomain(args[k]);
          if (value == kNoDomain) continue;
          DomainId param = param_domain_[callee.params.begin + k];
          NoteUse(args[k], param, b);
          free_pairs_.emplace_back(value, param);
        }
        DomainId result = domains_.MakeFirstOrder();
        free_pairs_.emplace_back(result_domain_[e.func], result);
        kernel_result_[b] = result_domain_[e.func];
        Set(b, kKernelCall);
        binding_domain_[b] = result;
        return absl::OkStatus();
      }
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
    case ExprKind::kCallValue: {
      DomainId callee = OperandDomain(args[0]);
      NoteUse(args[0], callee, b);
      if (callee != kNoDomain && domains_.IsHigherOrder(callee)) {
        if (domains_.Arity(callee) != args.size() - 1) {
          return ConflictError(UnifyConflict{0, 0, 0, 0, true}, e.loc,
                               absl::StrCat(DescribeValue(args[0]), " takes ", domains_.Arity(callee),
                                            " arguments, not ", args.size() - 1));
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
    case ExprKind::kTuple: {
      DomainId tuple = domains_.MakeFirstOrder();
      for (const Operand& field : args) {
        DomainId value = OperandDomain(field);
        if (value == kNoDomain) continue;
        NoteUse(field, tuple, b);
        VDEV_RETURN_IF_ERROR(HardUnify(tuple, value, field.loc.valid() ? field.loc : e.loc, "a tuple field"));
      }
      binding_domain_[b] = tuple;
      return absl::OkStatus();
    }
    case ExprKind::kProject: {
      const Operand& t = args[0];
      // Projecting an on_device result projects the annotated tuple, then copies only the field.
      if (t.is_local() && t.value.is_binding()) {
        const ir::Expr& te = B(t.value.index).expr;
        if (Has(t.value.index, kCopyPoint) && te.kind == ExprKind::kOpCall && m_.OpName(te) == "on_device") {
          binding_domain_[b] = domains_.MakeFirstOrder();
          SetCopyPoint(b, CopyBody(t.value.index));
          return absl::OkStatus();
        }
      }
      DomainId tuple = OperandDomain(t);
      binding_domain_[b] = tuple != kNoDomain ? tuple : domains_.MakeFirstOrder();
      NoteUse(t, binding_domain_[b], b);
      return absl::OkStatus();
    }
    case ExprKind::kIf: {
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
    case ExprKind::kFn:
      binding_domain_[b] = func_domain_[e.func];
      return absl::OkStatus();
    case ExprKind::kConst:
      binding_domain_[b] = domains_.MakeFirstOrder();
      return absl::OkStatus();
    case ExprKind::kAlias: {
      DomainId value = OperandDomain(args[0]);
      binding_domain_[b] = value != kNoDomain ? value : domains_.MakeFirstOrder();
      NoteUse(args[0], binding_domain_[b], b);
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown expression kind");
}

absl::Status Planner::FinishFunction(FuncId f) {
  const ir::Function& fn = m_.functions[f];
  if (fn.body == ir::kNoBlock) return absl::OkStatus();
  const ir::Block& body = m_.blocks[fn.body];
  DomainId value = OperandDomain(body.result);
  if (value == kNoDomain) return absl::OkStatus();
  NoteUse(body.result, result_domain_[f], ir::kNoBinding);
  return HardUnify(result_domain_[f], value, body.return_loc.valid() ? body.return_loc : body.result.loc,
                   "the returned value");
}

// --- Free boundaries and defaults ---------------------------------------------------------------

void Planner::JoinFreeBoundaries() {
  for (const auto& [a, b] : free_pairs_) {
    if (domains_.CanUnify(a, b)) (void)domains_.Unify(a, b);
  }
}

void Planner::ApplyDefaults() {
  for (FuncId f : m_.items) {
    if (m_.functions[f].kind == FuncKind::kKernel) domains_.SetDefault(func_domain_[f], default_device_);
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
          if (value != kNoDomain) {
            domains_.SetDefault(value, domains_.Device(param_domain_[kernel.params.begin + k]));
          }
        }
      }
    }
  }
  // Primitive functions' signatures and anything no function reached.
  for (FuncId f = 0; f < m_.functions.size(); ++f) domains_.SetDefault(func_domain_[f], default_device_);
}

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
    if (IsMove(b) && !Has(b, kLive)) continue;
    for (const Operand& o : m_.Args(B(b).expr)) mark(o);
  }
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

BindingId Planner::AddPlannedBinding(BlockId block, ir::Symbol name, ir::Expr expr, SourceLoc loc,
                                     DeviceIndex device) {
  BindingId c = m_.AddBinding(block, name, std::move(expr), loc);
  flags_.push_back(0);
  binding_domain_.push_back(domains_.MakeFirstOrder(device));  // later uses may read through it
  result_.binding_devices.push_back(ToModule(device));
  result_.binding_replaced.push_back(false);
  return c;
}

void Planner::Capture() {
  std::vector<ir::DeviceId>& devices_out = result_.binding_devices;
  devices_out.assign(m_.bindings.size(), ir::kNoDevice);
  result_.binding_replaced.assign(m_.bindings.size(), false);
  auto same = [&](DeviceIndex a, DeviceIndex b) { return SameDevice(devices_.Get(a), devices_.Get(b)); };
  for (FuncId f = 0; f < m_.functions.size(); ++f) {
    ir::Function& fn = m_.functions[f];
    for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
      m_.params[p].device = ToModule(domains_.Device(param_domain_[p]));
    }
    fn.result_device = ToModule(domains_.Device(result_domain_[f]));
    // `on vd` needs a written result type: take the inferred one where none was written.
    if (fn.result_type == ir::kNoType && fn.type != ir::kNoType && m_.types.kind(fn.type) == ir::TypeKind::kFunc) {
      fn.result_type = m_.types.func_result(fn.type);
    }
  }
  // The copies are reserved once: a doubling vector would hold up to twice their number, and both
  // buffers at once while it grows. This counts every copy the loop below can make.
  size_t copies_bound = 0;
  for (BindingId b : order_) {
    if (Has(b, kCopyPoint)) {
      copies_bound += same(domains_.Device(CopyBody(b)), domains_.Device(binding_domain_[b])) ? 0 : 1;
    }
    if (Has(b, kCopiedUses)) copies_bound += copied_uses_.at(b).size();
    if (Has(b, kKernelCall)) copies_bound += B(b).expr.args.count + 1;
  }
  result_.copies.reserve(result_.copies.size() + copies_bound);
  device_copy_symbol_ = m_.symbols.Intern("device_copy");
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
  auto set_operand = [&](const ir::Expr& e, uint32_t k, ValueRef v) {
    Operand& o = m_.operands[e.args.begin + k];
    o = m_.LocalOperand(v, o.loc);
  };
  for (BindingId b : order_) {
    BlockId block = B(b).block;
    std::vector<BindingId>& out = lists[block];
    const ir::Expr e = B(b).expr;
    ValueRef first_operand = e.args.count > 0 ? m_.operands[e.args.begin].value : ValueRef();
    // Operands read through removed bindings.
    for (uint32_t k = 0; k < e.args.count; ++k) {
      const Operand& o = m_.operands[e.args.begin + k];
      if (!o.is_local() || !o.value.is_binding()) continue;
      ValueRef v = Resolve(o.value);
      if (!(v == o.value)) set_operand(e, k, v);
    }
    // An unused move goes (it was never collected).
    if (IsMove(b) && !Has(b, kLive)) {
      if (m_.Args(e)[0].is_local()) Replace(b, m_.Args(e)[0].value);
      result_.binding_replaced[b] = true;
      ++result_.stats.copies_dropped;
      continue;
    }
    // Conflicting primitive uses read from copies.
    if (Has(b, kCopiedUses)) {
      for (const CopiedUse& use : copied_uses_.at(b)) {
        const Operand& o = m_.Args(e)[use.operand];
        DeviceIndex src = domains_.Device(OperandDomain(o));
        DeviceIndex dst = domains_.Device(use.site);
        if (same(src, dst)) continue;
        set_operand(e, use.operand, ValueRef::Binding(CopyFor(block, b, o.value, src, dst, out)));
      }
    }
    if (Has(b, kCopyPoint)) {
      DeviceIndex src = domains_.Device(CopyBody(b));
      DeviceIndex dst = domains_.Device(binding_domain_[b]);
      devices_out[b] = ToModule(dst);
      if (e.kind == ExprKind::kProject) {
        // Project the annotated value itself, then copy the field if it moves.
        const Operand& annotated = m_.Args(B(first_operand.index).expr)[0];
        ValueRef source = Resolve(annotated.value);
        set_operand(e, 0, source);
        NoteConsumer(m_.Args(e)[0], b);
        if (same(src, dst)) {
          out.push_back(b);
          continue;
        }
        ir::Symbol name = m_.FreshName(absl::StrCat(m_.Name(B(b).name), "_field"));
        BindingId field = AddPlannedBinding(block, name, e, B(b).loc, src);
        out.push_back(field);
        m_.bindings[b].expr = DeviceCopyExpr(m_.LocalOperand(ValueRef::Binding(field)), src, dst, e.loc);
        result_.copies.push_back({FuncOf(b), source, ToModule(src), ToModule(dst), b, ir::kNoBinding, false});
        AwaitConsumer(b, result_.copies.size() - 1);
        out.push_back(b);
        continue;
      }
      const Operand x = m_.Args(e)[0];
      bool written = m_.OpName(e) == "device_copy";
      result_.binding_replaced[b] = !written;
      if (same(src, dst) && x.is_local()) {
        Replace(b, x.value);
        result_.binding_replaced[b] = true;
        devices_out[b] = ir::kNoDevice;
        ++result_.stats.copies_dropped;
        // A copy made for this binding now feeds this binding's consumers.
        if (auto added = added_copy_.find(x.value.index); x.value.is_binding() && added != added_copy_.end() &&
                                                          result_.copies[added->second].into == b) {
          AwaitConsumer(x.value.index, added->second);
        }
        continue;
      }
      NoteConsumer(x, b);
      m_.bindings[b].expr = RewriteAsCopy(e, src, dst);
      result_.copies.push_back({FuncOf(b), x.value, ToModule(src), ToModule(dst), b,
                                written ? b : ir::kNoBinding, written});
      if (!written) AwaitConsumer(b, result_.copies.size() - 1);
      out.push_back(b);
      continue;
    }
    // Kernel calls copy operands to the kernel's devices, and the result to where it is used.
    auto kernel = Has(b, kKernelCall) ? kernel_result_.find(b) : kernel_result_.end();
    if (kernel != kernel_result_.end()) {
      const ir::Function& callee = m_.functions[e.func];
      for (uint32_t k = 0; k < e.args.count; ++k) {
        const Operand& o = m_.Args(e)[k];
        DomainId value = OperandDomain(o);
        if (value == kNoDomain || !o.is_local()) continue;
        DeviceIndex src = domains_.Device(value);
        DeviceIndex dst = domains_.Device(param_domain_[callee.params.begin + k]);
        if (same(src, dst)) continue;
        set_operand(e, k, ValueRef::Binding(CopyFor(block, b, o.value, src, dst, out)));
      }
    }
    for (const Operand& o : m_.Args(e)) NoteConsumer(o, b);
    if (e.kind == ExprKind::kIf) {
      for (BlockId arm : {e.then_block, e.else_block}) NoteConsumer(m_.blocks[arm].result, b);
    }
    out.push_back(b);
    devices_out[b] = ToModule(domains_.Device(binding_domain_[b]));
    if (kernel != kernel_result_.end()) {
      DeviceIndex src = domains_.Device(kernel->second);
      DeviceIndex dst = domains_.Device(binding_domain_[b]);
      devices_out[b] = ToModule(src);
      if (!same(src, dst)) {
        ir::Symbol name = m_.FreshName(absl::StrCat(m_.Name(B(b).name), "_copy"));
        BindingId c = AddPlannedBinding(
            block, name, DeviceCopyExpr(m_.LocalOperand(ValueRef::Binding(b)), src, dst, e.loc), B(b).loc, dst);
        out.push_back(c);
        Replace(b, ValueRef::Binding(c));
        result_.copies.push_back({FuncOf(b), ValueRef::Binding(b), ToModule(src), ToModule(dst), c,
                                  ir::kNoBinding, false});
        AwaitConsumer(c, result_.copies.size() - 1);
      }
    }
  }
  for (BlockId blk = 0; blk < m_.blocks.size(); ++blk) {
    ir::Block& block = m_.blocks[blk];
    if (!analysed_[block.func]) continue;
    if (block.result.is_local()) {
      ValueRef v = Resolve(block.result.value);
      if (!(v == block.result.value)) block.result = m_.LocalOperand(v, block.result.loc);
      if (v.is_binding() && Has(v.index, kAwaiting)) {
        awaiting_consumer_.erase(v.index);
        flags_[v.index] &= ~kAwaiting;
      }
    }
    block.bindings = std::move(lists[blk]);
  }
  result_.stats.copies = result_.copies.size();
}

// --- Driver ------------------------------------------------------------------------------------

absl::Status Planner::Run() {
  default_device_ = devices_.Intern(options_.default_device.value_or(m_.config.EffectiveDefault()));
  host_device_ = devices_.Intern(options_.host_device.value_or(m_.config.EffectiveHost()));
  input_bindings_ = m_.bindings.size();
  binding_domain_.assign(input_bindings_, kNoDomain);
  first_use_.assign(input_bindings_, kNoDomain);
  first_user_.assign(input_bindings_, ir::kNoBinding);
  flags_.assign(input_bindings_, 0);
  order_.reserve(input_bindings_);
  MakeSignatures();
  Collector ordering(this, /*ordering=*/true);
  for (FuncId f : m_.items) {
    size_t begin = order_.size();
    ir::WalkFunction(m_, f, ordering);
    if (m_.functions[f].kind != FuncKind::kKernel) item_ranges_.push_back({f, {begin, order_.size()}});
  }
  // An on_device or device_copy whose value nothing uses is dropped and constrains nothing: planning
  // the output, where it is gone, must decide the same.
  MarkLive();
  ReserveForAnnotations();
  Collector collector(this, /*ordering=*/false);
  for (FuncId f : m_.items) {
    ir::WalkFunction(m_, f, collector);
    VDEV_RETURN_IF_ERROR(collector.status());
  }
  JoinFreeBoundaries();
  ApplyDefaults();
  result_.stats.bindings = order_.size();
  result_.stats.domains = domains_.size();
  result_.input_bindings = input_bindings_;
  // Only collection and defaulting read these (the pins for conflict messages): freeing them before
  // Capture allocates its outputs lowers the peak (8 bytes per binding, 16 per annotation).
  first_use_ = std::vector<DomainId>();
  first_user_ = std::vector<BindingId>();
  pins_ = std::vector<Pin>();
  Capture();
  return absl::OkStatus();
}

PlanResult Planner::TakeResult() {
  result_.module = std::move(m_);
  return std::move(result_);
}

}  // namespace

absl::StatusOr<PlanResult> PlanDevices(ir::Module&& module, const PlanOptions& options, PlanError* error) {
  ir::Module owned = std::move(module);
  Planner planner(owned, options, error);
  VDEV_RETURN_IF_ERROR(planner.Run());
  return planner.TakeResult();
}

absl::StatusOr<PlanResult> PlanDevices(const ir::Module& module, const PlanOptions& options, PlanError* error) {
  return PlanDevices(module.Clone(), options, error);
}

}  // namespace vdev
