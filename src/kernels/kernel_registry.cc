// The kernel registry and the decoded attributes of vdev/kernels/kernels.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "vdev/kernels/kernels.h"

namespace vdev {

const KernelAttr* KernelAttrs::Find(absl::string_view key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

int64_t KernelAttrs::IntOr(absl::string_view key, int64_t fallback) const {
  const KernelAttr* a = Find(key);
  if (a != nullptr && std::holds_alternative<int64_t>(*a)) return std::get<int64_t>(*a);
  return fallback;
}

double KernelAttrs::FloatOr(absl::string_view key, double fallback) const {
  const KernelAttr* a = Find(key);
  if (a == nullptr) return fallback;
  if (std::holds_alternative<double>(*a)) return std::get<double>(*a);
  if (std::holds_alternative<int64_t>(*a)) return static_cast<double>(std::get<int64_t>(*a));
  return fallback;
}

bool KernelAttrs::BoolOr(absl::string_view key, bool fallback) const {
  const KernelAttr* a = Find(key);
  if (a != nullptr && std::holds_alternative<bool>(*a)) return std::get<bool>(*a);
  return fallback;
}

std::optional<std::vector<int64_t>> KernelAttrs::Ints(absl::string_view key) const {
  const KernelAttr* a = Find(key);
  if (a == nullptr) return std::nullopt;
  if (std::holds_alternative<std::vector<int64_t>>(*a)) return std::get<std::vector<int64_t>>(*a);
  if (std::holds_alternative<int64_t>(*a)) return std::vector<int64_t>{std::get<int64_t>(*a)};
  return std::nullopt;
}

std::optional<std::string> KernelAttrs::Text(absl::string_view key) const {
  const KernelAttr* a = Find(key);
  if (a != nullptr && std::holds_alternative<std::string>(*a)) return std::get<std::string>(*a);
  return std::nullopt;
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterCpuKernels(*r);
    return r;
  }();
  return *registry;
}

absl::Status KernelRegistry::Register(absl::string_view op, DeviceType device, KernelFn fn) {
  absl::MutexLock lock(&mutex_);
  auto [it, inserted] = kernels_.try_emplace(std::make_pair(std::string(op), device), fn);
  if (!inserted)
    return absl::AlreadyExistsError(absl::StrCat("op '", op, "' has a kernel on ", DeviceTypeName(device), " already"));
  return absl::OkStatus();
}

KernelFn KernelRegistry::Find(absl::string_view op, DeviceType device) const {
  absl::MutexLock lock(&mutex_);
  auto it = kernels_.find(std::make_pair(std::string(op), device));
  return it == kernels_.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::Ops(DeviceType device) const {
  std::vector<std::string> ops;
  absl::MutexLock lock(&mutex_);
  for (const auto& [key, fn] : kernels_)
    if (key.second == device) ops.push_back(key.first);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace vdev
