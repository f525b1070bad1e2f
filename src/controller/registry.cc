// The process-wide registry of worker functions, and the typed access to their arguments.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "internal/builtins.h"
#include "internal/protocol.h"
#include "vdev/controller/worker_function.h"

namespace vdev {
namespace {

class Registry {
 public:
  static Registry& Get() {
    // The built-ins are added here rather than by static registrars: a static library's object
    // file that nothing references is left out by the linker, registrars and all.
    static Registry* registry = [] {
      auto* r = new Registry();
      internal::RegisterBuiltinWorkerFunctions(
          [r](absl::string_view name, WorkerFunction fn) { return r->Add(name, std::move(fn)); });
      return r;
    }();
    return *registry;
  }

  absl::Status Add(absl::string_view name, WorkerFunction function) {
    if (name.empty() || function == nullptr) {
      return absl::InvalidArgumentError("a worker function needs a name and a body");
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = functions_.try_emplace(name, nullptr);
    if (!inserted)
      return absl::AlreadyExistsError(absl::StrCat("worker function \"", name, "\" is already registered"));
    it->second = std::make_shared<const WorkerFunction>(std::move(function));
    return absl::OkStatus();
  }

  std::shared_ptr<const WorkerFunction> Find(absl::string_view name) {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }

  std::vector<std::string> Names() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> names;
    for (const auto& [name, fn] : functions_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const WorkerFunction>> functions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status RegisterWorkerFunction(absl::string_view name, WorkerFunction function) {
  return Registry::Get().Add(name, std::move(function));
}

std::shared_ptr<const WorkerFunction> FindWorkerFunction(absl::string_view name) { return Registry::Get().Find(name); }

std::vector<std::string> WorkerFunctionNames() { return Registry::Get().Names(); }

WorkerFunctionRegistrar::WorkerFunctionRegistrar(absl::string_view name, WorkerFunction function) {
  absl::Status status = RegisterWorkerFunction(name, std::move(function));
  if (!status.ok()) {
    std::fprintf(stderr, "VDEV_REGISTER_WORKER_FUNCTION: %s\n", std::string(status.message()).c_str());
    std::abort();
  }
}

std::string WorkerValueKind(const WorkerValue& value) {
  switch (value.index()) {
    case 0: return "none";
    case 1: return "int";
    case 2: return "float";
    case 3: return "string";
    case 4: return "shape";
    case 5: return "tensor";
    default: return std::get<std::shared_ptr<WorkerObject>>(value)->TypeName();
  }
}

absl::Status WorkerArgs::ExpectCount(size_t n) const {
  if (values_.size() == n) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("expected ", n, " argument(s), got ", values_.size()));
}

absl::Status WorkerArgs::Mismatch(size_t i, absl::string_view expected) const {
  if (i >= values_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument ", i, " (", expected, ") is missing: got ", values_.size(), " argument(s)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("argument ", i, ": expected ", expected, ", got ", WorkerValueKind(values_[i])));
}

absl::StatusOr<int64_t> WorkerArgs::Int(size_t i) const {
  if (i < values_.size()) {
    if (const auto* v = std::get_if<int64_t>(&values_[i])) return *v;
  }
  return Mismatch(i, "int");
}

absl::StatusOr<double> WorkerArgs::Float(size_t i) const {
  if (i < values_.size()) {
    if (const auto* v = std::get_if<double>(&values_[i])) return *v;
    if (const auto* v = std::get_if<int64_t>(&values_[i])) return static_cast<double>(*v);
  }
  return Mismatch(i, "float");
}

absl::StatusOr<std::string> WorkerArgs::String(size_t i) const {
  if (i < values_.size()) {
    if (const auto* v = std::get_if<std::string>(&values_[i])) return *v;
  }
  return Mismatch(i, "string");
}

absl::StatusOr<Shape> WorkerArgs::ShapeArg(size_t i) const {
  if (i < values_.size()) {
    if (const auto* v = std::get_if<Shape>(&values_[i])) return *v;
  }
  return Mismatch(i, "shape");
}

absl::StatusOr<std::shared_ptr<HostTensor>> WorkerArgs::Tensor(size_t i) const {
  if (i < values_.size()) {
    if (const auto* v = std::get_if<std::shared_ptr<HostTensor>>(&values_[i])) return *v;
  }
  return Mismatch(i, "tensor");
}

namespace internal {

absl::string_view CommandName(CommandKind kind) {
  switch (kind) {
    case CommandKind::kGetFunc: return "GetGlobalFunc";
    case CommandKind::kCall: return "CallPacked";
    case CommandKind::kFree: return "free register";
    case CommandKind::kCopyTo: return "CopyToWorker0";
    case CommandKind::kCopyFrom: return "CopyFromWorker0";
    case CommandKind::kDebugGet: return "DebugGetFromRemote";
    case CommandKind::kDebugSet: return "DebugSetRegister";
    case CommandKind::kInitCcl: return "InitCCL";
    case CommandKind::kShutdown: return "Shutdown";
  }
  return "unknown command";
}

}  // namespace internal
}  // namespace vdev
