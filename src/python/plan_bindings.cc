// vdev.plan → vdev.Plan and vdev.lower → vdev.Lowered (include/vdev/planner/plan_devices.h,
// include/vdev/memory/lower_memory.h). Planning and lowering run with the GIL released; the records they
// return (Copy, PlanWarning, Pool, AllReduce, Conflict) are the named tuples of
// python/vdev/_records.py.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/dot.h"
#include "vdev/memory/lower_memory.h"
#include "vdev/planner/machine.h"
#include "vdev/planner/optimize_placement.h"
#include "vdev/planner/plan_devices.h"
#include "vdev/planner/plan_explain.h"

namespace vdev::python {
namespace {

py::object Record(const char* name) { return py::module_::import("vdev._records").attr(name); }

std::shared_ptr<PyModule> CloneModule(const ir::Module& module, const std::string& file) {
  return std::make_shared<PyModule>(PyModule{module.Clone(), file, ""});
}

std::optional<VirtualDevice> DeviceOrNone(const ir::Module& m, ir::DeviceId d) {
  if (d == ir::kNoDevice) return std::nullopt;
  return m.Device(d);
}

// What `optimize=True` adds to a plan: the OptimizedPlan (its PlanResult moved into PyPlan::result)
// and the machine it was optimised for.
struct Optimization {
  OptimizedPlan optimized;
  Machine machine;
};

struct PyPlan {
  std::shared_ptr<const PyModule> input;
  PlanResult result;
  std::shared_ptr<PyModule> planned;  // made on first use of Plan.module
  std::optional<Optimization> optimization;

  ir::FuncId Function(const std::string& path) const {
    const ir::Module& m = result.module;
    for (ir::FuncId f = 0; f < m.functions.size(); ++f) {
      if (ir::FunctionPath(m, f) == path) return f;
    }
    throw py::key_error(absl::StrCat("no function '", path, "' (local functions are named like 'main/f')"));
  }

  // The device of parameter or binding `name` of function `path`, as the JSON report lists it.
  VirtualDevice DeviceOf(const std::string& name, const std::string& path) const {
    const ir::Module& m = result.module;
    const ir::FuncId f = Function(path);
    const absl::string_view bare = absl::StripPrefix(name, "%");
    for (const ir::Param& p : m.Params(m.functions[f])) {
      if (m.Name(p.name) == bare) return *DeviceOrNone(m, p.device);
    }
    for (ir::BindingId b = 0; b < result.input_bindings; ++b) {
      if (m.blocks[m.bindings[b].block].func != f || m.Name(m.bindings[b].name) != bare) continue;
      if (result.binding_replaced[b]) {
        throw py::key_error(absl::StrCat("%", bare, " is an annotation that planning removed (on_device)"));
      }
      if (result.binding_devices[b] == ir::kNoDevice) {
        throw py::key_error(absl::StrCat("%", bare, " has no device (inside a primitive function)"));
      }
      return m.Device(result.binding_devices[b]);
    }
    throw py::key_error(absl::StrCat("no value %", bare, " in function '", path, "'"));
  }

  py::dict Placement(const std::string& path) const {
    const ir::Module& m = result.module;
    const ir::FuncId f = Function(path);
    py::dict out;
    for (const ir::Param& p : m.Params(m.functions[f]))
      out[py::str(std::string(m.Name(p.name)))] = DeviceOrNone(m, p.device);
    for (ir::BindingId b = 0; b < result.input_bindings; ++b) {
      if (m.blocks[m.bindings[b].block].func != f || result.binding_replaced[b]) continue;
      if (result.binding_devices[b] == ir::kNoDevice) continue;
      out[py::str(std::string(m.Name(m.bindings[b].name)))] = m.Device(result.binding_devices[b]);
    }
    return out;
  }

