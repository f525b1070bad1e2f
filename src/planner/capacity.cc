// Liveness of planned and input modules, peaks per device, capacity cuts (internal/capacity.h).
#include "src/planner/internal/capacity.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace vdev::planner_internal {
namespace {

bool IsMoveExpr(const ir::Module& m, const ir::Expr& e) {
  if (e.kind != ExprKind::kOpCall) return false;
  absl::string_view op = m.OpName(e);
  return op == "on_device" || op == "device_copy";
}

// Bindings that hold no storage of their own: a read of one is a read of what it holds.
bool IsAlias(const ir::Expr& e) {
  return e.kind == ExprKind::kTuple || e.kind == ExprKind::kProject || e.kind == ExprKind::kAlias ||
         e.kind == ExprKind::kIf;
}

// The post-order of one top-level function's bindings, and the functions (itself and its local
// ones) whose parameters it holds.
class ItemWalk : public ir::Visitor {
 public:
  void EnterFunction(FuncId f) override { functions.push_back(f); }
  void BindingDone(BindingId b) override { order.push_back(b); }
  std::vector<BindingId> order;
  std::vector<FuncId> functions;
};

constexpr uint32_t kNever = UINT32_MAX;

}  // namespace

TypeSize SizeOf(const ir::Module& m, ir::TypeId type) {
  TypeSize size;
  std::vector<ir::TypeId> work{type};
  while (!work.empty()) {
    ir::TypeId t = work.back();
    work.pop_back();
    if (t == ir::kNoType) continue;
    if (m.types.kind(t) == ir::TypeKind::kTuple) {
      for (ir::TypeId f : m.types.fields(t)) work.push_back(f);
      continue;
    }
    if (m.types.kind(t) != ir::TypeKind::kTensor) continue;
    double n = 1;
    for (int64_t d : m.types.dims(t)) n *= d == ir::kDynamicDim ? 0 : static_cast<double>(d);
    size.elements += n;
    size.dtype = m.types.node(t).dtype;
    size.bytes += n * DTypeBytes(size.dtype);
  }
  return size;
}

int64_t ClampedBytes(double bytes) {
  return bytes < static_cast<double>(kMaxValueBytes) ? static_cast<int64_t>(bytes) : kMaxValueBytes;
}

int64_t CapacityLimit(const Machine& machine, int device) {
  const double bytes = machine.specs[device].memory_bytes;
  return bytes < static_cast<double>(kMaxCapacityBytes) ? static_cast<int64_t>(bytes) : kMaxCapacityBytes;
}

std::vector<uint32_t> InputPoints(const ir::Module& input) {
  std::vector<uint32_t> points(input.bindings.size(), kNever);
  for (FuncId f : input.items) {
    ItemWalk walk;
    ir::WalkFunction(input, f, walk);
    for (size_t k = 0; k < walk.order.size(); ++k) points[walk.order[k]] = static_cast<uint32_t>(2 * k);
  }
  return points;
}

namespace {

// One pass of LiveValues over the items of a module, phase by phase for each item.
class LivenessScan {
 public:
  LivenessScan(const ir::Module& m, const std::vector<uint32_t>& points)
      : m_(m),
        points_(points),
        last_(m.bindings.size(), kNever),
        last_param_(m.params.size(), kNever),
        point_(m.bindings.size(), 0),
        used_(m.bindings.size(), false) {}

  std::vector<LiveValue> Run() {
    for (uint32_t item = 0; item < m_.items.size(); ++item) {
      ItemWalk walk;
      ir::WalkFunction(m_, m_.items[item], walk);
      const uint32_t end = AssignPoints(walk);
      MarkUsed(walk);
      RecordReads(walk);
      const ir::Function& top = m_.functions[m_.items[item]];
      if (top.body != ir::kNoBlock) Read(m_.blocks[top.body].result, end);
      ExtendAliases(walk);
      AppendValues(item, walk);
    }
    return std::move(values_);
  }

 private:
  void Read(const Operand& o, uint32_t at) {
    if (!o.is_local()) return;
    uint32_t& slot = o.value.is_param() ? last_param_[o.value.index] : last_[o.value.index];
    slot = slot == kNever ? at : std::max(slot, at);
  }
  void MarkResultUsed(const Operand& r) {
    if (r.is_local() && r.value.is_binding()) used_[r.value.index] = true;
  }

  // Points: input bindings from `points`, the planner's copies just after the binding before them.
  // Returns the item's end point (where a returned value is read).
  uint32_t AssignPoints(const ItemWalk& walk) {
    uint32_t last_even = 0;
    for (BindingId b : walk.order) {
      if (b < points_.size() && points_[b] != kNever) {
        point_[b] = last_even = points_[b];
      } else {
        point_[b] = last_even + 1;
      }
    }
    return walk.order.empty() ? 0 : (point_[walk.order.back()] / 2 + 1) * 2;
  }

