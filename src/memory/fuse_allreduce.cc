// All-reduce fusion (vdev/memory/fuse_allreduce.h): allreduce -> [reshape...] -> add -> rms_norm becomes
// one vdev.allreduce_add_rms_norm whose results the add and the norm bindings project.
#include "vdev/memory/fuse_allreduce.h"

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace vdev {
namespace {

// Who reads each binding: how often, and (for a single read) which binding reads it. A block's
// result counts as a read by no binding.
struct Reads {
  std::vector<int> count;
  std::vector<ir::BindingId> reader;

  explicit Reads(const ir::Module& m) : count(m.bindings.size(), 0), reader(m.bindings.size(), ir::kNoBinding) {
    for (const ir::Block& block : m.blocks) {
      for (ir::BindingId b : block.bindings) {
        ir::ForEachLocalRead(m, m.bindings[b].expr, [&](const ir::Operand& o) { Add(o, b); });
      }
      if (block.result.is_local()) Add(block.result, ir::kNoBinding);
    }
  }
  void Add(const ir::Operand& o, ir::BindingId by) {
    if (!o.value.is_binding()) return;
    ++count[o.value.index];
    reader[o.value.index] = by;
  }
  // The one binding that reads `b`, or nullopt.
  std::optional<ir::BindingId> Only(ir::BindingId b) const {
    if (count[b] != 1 || reader[b] == ir::kNoBinding) return std::nullopt;
    return reader[b];
  }
};

bool IsBindingOperand(const ir::Operand& o, ir::BindingId b) {
  return o.is_local() && o.value.is_binding() && o.value.index == b;
}

class Fuser {
 public:
  Fuser(ir::Module& m, std::vector<ir::DeviceId>& devices, ir::BlockId body)
      : m_(m), devices_(devices), body_(body), reads_(m) {
    const std::vector<ir::BindingId>& order = m_.blocks[body_].bindings;
    for (size_t i = 0; i < order.size(); ++i) {
      pos_[order[i]] = static_cast<int>(i);
      const ir::Expr& e = m_.bindings[order[i]].expr;
      if (Op(order[i]) != "rms_norm" || e.args.count != 2) continue;
      const ir::Operand& x = m_.Args(e)[0];
      if (x.is_local() && x.value.is_binding()) first_norm_.try_emplace(x.value.index, order[i]);
    }
  }

  void Run(std::vector<FusedAllReduce>* fused) {
    const std::vector<ir::BindingId> order = m_.blocks[body_].bindings;
    for (ir::BindingId b : order) {
      if (Op(b) != "allreduce") continue;
      if (std::optional<FusedAllReduce> f = TryFuse(b)) fused->push_back(*f);
    }
    if (!removed_.empty()) RebuildOrder();
  }

 private:
  absl::string_view Op(ir::BindingId b) const {
    const ir::Expr& e = m_.bindings[b].expr;
    return e.kind == ir::ExprKind::kOpCall ? m_.OpName(e) : absl::string_view();
  }
  bool InBody(ir::BindingId b) const { return pos_.contains(b); }
  ir::DeviceId Device(ir::BindingId b) const { return b < devices_.size() ? devices_[b] : ir::kNoDevice; }
  absl::string_view NameOf(ir::BindingId b) const { return m_.Name(m_.bindings[b].name); }

  // Whether `o` is a parameter, or a binding of this body placed before position `pos`.
  bool AvailableAt(const ir::Operand& o, int pos) const {
    if (!o.is_local()) return false;
    if (o.value.is_param()) return true;
    auto it = pos_.find(o.value.index);
    return it != pos_.end() && it->second < pos;
  }

  std::optional<FusedAllReduce> TryFuse(ir::BindingId ar) {
    const ir::Expr& are = m_.bindings[ar].expr;
    const ir::Attr* op = m_.FindAttr(are, "op");
    if (op != nullptr && !(op->value.kind == ir::OperandKind::kIdent && m_.Name(op->value.symbol) == "sum"))
      return std::nullopt;
    if (are.args.count != 1 || Device(ar) == ir::kNoDevice) return std::nullopt;
    // Follow single-use reshapes to the add.
    std::vector<ir::BindingId> chain = {ar};
    std::optional<ir::BindingId> next = reads_.Only(ar);
    while (next && InBody(*next) && Op(*next) == "reshape" && Device(*next) == Device(ar)) {
      chain.push_back(*next);
      next = reads_.Only(*next);
    }
    if (!next || !InBody(*next) || Op(*next) != "add" || Device(*next) != Device(ar)) return std::nullopt;
    const ir::BindingId add = *next;
    const ir::Expr& adde = m_.bindings[add].expr;
    if (adde.args.count != 2 || adde.attrs.count != 0) return std::nullopt;
    const ir::Operand a0 = m_.Args(adde)[0], a1 = m_.Args(adde)[1];
    const bool sum_second = IsBindingOperand(a1, chain.back());
    if (!sum_second && !IsBindingOperand(a0, chain.back())) return std::nullopt;
    const ir::Operand residual = sum_second ? a0 : a1;
    if (!residual.is_local() || IsBindingOperand(residual, chain.back())) return std::nullopt;  // add(%v, %v)
    const ir::TypeId type = m_.bindings[add].type;
    if (type == ir::kNoType || m_.types.kind(type) != ir::TypeKind::kTensor) return std::nullopt;
    if (m_.bindings[chain.back()].type != type || ResidualType(residual) != type) return std::nullopt;
    const ir::DType dtype = m_.types.node(type).dtype;
    if (dtype != ir::DType::kF32 && dtype != ir::DType::kF16 && dtype != ir::DType::kBF16) return std::nullopt;
    const std::optional<ir::BindingId> norm = NormOf(add);
    if (!norm) return std::nullopt;
    const ir::Operand gamma = m_.Args(m_.bindings[*norm].expr)[1];
    if (!AvailableAt(gamma, pos_.at(add))) return std::nullopt;
    return Rewrite(chain, add, *norm, residual, gamma);
  }

  ir::TypeId ResidualType(const ir::Operand& o) const {
    if (o.value.is_param()) return m_.params[o.value.index].type;
    return m_.bindings[o.value.index].type;
  }

  // The first rms_norm of this body that normalises `add`'s result, when it runs on add's device.
  std::optional<ir::BindingId> NormOf(ir::BindingId add) const {
    auto it = first_norm_.find(add);
    if (it == first_norm_.end()) return std::nullopt;
    const ir::BindingId b = it->second;
    if (Device(b) != Device(add) || m_.bindings[b].type != m_.bindings[add].type) return std::nullopt;
    return b;
  }

  FusedAllReduce Rewrite(const std::vector<ir::BindingId>& chain, ir::BindingId add, ir::BindingId norm,
                         const ir::Operand& residual, const ir::Operand& gamma) {
    const ir::BindingId ar = chain.front();
    FusedAllReduce report{ir::kNoBinding, std::string(NameOf(ar)), std::string(NameOf(add)), std::string(NameOf(norm))};
    const ir::Operand args[] = {m_.Args(m_.bindings[ar].expr)[0], residual, gamma};
    std::vector<ir::Attr> attrs = {m_.MakeAttr("op", m_.IdentOperand("sum"))};
    if (const ir::Attr* eps = m_.FindAttr(m_.bindings[norm].expr, "epsilon")) attrs.push_back(*eps);
    ir::Expr fused = m_.MakeOpCall(kFusedAllReduceOp, args, attrs);
    fused.loc = m_.bindings[ar].expr.loc;
    const ir::BindingId f = m_.AddBinding(body_, m_.FreshName(absl::StrCat(NameOf(ar), "_add_norm")), std::move(fused),
                                          m_.bindings[ar].loc);
    const ir::TypeId fields[] = {m_.bindings[add].type, m_.bindings[norm].type};
    m_.bindings[f].type = m_.types.Tuple(fields);
    if (devices_.size() <= f) devices_.resize(f + 1, ir::kNoDevice);
    devices_[f] = Device(add);
    Project(add, f, 0);
    Project(norm, f, 1);
    // The fused op takes the add's place; the all-reduce and its reshapes leave the body (Run
    // rebuilds the body's order once, at the end).
    for (ir::BindingId b : chain) {
      removed_.insert(b);
      pos_.erase(b);
    }
    fused_before_[add] = f;
    report.fused = f;
    return report;
  }

  void RebuildOrder() {
    std::vector<ir::BindingId>& order = m_.blocks[body_].bindings;
    std::vector<ir::BindingId> kept;
    kept.reserve(order.size());
    for (ir::BindingId b : order) {
      if (removed_.contains(b)) continue;
      if (auto it = fused_before_.find(b); it != fused_before_.end()) kept.push_back(it->second);
      kept.push_back(b);
    }
    order = std::move(kept);
  }

  // Binding `b` becomes `%tuple.index`, keeping its name, type and declared type.
  void Project(ir::BindingId b, ir::BindingId tuple, uint32_t index) {
    const ir::Operand t = m_.LocalOperand(ir::ValueRef::Binding(tuple));
    ir::Expr e;
    e.kind = ir::ExprKind::kProject;
    e.args = m_.AddOperands({&t, 1});
    e.index = index;
    e.loc = m_.bindings[b].expr.loc;
    m_.bindings[b].expr = e;
  }

  ir::Module& m_;
  std::vector<ir::DeviceId>& devices_;
  const ir::BlockId body_;
  Reads reads_;
  absl::flat_hash_map<ir::BindingId, int> pos_;
  absl::flat_hash_map<ir::BindingId, ir::BindingId> first_norm_;    // x -> the first rms_norm(x, ...) of the body
  absl::flat_hash_set<ir::BindingId> removed_;                      // all-reduces and reshapes fused away
  absl::flat_hash_map<ir::BindingId, ir::BindingId> fused_before_;  // add -> the fused op placed before it
};

}  // namespace

std::vector<FusedAllReduce> FuseAllReduceAddNorm(ir::Module& module, std::vector<ir::DeviceId>& binding_devices) {
  std::vector<FusedAllReduce> fused;
  for (size_t f = 0; f < module.functions.size(); ++f) {
    const ir::Function& fn = module.functions[f];
    if (fn.kind != ir::FuncKind::kGlobal || fn.body == ir::kNoBlock) continue;
    Fuser(module, binding_devices, fn.body).Run(&fused);
  }
  return fused;
}

}  // namespace vdev