  py::list Copies() const {
    const ir::Module& m = result.module;
    py::object copy = Record("Copy");
    py::list out;
    for (const PlannedCopy& c : result.copies) {
      std::string into = c.into == ir::kNoBinding ? "return" : std::string(m.Name(m.bindings[c.into].name));
      out.append(copy(ir::FunctionPath(m, c.func), std::string(m.Name(m.ValueName(c.of))), m.Device(c.src),
                      m.Device(c.dst), into, c.written));
    }
    return out;
  }

  py::list Warnings() const {
    py::object warning = Record("PlanWarning");
    py::list out;
    for (const Diagnostic& w : result.warnings) {
      out.append(
          warning(input->file, w.loc.line, w.loc.col, w.message, FormatDiagnostic(input->file, input->source, w)));
    }
    return out;
  }

  py::dict Statistics() const {
    const PlanStatistics& s = result.stats;
    py::dict out;
    out["bindings"] = s.bindings;
    out["domains"] = s.domains;
    out["copies"] = s.copies;
    out["copies_dropped"] = s.copies_dropped;
    out["conflict_copies"] = s.conflict_copies;
    out["solver_calls"] = s.solver_calls;
    out["solver_seconds"] = s.solver_seconds;
    return out;
  }
};

[[noreturn]] void RaisePlanningError(const PyModule& module, const PlanError& error, const absl::Status& status) {
  const std::string message = error.message.empty() ? std::string(status.message()) : error.message;
  std::string text = FormatDiagnostic(module.file, module.source, {Severity::kError, error.loc, message});
  py::object conflict = Record("Conflict");
  py::list conflicts;
  for (const ConflictAnnotation& c : error.conflicts) {
    absl::StrAppend(&text, FormatDiagnostic(module.file, module.source, {Severity::kNote, c.loc, c.what}));
    conflicts.append(conflict(c.loc.line, c.loc.col, c.device, c.what));
  }
  Raise("PlanningError", py::make_tuple(text),
        py::dict(py::arg("file") = module.file, py::arg("line") = error.loc.line, py::arg("col") = error.loc.col,
                 py::arg("message") = message, py::arg("conflicts") = conflicts));
}

// OptimizeOptions::progress for a Python callable: the solver calls it from its watch thread with
// the GIL released, so each call takes the GIL; the first exception the callable raises is kept
// (later lines are dropped) and raised once planning is over.
class ProgressRelay {
 public:
  explicit ProgressRelay(py::object callback) : callback_(std::move(callback)) {}

  std::function<void(const std::string&)> Function() {
    return [this](const std::string& line) {
      py::gil_scoped_acquire gil;
      if (error_) return;
      try {
        callback_(line);
      } catch (py::error_already_set& e) {
        error_ = std::make_unique<py::error_already_set>(std::move(e));
      }
    };
  }

  // Raises what the callable raised, if it did (with the GIL held).
  void Rethrow() {
    if (error_) {
      std::unique_ptr<py::error_already_set> error = std::move(error_);
      error->restore();
      throw py::error_already_set();
    }
  }