  // Moves read only by unused moves are unused (reverse program order sees readers first).
  void MarkUsed(const ItemWalk& walk) {
    for (FuncId f : walk.functions) {
      const ir::Function& fn = m_.functions[f];
      if (fn.body != ir::kNoBlock) MarkResultUsed(m_.blocks[fn.body].result);
    }
    for (size_t k = walk.order.size(); k-- > 0;) {
      BindingId b = walk.order[k];
      const ir::Expr& e = m_.bindings[b].expr;
      if (IsMoveExpr(m_, e) && !used_[b]) continue;
      ir::ForEachLocalRead(m_, e, [&](const Operand& o) {
        if (o.value.is_binding()) used_[o.value.index] = true;
      });
      if (e.kind == ExprKind::kIf) {
        for (BlockId arm : {e.then_block, e.else_block}) MarkResultUsed(m_.blocks[arm].result);
      }
    }
  }

  // Reads at each binding's point (a copy's at its consumer's).
  void RecordReads(const ItemWalk& walk) {
    for (BindingId b : walk.order) {
      const ir::Expr& e = m_.bindings[b].expr;
      if (IsMoveExpr(m_, e) && !used_[b]) continue;
      uint32_t at = point_[b] % 2 == 0 ? point_[b] : point_[b] + 1;
      ir::ForEachLocalRead(m_, e, [&](const Operand& o) { Read(o, at); });  // attribute values too
      if (e.kind == ExprKind::kIf) {
        for (BlockId arm : {e.then_block, e.else_block}) Read(m_.blocks[arm].result, at);
      }
      if (e.kind == ExprKind::kFn && m_.functions[e.func].body != ir::kNoBlock) {
        Read(m_.blocks[m_.functions[e.func].body].result, at);
      }
    }
  }

  // An alias read late keeps what it holds live as late (later aliases first).
  void ExtendAliases(const ItemWalk& walk) {
    for (size_t k = walk.order.size(); k-- > 0;) {
      BindingId b = walk.order[k];
      const ir::Expr& e = m_.bindings[b].expr;
      if (!IsAlias(e) || last_[b] == kNever) continue;
      for (const Operand& o : m_.Args(e)) Read(o, last_[b]);
      if (e.kind == ExprKind::kIf) {
        for (BlockId arm : {e.then_block, e.else_block}) Read(m_.blocks[arm].result, last_[b]);
      }
    }
  }

  void AppendValues(uint32_t item, const ItemWalk& walk) {
    for (FuncId f : walk.functions) {
      const ir::Function& fn = m_.functions[f];
      for (uint32_t p = fn.params.begin; p < fn.params.begin + fn.params.count; ++p) {
        int64_t bytes = ClampedBytes(SizeOf(m_, m_.params[p].type).bytes);
        if (bytes <= 0) continue;
        values_.push_back(
            {item, ValueRef::Param(p), ValueRef{}, 0, last_param_[p] == kNever ? 0 : last_param_[p], bytes});
      }
    }
    for (BindingId b : walk.order) {
      const ir::Expr& e = m_.bindings[b].expr;
      bool move = IsMoveExpr(m_, e);
      if ((move && !used_[b]) || IsAlias(e) || e.kind == ExprKind::kFn) continue;
      int64_t bytes = ClampedBytes(SizeOf(m_, m_.bindings[b].type).bytes);
      if (bytes <= 0) continue;
      ValueRef source;
      if (move && !m_.Args(e).empty() && m_.Args(e)[0].is_local()) source = m_.Args(e)[0].value;
      values_.push_back({item, ValueRef::Binding(b), source, point_[b],
                         last_[b] == kNever ? point_[b] : std::max(point_[b], last_[b]), bytes});
    }
  }

  const ir::Module& m_;
  const std::vector<uint32_t>& points_;
  std::vector<uint32_t> last_;
  std::vector<uint32_t> last_param_;
  std::vector<uint32_t> point_;
  std::vector<bool> used_;
  std::vector<LiveValue> values_;
};

}  // namespace

std::vector<LiveValue> LiveValues(const ir::Module& m, const std::vector<uint32_t>& points) {
  return LivenessScan(m, points).Run();
}

