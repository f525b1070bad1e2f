// An independent check of a lowered module: no read of a tensor whose storage was handed on; see
// CheckLoweredMemory in vdev/memory/lower_memory.h.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir_walk.h"
#include "vdev/memory/lower_memory.h"

namespace vdev {
namespace {

class BodyChecker {
 public:
  BodyChecker(const ir::Module& m, ir::BlockId body) : m_(m), body_(body) {}

  absl::Status Run() {
    for (ir::BindingId b : m_.blocks[body_].bindings) {
      if (absl::Status s = Step(b); !s.ok()) return s;
    }
    const ir::Operand& result = m_.blocks[body_].result;
    if (result.is_local()) return CheckCurrent(result.value, "return");
    return absl::OkStatus();
  }

 private:
  std::string Name(ir::ValueRef v) const { return absl::StrCat("%", m_.Name(m_.ValueName(v))); }
  std::string Name(ir::BindingId b) const { return Name(ir::ValueRef::Binding(b)); }

  absl::Status Fail(ir::BindingId b, absl::string_view message) const {
    return absl::InternalError(absl::StrCat("lowered ", Name(b), ": ", message));
  }

  // The allocations `v` may hold; none for parameters and unplanned values.
  const std::vector<ir::BindingId>& Holds(ir::ValueRef v) const {
    static const std::vector<ir::BindingId> kNone;
    auto it = holds_.find(v);
    return it == holds_.end() ? kNone : it->second;
  }

  absl::Status CheckCurrent(ir::ValueRef v, absl::string_view reader) const {
    for (ir::BindingId alloc : Holds(v)) {
      const ir::BindingId storage = storage_of_.at(alloc);
      if (latest_.at(storage) != alloc) {
        return absl::InternalError(absl::StrCat("lowered ", reader, " reads ", Name(v), " in ", Name(alloc), ", but ",
                                                Name(storage), " now holds ", Name(latest_.at(storage))));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AllocStorage(ir::BindingId b, const ir::Expr& e, absl::string_view op) {
    int64_t bytes = 0;
    const ir::Attr* device = m_.FindAttr(e, "device");
    if (e.args.count != 2 || m_.Args(e)[0].kind != ir::OperandKind::kNumber ||
        !absl::SimpleAtoi(m_.Name(m_.Args(e)[0].symbol), &bytes) || device == nullptr || !device->value.is_device()) {
      return Fail(b, "malformed storage allocation");
    }
    const bool ipc = m_.Device(device->value.index).memory_scope() == "ipc_memory";
    if (ipc != (op == "vdev.ipc.alloc_storage")) return Fail(b, "allocator does not match the storage's scope");
    storage_bytes_[b] = bytes;
    storage_ipc_[b] = ipc;
    return absl::OkStatus();
  }

  absl::Status AllocTensor(ir::BindingId b, const ir::Expr& e) {
    absl::Span<const ir::Operand> args = m_.Args(e);
    int64_t offset = 0;
    const std::optional<int64_t> bytes = TensorBytes(m_.types, m_.bindings[b].type);
    if (args.size() != 3 || !args[0].is_local() || !args[0].value.is_binding() ||
        !storage_bytes_.contains(args[0].value.index) || args[1].kind != ir::OperandKind::kNumber ||
        !absl::SimpleAtoi(m_.Name(args[1].symbol), &offset) || !bytes) {
      return Fail(b, "malformed tensor allocation");
    }
    const ir::BindingId storage = args[0].value.index;
    int64_t end = 0;
    if (offset < 0 || __builtin_add_overflow(offset, *bytes, &end) || end > storage_bytes_[storage]) {
      return Fail(b, "tensor does not fit its storage");
    }
    storage_of_[b] = storage;
    latest_[storage] = b;
    holds_[ir::ValueRef::Binding(b)] = {b};
    return absl::OkStatus();
  }

  absl::Status Step(ir::BindingId b) {
    const ir::Expr& e = m_.bindings[b].expr;
    const absl::string_view op = m_.OpName(e);
    if (op == "memory.alloc_storage" || op == "vdev.ipc.alloc_storage") return AllocStorage(b, e, op);
    if (op == "memory.alloc_tensor") return AllocTensor(b, e);

    std::vector<ir::ValueRef> reads;
    for (const ir::Operand& o : m_.Args(e)) {
      if (o.is_local()) reads.push_back(o.value);
    }
    const ir::Attr* out = nullptr;
    for (const ir::Attr& a : m_.Attrs(e)) {
      if (m_.Name(a.key) == "out") {
        out = &a;
      } else if (a.value.is_local()) {
        reads.push_back(a.value.value);
      }
    }
    for (const ir::Operand& o : NestedLocalOperands(m_, e)) reads.push_back(o.value);
    for (ir::ValueRef v : reads) {
      if (absl::Status s = CheckCurrent(v, Name(b)); !s.ok()) return s;
    }

    std::vector<ir::BindingId>& holds = holds_[ir::ValueRef::Binding(b)];
    if (out != nullptr) {
      if (!out->value.is_local() || !out->value.value.is_binding() || !storage_of_.contains(out->value.value.index)) {
        return Fail(b, "out= does not name a tensor allocation");
      }
      if (absl::Status s = CheckCurrent(out->value.value, Name(b)); !s.ok()) return s;
      holds = {out->value.value.index};
    } else if (e.kind == ir::ExprKind::kProject && reads.size() == 1 && reads[0].is_binding() &&
               m_.bindings[reads[0].index].expr.kind == ir::ExprKind::kTuple &&
               e.index < m_.bindings[reads[0].index].expr.args.count) {
      const ir::Operand& field = m_.Args(m_.bindings[reads[0].index].expr)[e.index];
      if (field.is_local()) holds = Holds(field.value);
    } else if (e.kind != ir::ExprKind::kOpCall || op == "reshape" || op == "vm.reshape_tensor" || op == "memory.view") {
      // Views, aliases, tuples, calls, ifs and closures may hold whatever they read.
      for (ir::ValueRef v : reads) {
        const std::vector<ir::BindingId>& more = Holds(v);
        holds.insert(holds.end(), more.begin(), more.end());
      }
    }
    if (op == "vdev.allreduce") {
      if (reads.empty() || Holds(reads[0]).empty()) return Fail(b, "all-reduce input has no allocation");
      for (ir::BindingId alloc : Holds(reads[0])) {
        if (!storage_ipc_[storage_of_[alloc]]) return Fail(b, "all-reduce input is not in ipc_memory");
      }
    }
    return absl::OkStatus();
  }

  const ir::Module& m_;
  const ir::BlockId body_;
  absl::flat_hash_map<ir::BindingId, int64_t> storage_bytes_;
  absl::flat_hash_map<ir::BindingId, bool> storage_ipc_;
  absl::flat_hash_map<ir::BindingId, ir::BindingId> storage_of_;  // tensor allocation -> storage
  absl::flat_hash_map<ir::BindingId, ir::BindingId> latest_;      // storage -> its latest tensor
  absl::flat_hash_map<ir::ValueRef, std::vector<ir::BindingId>> holds_;
};

}  // namespace

absl::Status CheckLoweredMemory(const ir::Module& module) {
  for (ir::FuncId f : module.items) {
    const ir::Function& fn = module.functions[f];
    if (fn.kind != ir::FuncKind::kGlobal || fn.body == ir::kNoBlock) continue;
    if (absl::Status s = BodyChecker(module, fn.body).Run(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace vdev
