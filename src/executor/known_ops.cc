// CheckKnownOps (known_ops.h): a program compiled to run may call only ops something can run.
#include "known_ops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "prepared_op.h"
#include "vdev/ir/ir_text.h"
#include "vdev/ir/op_registry.h"
#include "vdev/kernels/kernels.h"

namespace vdev::internal {
namespace {

// The ops of the registry, the ops with a kernel on any device type, and the executor's own.
std::vector<std::string> KnownOpNames() {
  std::vector<std::string> names = ir::OpRegistry::Global().Names();
  for (DeviceType type : {DeviceType::kCPU, DeviceType::kCUDA}) {
    std::vector<std::string> ops = KernelRegistry::Global().Ops(type);
    names.insert(names.end(), ops.begin(), ops.end());
  }
  std::vector<std::string> executor_ops = ExecutorOpNames();
  names.insert(names.end(), executor_ops.begin(), executor_ops.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Levenshtein distance: insertions, deletions and substitutions of one byte each.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The known name closest to `name`, when it is close enough to be a misspelling of it: at most a
// third of the name's bytes edited (at least one).
std::string Suggestion(absl::string_view name, const std::vector<std::string>& known) {
  const size_t limit = std::max<size_t>(1, name.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : known) {
    const size_t d = EditDistance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace

std::string DidYouMean(absl::string_view op) {
  std::string near = Suggestion(op, KnownOpNames());
  return near.empty() || near == op ? "" : absl::StrCat(" (did you mean '", near, "'?)");
}

absl::Status CheckKnownOps(const ir::Module& module, absl::string_view file, absl::string_view source) {
  absl::flat_hash_set<std::string> known;
  for (ir::BindingId b : OpCallBindings(module)) {
    const ir::Expr& expr = module.bindings[b].expr;
    const absl::string_view op = module.OpName(expr);
    if (known.empty()) {
      std::vector<std::string> names = KnownOpNames();
      known.insert(names.begin(), names.end());
    }
    if (known.contains(op)) continue;
    std::string message =
        absl::StrCat("unknown op '", op, "': no op of that name is registered and no kernel runs it", DidYouMean(op));
    // A built module has no locations: the binding says which call it is.
    if (!expr.loc.valid())
      message = absl::StrCat("%", module.Name(module.bindings[b].name), " = ", ir::PrintExprHead(module, expr), ": ",
                             message);
    std::string text = FormatDiagnostic(file, source, {Severity::kError, expr.loc, message});
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return absl::InvalidArgumentError(text);
  }
  return absl::OkStatus();
}

}  // namespace vdev::internal
