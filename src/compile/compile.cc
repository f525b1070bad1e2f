// The pipeline of compile.h: parse, verify, plan, re-type, lower, check.
#include "vdev/compile/compile.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "vdev/ir/ir_text.h"

namespace vdev {
namespace {

// Records a failure of `stage` in *error (when given) and returns its status.
absl::Status Fail(CompileStage stage, absl::Status status, const Diagnostic& diagnostic, CompileError* error) {
  if (error != nullptr) {
    error->stage = stage;
    error->diagnostic = diagnostic;
  }
  return status;
}

Diagnostic At(SourceLoc loc, const absl::Status& status) {
  return {Severity::kError, loc, std::string(status.message())};
}

// A pass's output that does not verify is our bug, not the user's.
absl::Status Bug(absl::string_view what, const Diagnostic& diag) {
  return absl::InternalError(absl::StrCat("the ", what, " program does not verify (a vdev bug): ", diag.message));
}

// The types stage's fast path. Planning adds, past the input's bindings, device_copy bindings and
// projections of annotated tuples: they take their operand's type and its field's, as inference
// gives them, so a planned module is typed in time proportional to what planning added instead of a
// second VerifyModule of the whole program. False when an added binding is of another kind (the
// caller then runs VerifyModule, which types and checks everything).
bool TypeAddedBindings(ir::Module& m, size_t input_bindings) {
  auto type_of = [&m](const ir::Operand& o) {
    if (!o.is_local()) return ir::kNoType;
    return o.value.is_param() ? m.params[o.value.index].type : m.bindings[o.value.index].type;
  };
  for (size_t b = input_bindings; b < m.bindings.size(); ++b) {
    ir::Binding& binding = m.bindings[b];
    absl::Span<const ir::Operand> args = m.Args(binding.expr);
    if (args.size() != 1) return false;
    ir::TypeId type = type_of(args[0]);
    if (type == ir::kNoType) return false;
    if (binding.expr.kind == ir::ExprKind::kProject) {
      if (m.types.kind(type) != ir::TypeKind::kTuple || binding.expr.index >= m.types.fields(type).size()) return false;
      type = m.types.fields(type)[binding.expr.index];
    } else if (binding.expr.kind != ir::ExprKind::kOpCall || m.OpName(binding.expr) != "device_copy") {
      return false;
    }
    binding.type = type;
  }
  return true;
}

}  // namespace

absl::string_view CompileStageName(CompileStage stage) {
  switch (stage) {
    case CompileStage::kParse: return "parse";
    case CompileStage::kVerify: return "verify";
    case CompileStage::kPlan: return "plan";
    case CompileStage::kTypes: return "types";
    case CompileStage::kLower: return "lower";
    case CompileStage::kCheck: return "check";
  }
  return "?";
}

absl::StatusOr<CompileResult> Compile(absl::string_view text, const CompileOptions& options, CompileError* error) {
  Diagnostic diag;
  absl::StatusOr<ir::Module> module = ir::ParseModule(text, &diag);
  if (!module.ok()) return Fail(CompileStage::kParse, module.status(), diag, error);
  if (options.stop_after == CompileStage::kParse) {
    CompileResult result;
    result.plan.module = *std::move(module);
    return result;
  }
  return Compile(*std::move(module), options, error);
}

absl::StatusOr<CompileResult> Compile(ir::Module module, const CompileOptions& options, CompileError* error) {
  CompileResult result;
  Diagnostic diag;
  if (absl::Status s = ir::VerifyModule(module, &diag); !s.ok()) {
    return Fail(CompileStage::kVerify, s, diag, error);
  }
  if (options.stop_after <= CompileStage::kVerify) {
    result.plan.module = std::move(module);
    return result;
  }

  PlanError plan_error;
  absl::StatusOr<PlanResult> plan;
  std::optional<OptimizedPlan> optimization;
  if (options.optimize_for) {
    OptimizeOptions optimize = options.optimize;
    optimize.plan = options.plan;
    absl::StatusOr<OptimizedPlan> optimized = OptimizePlacement(module, *options.optimize_for, optimize, &plan_error);
    if (optimized.ok()) {
      plan = std::move(optimized->plan);
      optimization = *std::move(optimized);
    } else {
      plan = optimized.status();
    }
  } else {
    plan = PlanDevices(std::move(module), options.plan, &plan_error);
  }
  if (!plan.ok()) {
    if (error != nullptr) error->plan = plan_error;
    Diagnostic located{Severity::kError, plan_error.loc, plan_error.message};
    if (located.message.empty()) located.message = std::string(plan.status().message());
    return Fail(CompileStage::kPlan, plan.status(), located, error);
  }
  absl::StatusOr<CompileResult> rest = CompilePlanned(*std::move(plan), options, error);
  if (rest.ok()) rest->optimization = std::move(optimization);
  return rest;
}

absl::StatusOr<CompileResult> CompilePlanned(PlanResult plan, const CompileOptions& options, CompileError* error) {
  CompileResult result;
  Diagnostic diag;
  result.plan = std::move(plan);
  result.diagnostics = result.plan.warnings;
  if (options.stop_after <= CompileStage::kPlan) return result;

  // The planner writes the bindings it adds without types; inference gives them their operand's.
  // (The lowered program is verified in full at the check stage.)
  if (!TypeAddedBindings(result.plan.module, result.plan.input_bindings)) {
    if (absl::Status s = ir::VerifyModule(result.plan.module, &diag); !s.ok()) {
      absl::Status bug = Bug("planned", diag);
      return Fail(CompileStage::kTypes, bug, At(diag.loc, bug), error);
    }
  }
  if (options.stop_after == CompileStage::kTypes) return result;

  absl::StatusOr<MemoryPlan> memory = LowerMemory(result.plan.module, result.plan.binding_devices, options.lower);
  if (!memory.ok()) return Fail(CompileStage::kLower, memory.status(), At({}, memory.status()), error);
  result.memory = *std::move(memory);
  if (options.stop_after == CompileStage::kLower) return result;

  if (absl::Status s = ir::VerifyModule(result.plan.module, &diag); !s.ok()) {
    absl::Status bug = Bug("lowered", diag);
    return Fail(CompileStage::kCheck, bug, At(diag.loc, bug), error);
  }
  return result;
}

}  // namespace vdev
