// The planner's state, shared by its phases (one file each): collect (plan_collect.cc), unify and
// explain conflicts (plan_unify.cc), defaults (plan_defaults.cc), rewrite into the planned module
// (plan_rewrite.cc); plan_devices.cc runs them in order.
//
// Every value gets a domain: a parameter from its function's signature, a binding from its
// expression (a primitive call site's own domain, a call's result domain, a tuple's domain, …).
// Copy points are the bindings whose value may live elsewhere than what they read: on_device,
// device_copy and projections of an on_device result; they keep their body's domain on the side.
// Capture turns each copy point whose two devices differ into a device_copy binding.
#ifndef VDEV_SRC_PLANNER_INTERNAL_PLANNER_H_
#define VDEV_SRC_PLANNER_INTERNAL_PLANNER_H_

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/planner/device_domains.h"
#include "vdev/ir/builtin_ops.h"
#include "vdev/planner/plan_devices.h"

namespace vdev::planner_internal {

using ir::BindingId;
using ir::BlockId;
using ir::ExprKind;
using ir::FuncId;
using ir::FuncKind;
using ir::Operand;
using ir::ValueRef;

constexpr DomainId kNoDomain = UINT32_MAX;

// What put a device on a domain; the annotations of a conflict are reported from these.
enum class PinKind : uint8_t {
  kOnDevice,
  kCopySrc,
  kCopyDst,
  kParam,
  kResult,
  kHost,
  kAlloc,
  kKernelParam,
  kKernelResult
};

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
inline bool SameDevice(const VirtualDevice& a, const VirtualDevice& b) {
  return a.device_type() == b.device_type() && a.virtual_device_id() == b.virtual_device_id() &&
         a.memory_scope() == b.memory_scope();
}

inline std::string LocText(SourceLoc loc) { return absl::StrCat(loc.line, ":", loc.col); }

// What the cost-optimal placement decides: the classes (union-find roots) left after collection,
// the op and kernel calls in each, and where a copy may separate two classes.
struct PlacementClasses {
  std::vector<VirtualDevice> device;  // by class: its device after collection (possibly partial)
  std::vector<std::string> origin;    // by class: the annotation that fixed it ("" when none)
  struct Op {
    ir::BindingId binding;
    uint32_t cls;
  };
  std::vector<Op> ops;
  struct Edge {
    uint32_t a;
    uint32_t b;
    ir::TypeId type;  // of the value copied when the two differ
  };
  std::vector<Edge> edges;
  // The class of each binding's and parameter's value (UINT32_MAX: none, e.g. a function value),
  // for the capacity cuts. A passive class has no op call and no edge: it costs nothing anywhere,
  // and the choice returns nullopt for it (the defaults place it) unless a cut names it.
  std::vector<uint32_t> binding_class;
  std::vector<uint32_t> param_class;
  std::vector<bool> passive;  // by class
};
// Chooses a device per class (nullopt: leave it to the defaults).
using PlacementCallback = std::function<absl::StatusOr<std::vector<std::optional<VirtualDevice>>>(
    const ir::Module&, const PlacementClasses&)>;

class Planner {
 public:
  Planner(ir::Module& module, const PlanOptions& options, PlanError* error,
          const PlacementCallback* placement = nullptr)
      : m_(module), options_(options), error_(error), domains_(&devices_), placement_(placement) {}

  absl::Status Run();
  PlanResult TakeResult();

 private:
  class Collector;

  // --- Signatures ---------------------------------------------------------------------------
  // A kernel's signature carries scopes only: a written device type, id or target is an error.
  absl::Status MakeSignatures();
  DomainId DomainForType(ir::TypeId type);
  // The result type: written, or from the function's inferred type.
  ir::TypeId ResultType(FuncId f) const;
  // A local function that returns a function (with no device written on its result) gets its
  // result and signature domains only when its body is collected: the result is then the returned
  // value's domain itself. Built from the result type up front, a curried chain of n closures would
  // make n²/2 domains (each result type is the whole chain below it), and unify them pairwise.
  bool DefersResult(FuncId f) const;