std::vector<DevicePeak> PeakBytes(const PlanResult& plan, const std::vector<uint32_t>& points, const Machine& machine) {
  const ir::Module& m = plan.module;
  std::vector<DevicePeak> peaks(machine.devices.size());
  absl::flat_hash_map<ir::DeviceId, int> device_index;
  auto index_of = [&](ir::DeviceId d) -> int {
    if (d == ir::kNoDevice) return -1;
    auto [it, added] = device_index.try_emplace(d, -1);
    if (added) it->second = machine.Find(m.Device(d)).value_or(-1);
    return it->second;
  };
  // (item, point, delta, device): at one point, what ends before it is removed first.
  std::vector<std::tuple<uint32_t, uint32_t, int64_t, int>> events;
  for (const LiveValue& v : LiveValues(m, points)) {
    ir::DeviceId d = v.value.is_param()                            ? m.params[v.value.index].device
                     : v.value.index < plan.binding_devices.size() ? plan.binding_devices[v.value.index]
                                                                   : ir::kNoDevice;
    int device = index_of(d);
    if (device < 0) continue;
    events.emplace_back(v.item, v.begin, v.bytes, device);
    events.emplace_back(v.item, v.end + 1, -v.bytes, device);
  }
  std::sort(events.begin(), events.end());
  // Up to 2^61 bytes per value (ClampedBytes), summed without overflow; a peak beyond int64 is
  // reported as the largest int64 (it fits no device).
  std::vector<__int128> live(machine.devices.size(), 0);
  for (const auto& [item, point, delta, device] : events) {
    live[device] += delta;
    if (live[device] > peaks[device].bytes) {
      peaks[device] = {static_cast<int64_t>(std::min<__int128>(live[device], INT64_MAX)), item, point};
    }
  }
  return peaks;
}

BindingId BindingAt(const ir::Module& input, uint32_t item, uint32_t point) {
  if (item >= input.items.size()) return ir::kNoBinding;
  ItemWalk walk;
  ir::WalkFunction(input, input.items[item], walk);
  if (walk.order.empty()) return ir::kNoBinding;
  return walk.order[std::min<size_t>(point / 2, walk.order.size() - 1)];
}

PlacementModel::CapacityCut CapacityCutAt(const std::vector<LiveValue>& input_values, const PlacementClasses& classes,
                                          const Machine& machine, uint32_t item, uint32_t point, int device,
                                          int64_t limit, std::vector<ValueRef>* term_values) {
  // A passive class on no device of the machine is left to the defaults: not counted.
  std::vector<int8_t> placeable(classes.device.size(), -1);
  auto class_of = [&](ValueRef v) -> uint32_t {
    const std::vector<uint32_t>& by = v.is_param() ? classes.param_class : classes.binding_class;
    uint32_t c = v.valid() && v.index < by.size() ? by[v.index] : UINT32_MAX;
    if (c == UINT32_MAX || !classes.passive[c]) return c;
    if (placeable[c] < 0) {
      placeable[c] = std::any_of(machine.devices.begin(), machine.devices.end(),
                                 [&](const VirtualDevice& d) { return Join(classes.device[c], d).has_value(); });
    }
    return placeable[c] ? c : UINT32_MAX;
  };
  absl::flat_hash_map<ValueRef, const LiveValue*> live;
  absl::flat_hash_set<ValueRef> storage;
  for (const LiveValue& v : input_values) {
    if (v.item != item) continue;
    storage.insert(v.value);
    if (v.begin <= point && point <= v.end) live[v.value] = &v;
  }
  std::vector<std::pair<PlacementModel::CapacityCut::Term, ValueRef>> terms;
  for (const auto& [value, v] : live) {
    uint32_t cls = class_of(value);
    if (cls == UINT32_MAX) continue;  // left to the defaults: not counted, so the cut stays a lower bound
    PlacementModel::CapacityCut::Term term{cls, UINT32_MAX, v->bytes};
    if (v->source.valid()) {
      // A move: its own buffer only where its source's is elsewhere; a source that holds no
      // storage of its own (an alias) or has no class may share the buffer, so it is not counted.
      if (!storage.contains(v->source)) continue;
      if (live.contains(v->source)) {
        term.other = class_of(v->source);
        if (term.other == UINT32_MAX) continue;
      }
    }
    terms.emplace_back(term, value);
  }
  // Terms in a stable order (the map's is not), so that solving again decides the same.
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.var, a.first.other, a.first.bytes, a.second.index) <
           std::tie(b.first.var, b.first.other, b.first.bytes, b.second.index);
  });
  PlacementModel::CapacityCut cut;
  cut.device = device;
  cut.limit = limit;
  for (const auto& [term, value] : terms) {
    cut.terms.push_back(term);
    if (term_values != nullptr) term_values->push_back(value);
  }
  return cut;
}

}  // namespace vdev::planner_internal