 private:
  py::object callback_;
  std::unique_ptr<py::error_already_set> error_;
};

// TypeError/ValueError for vdev.plan's and vdev.compile's optimisation arguments that do not fit.
void CheckOptimizeArgs(bool optimize, const py::object& machine, double time_limit, const py::object& progress) {
  if (!optimize && !machine.is_none()) throw py::value_error("machine= is what optimize=True plans for; pass both");
  if (time_limit <= 0) throw py::value_error("time_limit must be positive (seconds)");
  if (!progress.is_none() && !optimize) throw py::value_error("progress= reports optimize=True's solve; pass both");
  if (!progress.is_none() && !PyCallable_Check(progress.ptr())) throw py::type_error("progress must be callable");
}

std::shared_ptr<PyPlan> Plan(std::shared_ptr<PyModule> module, bool strict, const py::object& default_device,
                             const py::object& host_device, bool optimize, const py::object& machine, double time_limit,
                             const py::object& progress) {
  PlanOptions options;
  options.strict = strict;
  if (!default_device.is_none()) options.default_device = DeviceArg(default_device);
  if (!host_device.is_none()) options.host_device = DeviceArg(host_device);
  CheckOptimizeArgs(optimize, machine, time_limit, progress);
  PlanError error;
  absl::Status status;
  auto plan = std::make_shared<PyPlan>(PyPlan{module, PlanResult(), nullptr, std::nullopt});
  if (optimize) {
    // The CLI's default machine (`vdev plan --optimize` without --machine: 1 CPU + 2 H100s).
    const Machine target = machine.is_none() ? DefaultMachine(2) : machine.cast<Machine>();
    OptimizeOptions optimize_options;
    optimize_options.plan = options;
    optimize_options.time_limit_seconds = time_limit;
    std::optional<ProgressRelay> relay;
    if (!progress.is_none()) optimize_options.progress = relay.emplace(progress).Function();
    absl::StatusOr<OptimizedPlan> optimized;
    {
      py::gil_scoped_release release;
      optimized = OptimizePlacement(module->module, target, optimize_options, &error);
    }
    if (relay) relay->Rethrow();
    status = optimized.status();
    if (optimized.ok()) {
      plan->result = std::move(optimized->plan);
      plan->optimization = Optimization{*std::move(optimized), target};
    }
  } else {
    absl::StatusOr<PlanResult> result;
    {
      py::gil_scoped_release release;
      result = PlanDevices(module->module, options, &error);
    }
    status = result.status();
    if (result.ok()) plan->result = *std::move(result);
  }
  if (!status.ok()) RaisePlanningError(*module, error, status);
  return plan;
}

py::object CostRecord(const PlanCost& cost) {
  return Record("PlanCost")(cost.total, cost.compute, cost.copy, cost.unsupported,
                            cost.launch == LaunchMode::kGraphReplay ? "graph_replay" : "op_by_op", cost.calls,
                            cost.run);
}

// The report of `vdev plan --json`, with `--optimize`'s cost fields when the plan was optimised.
std::string PlanJson(const PyPlan& p) {
  if (!p.optimization) return PlanReportJson(p.result);
  return OptimizedReportJson(p.result, p.optimization->optimized, p.optimization->machine);
}

// One Python record per item of each function of a lowered module: `items(f)` lists a function's
// items, `record(path, item)` makes the record of one (`path`: the function's, as plans name it).
template <typename Items, typename MakeRecord>
py::list PerFunctionRecords(const PyLowered& l, Items items, MakeRecord record) {
  py::list out;
  for (const FunctionMemory& f : l.memory.functions) {
    const std::string path = ir::FunctionPath(l.module, f.func);
    for (const auto& item : items(f)) out.append(record(path, item));
  }
  return out;
}

py::list LoweredPools(const PyLowered& l) {
  py::object pool = Record("Pool");
  return PerFunctionRecords(
      l, [](const FunctionMemory& f) -> const auto& { return f.plan.pools; },
      [&](const std::string& path, const PoolSize& p) {
        return pool(path, VirtualDevice::ForDevice(p.pool.device.type, p.pool.device.id), p.pool.scope, p.bytes,
                    p.storages);
      });
}

py::list LoweredAllReduces(const PyLowered& l) {
  py::object allreduce = Record("AllReduce");
  return PerFunctionRecords(
      l, [](const FunctionMemory& f) -> const auto& { return f.allreduces; },
      [&](const std::string& path, const AllReduceInfo& a) {
        return allreduce(path, std::string(l.module.Name(l.module.bindings[a.binding].name)), a.op,
                         std::string(AllReduceStrategyName(a.strategy)), a.ipc, a.reason);
      });
}

LowerOptions LowerOptionsOf(const std::string& strategy, bool ipc_allreduce, int64_t alignment) {
  LowerOptions options;
  std::string note;
  std::optional<AllReduceStrategy> parsed = AllReduceStrategyFromName(strategy, &note);
  if (!parsed) {
    throw py::value_error(absl::StrCat("unknown all-reduce strategy '", strategy,
                                       "' (expected auto, one-shot, two-shot, nccl or plan:NAME)"));
  }
  if (!note.empty()) py::module_::import("warnings").attr("warn")(note);  // to stderr, once per call site
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
    throw py::value_error(absl::StrCat("alignment must be a positive power of two, found ", alignment));
  }
  options.strategy = *parsed;
  options.ipc_allreduce = ipc_allreduce;
  options.storage.alignment = alignment;
  return options;
}

// Raises the exception of a failed compile stage about `input`: ParseError (parse, verify),
// PlanningError (plan), LoweringError (lower), vdev.Error (types, check: a vdev bug).
[[noreturn]] void RaiseCompileError(const PyModule& input, const CompileError& error, const absl::Status& status) {
  switch (error.stage) {
    case CompileStage::kParse:
    case CompileStage::kVerify: RaiseParseError(input.file, input.source, error.diagnostic);
    case CompileStage::kPlan: RaisePlanningError(input, error.plan, status);
    case CompileStage::kLower: Raise("LoweringError", py::make_tuple(std::string(status.message())));
    case CompileStage::kTypes:
    case CompileStage::kCheck: break;
  }
  RaiseStatus(status);
}

std::shared_ptr<PyLowered> LoweredOf(const PyModule& input, const CompileResult& compiled) {
  auto lowered = std::make_shared<PyLowered>();
  lowered->file = input.file;
  lowered->source = input.source;
  lowered->module = compiled.module().Clone();
  lowered->binding_devices = compiled.plan.binding_devices;
  lowered->memory = *compiled.memory;
  return lowered;
}

// The stages after planning (compile.h's CompilePlanned) on a copy of the plan: the plan is kept.
std::shared_ptr<PyLowered> Lower(const PyPlan& plan, const std::string& strategy, bool ipc_allreduce,
                                 int64_t alignment) {
  CompileOptions options;
  options.lower = LowerOptionsOf(strategy, ipc_allreduce, alignment);
  CompileError error;
  absl::StatusOr<CompileResult> compiled;
  {
    py::gil_scoped_release release;
    const PlanResult& p = plan.result;
    compiled = CompilePlanned(PlanResult{p.module.Clone(), p.binding_devices, p.binding_replaced, p.input_bindings,
                                         p.copies, p.warnings, p.stats},
                              options, &error);
  }
  if (!compiled.ok()) RaiseCompileError(*plan.input, error, compiled.status());
  return LoweredOf(*plan.input, *compiled);
}

// vdev.compile's result: what each stage that ran produced.
struct PyCompiled {
  CompileStage stage;
  std::shared_ptr<const PyModule> input;
  std::shared_ptr<PyModule> module;    // after the last stage
  std::shared_ptr<PyPlan> plan;        // null before `plan`
  std::shared_ptr<PyLowered> lowered;  // null before `lower`
  std::vector<Diagnostic> diagnostics;
};

std::optional<CompileStage> StageNamed(const std::string& name) {
  for (CompileStage s : {CompileStage::kParse, CompileStage::kVerify, CompileStage::kPlan, CompileStage::kTypes,
                         CompileStage::kLower, CompileStage::kCheck}) {
    if (CompileStageName(s) == name) return s;
  }
  return std::nullopt;
}

PyCompiled CompileSource(const py::object& source, const std::string& file, const std::string& stop_after, bool strict,
                         const py::object& default_device, const py::object& host_device, bool optimize,
                         const py::object& machine, double time_limit, const py::object& progress,
                         const std::string& strategy, bool ipc_allreduce, int64_t alignment) {
  CompileOptions options;
  CheckOptimizeArgs(optimize, machine, time_limit, progress);
  std::optional<ProgressRelay> relay;
  if (optimize) {
    options.optimize_for = machine.is_none() ? DefaultMachine(2) : machine.cast<Machine>();
    options.optimize.time_limit_seconds = time_limit;
    if (!progress.is_none()) options.optimize.progress = relay.emplace(progress).Function();
  }
  std::optional<CompileStage> stage = StageNamed(stop_after);
  if (!stage) {
    throw py::value_error(
        absl::StrCat("unknown stage '", stop_after, "' (expected parse, verify, plan, types, lower or check)"));
  }
  options.stop_after = *stage;
  options.plan.strict = strict;
  if (!default_device.is_none()) options.plan.default_device = DeviceArg(default_device);
  if (!host_device.is_none()) options.plan.host_device = DeviceArg(host_device);
  options.lower = LowerOptionsOf(strategy, ipc_allreduce, alignment);
  std::shared_ptr<const PyModule> input;
  const bool is_text = py::isinstance<py::str>(source);
  if (is_text) {
    input = std::make_shared<PyModule>(PyModule{ir::Module(), file, source.cast<std::string>()});
  } else if (py::isinstance<PyModule>(source)) {
    input = source.cast<std::shared_ptr<PyModule>>();
    if (*stage == CompileStage::kParse) throw py::value_error("stop_after='parse' needs program text, not a Module");
  } else {
    throw py::type_error(absl::StrCat("compile takes program text or a vdev.Module, found ",
                                      std::string(py::str(py::type::of(source).attr("__name__")))));
  }
  CompileError error;
  absl::StatusOr<CompileResult> compiled;
  {
    py::gil_scoped_release release;
    compiled = is_text ? Compile(input->source, options, &error) : Compile(input->module.Clone(), options, &error);
  }
  if (relay) relay->Rethrow();
  if (!compiled.ok()) RaiseCompileError(*input, error, compiled.status());
  PyCompiled out{*stage, input, nullptr, nullptr, nullptr, compiled->diagnostics};
  out.module = std::make_shared<PyModule>(PyModule{compiled->module().Clone(), input->file, ""});
  if (compiled->memory) out.lowered = LoweredOf(*input, *compiled);
  if (*stage >= CompileStage::kPlan) {
    out.plan = std::make_shared<PyPlan>(PyPlan{input, std::move(compiled->plan), nullptr, std::nullopt});
    if (compiled->optimization) {
      out.plan->optimization = Optimization{*std::move(compiled->optimization), *options.optimize_for};
    }
  }
  return out;
}

// vdev.Plan's properties of a plan made with optimize=True (None otherwise).
void BindOptimizationResults(py::class_<PyPlan, std::shared_ptr<PyPlan>>& plan) {
  plan.def_property_readonly(
          "optimal",
          [](const PyPlan& p) {
            return p.optimization ? py::object(py::bool_(p.optimization->optimized.optimal)) : py::object(py::none());
          },
          "optimize=True: whether the solver proved the plan optimal (False: the time limit cut it short).")
      .def_property_readonly(
          "lower_bound",
          [](const PyPlan& p) {
            return p.optimization ? py::object(py::float_(p.optimization->optimized.lower_bound))
                                  : py::object(py::none());
          },
          "optimize=True: seconds, proven: no placement costs less by the optimiser's model.")
      .def_property_readonly(
          "gap",
          [](const PyPlan& p) {
            return p.optimization ? py::object(py::float_(p.optimization->optimized.gap)) : py::object(py::none());
          },
          "optimize=True: how far the plan may be from the optimum, (model cost - lower_bound) / model cost;\n"
          "0 exactly when optimal.")
      .def_property_readonly(
          "cost",
          [](const PyPlan& p) {
            return p.optimization ? CostRecord(p.optimization->optimized.cost) : py::object(py::none());
          },
          "optimize=True: the plan's cost on the machine (vdev.PlanCost, seconds); None otherwise.")
      .def_property_readonly(
          "default_cost",
          [](const PyPlan& p) {
            return p.optimization ? CostRecord(p.optimization->optimized.default_cost) : py::object(py::none());
          },
          "optimize=True: the cost of the plan without optimize, on the same machine.");
}

// vdev.Plan and vdev.plan.
void BindPlanResult(py::module_& m) {
  py::class_<PyPlan, std::shared_ptr<PyPlan>> plan(m, "Plan", "The result of vdev.plan: where every value lives.");
  BindOptimizationResults(plan);
  plan.def("device_of", &PyPlan::DeviceOf, py::arg("name"), py::arg("function") = "main",
           "The device of parameter or binding `name` (`x` or `%x`) of `function` ('main', 'main/f', …).\n"
           "KeyError for an unknown name or an on_device that planning removed.")
      .def(
          "result_device",
          [](const PyPlan& p, const std::string& path) {
            return DeviceOrNone(p.result.module, p.result.module.functions[p.Function(path)].result_device);
          },
          py::arg("function") = "main")
      .def(
          "explain",
          [](const PyPlan& p, const std::string& name, const std::string& function) {
            absl::StatusOr<std::string> why = ExplainPlacement(
                p.input->module, p.result, function == "main" ? name : absl::StrCat(function, ":", name));
            if (!why.ok()) throw py::key_error(std::string(why.status().message()));
            return *why;
          },
          py::arg("name"), py::arg("function") = "main",
          "Why parameter or binding `name` of `function` is where the plan puts it: the annotation that\n"
          "decided it and the chain of constraints (shared devices) from there, one per line; or the\n"
          "default that decided it. KeyError for an unknown name.")
      .def("placement", &PyPlan::Placement, py::arg("function") = "main",
           "{name: device} for the parameters and surviving bindings of `function`, in program order.")
      .def_property_readonly("copies", &PyPlan::Copies, "The device changes the plan makes (list of vdev.Copy).")
      .def_property_readonly("warnings", &PyPlan::Warnings,
                             "Conflicts resolved with a copy (list of vdev.PlanWarning).")
      .def_property_readonly("statistics", &PyPlan::Statistics)
      .def_property_readonly(
          "module",
          [](PyPlan& p) {
            if (!p.planned) p.planned = CloneModule(p.result.module, p.input->file);
            return p.planned;
          },
          "The planned program as a Module.")
      .def(
          "text", [](const PyPlan& p) { return ir::PrintModule(p.result.module); }, "The planned program's text.")
      .def("to_json", &PlanJson,
           "The report of `vdev plan --json` (docs/spec/plan-json.md), with `--optimize`'s cost fields\n"
           "when optimize=True made the plan.")
      .def(
          "to_dot",
          [](const PyPlan& p) { return WriteDot(PlannedProgramGraph(p.result.module, p.result.binding_devices)); },
          "Graphviz text of `vdev lower --dot`: devices as colours, copies as red edges.")
      .def("__repr__", [](const PyPlan& p) {
        return absl::StrCat("<vdev.Plan ", p.input->file, ": ", p.result.copies.size(), " copies, ",
                            p.result.warnings.size(), " warnings>");
      });

  m.def("plan", &Plan, py::arg("module"), py::kw_only(), py::arg("strict") = false, py::arg("default") = py::none(),
        py::arg("host") = py::none(), py::arg("optimize") = false, py::arg("machine") = py::none(),
        py::arg("time_limit") = 60.0, py::arg("progress") = py::none(),
        "Plans the device of every value (PlanDevices; the GIL is released meanwhile). strict=True makes a\n"
        "conflict between primitive uses an error; default/host override the module's config.\n"
        "optimize=True places what no annotation fixes where it is cheapest on `machine` (a vdev.Machine;\n"
        "default Machine.default(2): 1 CPU + 2 H100s), proven optimal by Z3 within time_limit seconds;\n"
        "progress(line) is called (from another thread, holding the GIL) when a solve takes over a second,\n"
        "and what it raises is raised here once planning ends.\n"
        "PlanningError (FILE:LINE:COL, with the conflicting annotations) when no plan exists.");
}

// vdev.Lowered and vdev.lower.
void BindLowered(py::module_& m) {
  py::class_<PyLowered, std::shared_ptr<PyLowered>>(m, "Lowered",
                                                    "The result of vdev.lower: explicit allocation and memory pools.")
      .def_property_readonly("pools", &LoweredPools, "Pool sizes per function, device and scope (vdev.Pool).")
      .def_property_readonly("allreduces", &LoweredAllReduces, "Each all-reduce and how it runs (vdev.AllReduce).")
      .def_property_readonly("tensor_bytes", [](const PyLowered& l) { return l.memory.tensor_bytes; })
      .def_property_readonly("pool_bytes", [](const PyLowered& l) { return l.memory.pool_bytes; })
      .def_property_readonly("module",
                             [](PyLowered& l) {
                               if (!l.lowered) l.lowered = CloneModule(l.module, l.file);
                               return l.lowered;
                             })
      .def("text", [](const PyLowered& l) { return ir::PrintModule(l.module); })
      .def(
          "to_json", [](const PyLowered& l) { return MemoryReportJson(l.module, l.memory); },
          "The report of `vdev lower --json` (docs/memory-planning.md).")
      .def("__repr__", [](const PyLowered& l) {
        return absl::StrCat("<vdev.Lowered ", l.file, ": ", l.memory.pool_bytes, " pool bytes>");
      });

  m.def("lower", &Lower, py::arg("plan"), py::kw_only(), py::arg("strategy") = "auto", py::arg("ipc_allreduce") = true,
        py::arg("alignment") = 256,
        "Lowers a plan to explicit allocation: the compile pipeline's types, lower and check stages\n"
        "(CompilePlanned; the GIL is released meanwhile). The plan is not changed. LoweringError when a\n"
        "planned tensor's device is not concrete.");
}

// vdev.Compiled and vdev.compile.
void BindCompiled(py::module_& m) {
  py::class_<PyCompiled>(m, "Compiled", "The result of vdev.compile: what each stage that ran produced.")
      .def_property_readonly(
          "stage", [](const PyCompiled& c) { return std::string(CompileStageName(c.stage)); },
          "The last stage run (the stop_after asked for).")
      .def_property_readonly(
          "module", [](const PyCompiled& c) { return c.module; },
          "The program after the last stage (parsed, planned or lowered).")
      .def_property_readonly(
          "plan", [](const PyCompiled& c) { return c.plan; },
          "The plan (device_of, copies, warnings, to_json); None before 'plan'. After 'lower'\n"
          "its module is the lowered one.")
      .def_property_readonly(
          "lowered", [](const PyCompiled& c) { return c.lowered; },
          "The memory plan as vdev.lower gives it (pools, run it); None before 'lower'.")
      .def_property_readonly(
          "diagnostics",
          [](const PyCompiled& c) {
            py::object warning = Record("PlanWarning");
            py::list out;
            for (const Diagnostic& w : c.diagnostics) {
              out.append(warning(c.input->file, w.loc.line, w.loc.col, w.message,
                                 FormatDiagnostic(c.input->file, c.input->source, w)));
            }
            return out;
          },
          "Every stage's warnings, in order (vdev.PlanWarning).")
      .def("text", [](const PyCompiled& c) { return ir::PrintModule(c.module->module); })
      .def("__repr__", [](const PyCompiled& c) {
        return absl::StrCat("<vdev.Compiled ", c.input->file, ": up to ", CompileStageName(c.stage), ", ",
                            c.diagnostics.size(), " warnings>");
      });

  m.def("compile", &CompileSource, py::arg("source"), py::kw_only(), py::arg("file") = "<string>",
        py::arg("stop_after") = "check", py::arg("strict") = false, py::arg("default") = py::none(),
        py::arg("host") = py::none(), py::arg("optimize") = false, py::arg("machine") = py::none(),
        py::arg("time_limit") = 60.0, py::arg("progress") = py::none(), py::arg("strategy") = "auto",
        py::arg("ipc_allreduce") = true, py::arg("alignment") = 256,
        "The whole pipeline of compile.h on program text or a Module: parse, verify, plan, types, lower,\n"
        "check, ending after `stop_after`; the options are vdev.plan's and vdev.lower's. The GIL is released\n"
        "meanwhile. ParseError, PlanningError or LoweringError (located) for the stage that fails.");
}

}  // namespace

void BindPlan(py::module_& m) {
  BindPlanResult(m);
  BindLowered(m);
  BindCompiled(m);
}

}  // namespace vdev::python