  // --- Collection -----------------------------------------------------------------------------
  // Records the post-order of analysed bindings (order_, item_ranges_).
  void OrderBindings();
  // Collects every binding in that order.
  absl::Status CollectAll();
  absl::Status CollectBinding(BindingId b);
  // CollectBinding by expression kind.
  absl::Status CollectGlobalCall(BindingId b);
  absl::Status CollectValueCall(BindingId b);
  absl::Status CollectTuple(BindingId b);
  void CollectProjection(BindingId b);
  absl::Status CollectIf(BindingId b);
  absl::Status CollectOpCall(BindingId b);
  absl::Status CollectOnDevice(BindingId b, const ir::OnDeviceCall& on);
  absl::Status CollectPrimitiveCall(BindingId b);
  // Unifies the returned value with the result (or, when deferred, makes the result that value).
  absl::Status FinishFunction(FuncId f);
  DomainId OperandDomain(const Operand& o);
  void NoteUse(const Operand& o, DomainId site, BindingId user);
  // A value an attribute names (`foo(t=%1)`) is consumed there, but the planner does not interpret
  // the attribute: the value joins nothing (no constraint, never a conflict); where nothing else
  // decides its device and this is its first consumer, it takes the op's result device (Defaults).
  // first_user_ stays unset: a conflict warning names only uses that need the value on a device.
  void NoteAttributeUses(BindingId b);
  DomainId PinnedDomain(DeviceIndex device, PinKind kind, uint32_t ref);
  // During MarkLive (which visits bindings in reverse program order), for each live move b: when b
  // is a normal on_device of a computation, notes it. Their sites are pinned before their operands
  // are used, so the annotation is never overridden (a shared operand is copied instead).
  void NoteAnnotation(BindingId b);
  // Sorts annotated_by_, keeping each computation's first annotation in program order.
  void FinishAnnotations();
  // Collection asks for annotated computations in program order, so the next one is usually the
  // one after the last found: no search.
  size_t annotated_cursor_ = 0;
  // The pinned site of an annotated computation (without the scope for a kernel call, whose scopes
  // come from its signature), or kNoDomain.
  DomainId AnnotatedSite(BindingId b, bool kernel_call);
  // For a normal on_device `annotation` of `value`: the site AnnotatedSite pinned for it when
  // `value` is an op call that this is the (first) annotation of, else kNoDomain. That site is
  // pinned to the same device by the same annotation, so it serves as the annotation's body: a
  // second pinned domain joined with it would change nothing (its device already includes the
  // annotation's), and costs a domain, a pin and a union per annotation.
  DomainId AnnotatedBody(BindingId annotation, const Operand& value);
  absl::Status CollectKernelCall(BindingId b);
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
  // Memoised: a program with many conflicts formats the same few devices in every warning. A deque,
  // so growing the memo keeps the strings returned earlier in place (one StrCat takes two of them).
  const std::string& DeviceText(DeviceIndex d) const {
    if (d >= device_text_.size()) device_text_.resize(d + 1);
    if (!device_text_[d]) device_text_[d] = devices_.Get(d).ToString();
    return *device_text_[d];
  }
  mutable std::deque<std::optional<std::string>> device_text_;

  // The classes, their choice by placement_, each class constrained to its choice.
  absl::Status PlaceClasses();

  // --- Later phases ----------------------------------------------------------------------------
  void JoinFreeBoundaries();
  // `device` with the memory scope of `scope_of` (its type, id and target kept).
  DeviceIndex WithScope(DeviceIndex device, DeviceIndex scope_of);
  // Where a kernel call's operand or result lives: the call site's device with the scope of the
  // kernel's parameter or result (`signature`), or, where the signature leaves it open, the scope of
  // `value_device` (the value's own).
  DeviceIndex KernelTarget(BindingId call, DomainId signature, DeviceIndex value_device) {
    DeviceIndex scope = domains_.Device(signature);
    if (!devices_.Get(scope).has_memory_scope()) scope = value_device;
    return WithScope(domains_.Device(kernel_site_.at(call)), scope);
  }
  // Decides the call site's device (from operands and result where they join, else the default)
  // and joins operands and result with their targets where they can; the rest is copied.
  void ResolveKernelCall(BindingId call);
  void ApplyDefaults();
  // Capture, by phase: parameters' and results' devices; room for every copy; each binding in
  // post-order (its operands read through removed bindings, its conflict copies, its copy point
  // or kernel boundary); block results; kernels' scope-only signatures.
  void Capture();
  void CaptureSignatures();
  void ReserveCopies();
  void CaptureBinding(BindingId b, std::vector<BindingId>& out);
  // `first_operand`: the binding's first operand before CaptureBinding resolved it (for a
  // projection, the annotation it reads).
  void CaptureCopyPoint(BindingId b, const ir::Expr& e, ValueRef first_operand, std::vector<BindingId>& out);
  void CaptureProjection(BindingId b, const ir::Expr& e, ValueRef annotation, DeviceIndex src, DeviceIndex dst,
                         std::vector<BindingId>& out);
  void CaptureKernelOperands(BindingId b, const ir::Expr& e, std::vector<BindingId>& out);
  void ResolveBlockResults();
  void CaptureKernelSignatures();
  void SetOperand(const ir::Expr& e, uint32_t k, ValueRef v);
  // The writes into the input's parts, each recorded in result_.input_edits.
  void SetExpr(BindingId b, const ir::Expr& e);
  void SetParamDevice(uint32_t p, ir::DeviceId device);
  void SetResultDevice(FuncId f, ir::DeviceId device);
  bool Same(DeviceIndex a, DeviceIndex b) const { return SameDevice(devices_.Get(a), devices_.Get(b)); }
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
  // The planner's index of a device of the module (memoised: an annotated program interns the same
  // few devices once per annotation, and interning hashes the device's strings).
  DeviceIndex FromModule(ir::DeviceId d) {
    if (d >= from_module_.size()) from_module_.resize(d + 1, kNoDeviceIndex);
    if (from_module_[d] == kNoDeviceIndex) from_module_[d] = devices_.Intern(m_.Device(d));
    return from_module_[d];
  }
  static constexpr DeviceIndex kNoDeviceIndex = UINT32_MAX;
  std::vector<DeviceIndex> from_module_;
  // `%<b>_copy = device_copy(%b, src, dst)` after b, read by b's consumers instead of b.
  void AddResultCopy(BindingId b, DeviceIndex src, DeviceIndex dst, std::vector<BindingId>& out);
  // Copies that may be read by nothing once projections read the annotated tuple itself (the
  // annotation; the copy of a projection nothing reads) go, as unused annotations do, so that
  // planning the output decides the same.
  absl::flat_hash_set<BindingId> maybe_unread_;
  void DropUnreadCopies(std::vector<std::vector<BindingId>>& lists);
  // A binding the plan adds, with the device of its value.
  BindingId AddPlannedBinding(BlockId block, ir::Symbol name, ir::Expr expr, SourceLoc loc, DeviceIndex device);
  void NoteConsumer(const Operand& o, BindingId consumer);
  // An attribute that names a value the plan removed (an on_device, a value read through a copy)
  // names what replaced it, as an operand would. Attribute ranges may be shared (CopyAttrs), so a
  // changed list gets a range of its own.
  void ResolveAttrs(BindingId b);
  // on_device and device_copy: bindings that only move a value, and go when nothing reads them.
  // By symbol (asked several times per binding; comparing the op's name cost 2% of a plan).
  bool IsMove(BindingId b) const {
    const ir::Expr& e = B(b).expr;
    return e.kind == ExprKind::kOpCall &&
           (e.op == device_copy_symbol_ || (e.op == on_device_symbol_ && on_device_symbol_ != ir::kNoSymbol));
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
  const PlacementCallback* placement_;
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
  // Nearly always the domain made just before the copy point's own (a pinned body, then the result),
  // the same one, or, for an on_device whose body is its computation's pinned site (AnnotatedBody),
  // its operand's domain, which flags record, so only the others are stored (a vector by binding
  // would cost every binding 4 bytes). Such an operand stays as it is through capture: it names an
  // op call, which is never replaced, and the annotation has no copied use.
  absl::flat_hash_map<BindingId, DomainId> other_copy_body_;
  void SetCopyPoint(BindingId b, DomainId body, bool annotated_site = false) {
    Set(b, kCopyPoint);
    if (body == binding_domain_[b]) {
      Set(b, kBodyIsOwn);
    } else if (body + 1 == binding_domain_[b]) {
      Set(b, kBodyIsPrevious);
    } else if (annotated_site) {
      Set(b, kBodyIsOperand);
    } else {
      other_copy_body_[b] = body;
    }
  }
  DomainId CopyBody(BindingId b) const {
    if (b < flags_.size() && (flags_[b] & kBodyIsOperand) == kBodyIsOperand) {
      return binding_domain_[m_.Args(B(b).expr)[0].value.index];
    }
    if (Has(b, kBodyIsOwn)) return binding_domain_[b];
    if (Has(b, kBodyIsPrevious)) return binding_domain_[b] - 1;
    return other_copy_body_.at(b);
  }
  absl::flat_hash_map<BindingId, std::vector<CopiedUse>> copied_uses_;
  // Kernel calls → their site (a device type, id and target; scopes come from the signature).
  absl::flat_hash_map<BindingId, DomainId> kernel_site_;
  // Free on_device pairs (a, b) and kernel calls (kernel_call), in collection order.
  struct FreeBoundary {
    DomainId a;
    DomainId b;
    BindingId kernel_call;
  };
  std::vector<FreeBoundary> free_boundaries_;
  // (computation, its first live normal on_device), sorted by computation; the computations carry
  // kAnnotated, so that the common binding costs no search.
  std::vector<std::pair<BindingId, BindingId>> annotated_by_;
  // Capture: per kernel parameter (by param index) or result (by function) whose scope the signature
  // leaves open, the scope its calls agree on (kMixedScopes: they differ).
  static constexpr DeviceIndex kMixedScopes = UINT32_MAX;
  absl::flat_hash_map<uint32_t, DeviceIndex> open_param_scope_;
  absl::flat_hash_map<uint32_t, DeviceIndex> open_result_scope_;
  void NoteOpenScope(absl::flat_hash_map<uint32_t, DeviceIndex>& agreed, uint32_t key, DomainId signature,
                     DeviceIndex value_device);
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
    kBodyIsOwn = 64,                                // a copy point's body domain is its own (SetCopyPoint)
    kBodyIsPrevious = 128,                          // … or the one before
    kBodyIsOperand = kBodyIsOwn | kBodyIsPrevious,  // … or its operand's (never both of the above)
    // A computation that an on_device annotates (NoteAnnotation): never a copy point, so the bit
    // of kBodyIsOwn is free on it.
    kAnnotated = kBodyIsOwn
  };
  std::vector<uint8_t> flags_;
  bool Has(BindingId b, uint8_t flag) const { return b < flags_.size() && (flags_[b] & flag) != 0; }
  void Set(BindingId b, uint8_t flag) { flags_[b] |= flag; }

  std::vector<ir::DeviceId> module_device_;
  // Set when planning starts (Run): device_copy interned (capture writes copies), on_device found.
  ir::Symbol device_copy_symbol_ = ir::kNoSymbol;
  ir::Symbol on_device_symbol_ = ir::kNoSymbol;
  ir::Symbol src_symbol_ = ir::kNoSymbol;
  ir::Symbol dst_symbol_ = ir::kNoSymbol;
  PlanResult result_;
};

// PlanDevices with the classes' devices chosen by `placement` after collection.
absl::StatusOr<PlanResult> PlanWithPlacement(ir::Module&& module, const PlanOptions& options,
                                             const PlacementCallback& placement, PlanError* error);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_PLANNER_H_
