// VirtualDevice: construction, literal syntax, and the lattice operations Join and Default.
#include "vdev/lattice/virtual_device.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vdev {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsScopeChar(char c) { return IsLetter(c) || IsDigit(c) || c == '_' || c == '.'; }
// Characters that end a literal embedded in larger text.
bool EndsLiteral(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ')' || c == '}' || c == '{';
}

absl::Status ErrorAt(size_t* error_offset, size_t offset, absl::string_view message) {
  if (error_offset != nullptr) *error_offset = offset;
  return absl::InvalidArgumentError(message);
}

std::string Describe(absl::string_view text, size_t pos) {
  if (pos >= text.size()) return "end of literal";
  return absl::StrCat("'", std::string(1, text[pos]), "'");
}

// The device type at text[*at], a name or `*`; *at moves past it.
absl::Status ParseDeviceTypeAt(absl::string_view text, size_t* at, size_t* error_offset, DeviceType* type) {
  size_t& pos = *at;
  size_t type_start = pos;
  if (text[pos] == '*') {
    ++pos;
    return absl::OkStatus();
  }
  while (pos < text.size() && IsLetter(text[pos])) ++pos;
  absl::string_view name = text.substr(type_start, pos - type_start);
  if (name.empty())
    return ErrorAt(error_offset, pos,
                   absl::StrCat("expected a device literal (cpu:0, cuda:1/global, ?, …), found ", Describe(text, pos)));
  std::optional<DeviceType> parsed = DeviceTypeFromName(name);
  if (!parsed)
    return ErrorAt(error_offset, type_start,
                   absl::StrCat("unknown device type '", name,
                                "' (expected cpu, cuda, rocm, metal, vulkan, opencl, hexagon, webgpu or *)"));
  *type = *parsed;
  return absl::OkStatus();
}

// `:ID` at text[*at], if there; *at moves past it.
absl::Status ParseDeviceIdAt(absl::string_view text, size_t* at, size_t* error_offset, int* id) {
  size_t& pos = *at;
  if (pos >= text.size() || text[pos] != ':') return absl::OkStatus();
  ++pos;
  size_t id_start = pos;
  long long value = 0;
  while (pos < text.size() && IsDigit(text[pos])) {
    value = value * 10 + (text[pos] - '0');
    if (value > 1'000'000'000) return ErrorAt(error_offset, id_start, "device id is too large");
    ++pos;
  }
  if (pos == id_start)
    return ErrorAt(error_offset, pos,
                   absl::StrCat("expected a non-negative device id after ':', found ", Describe(text, pos)));
  *id = static_cast<int>(value);
  return absl::OkStatus();
}

// `[TARGET]` at text[*at], if there, and where the target's text starts; *at moves past it.
absl::Status ParseTargetAt(absl::string_view text, size_t* at, size_t* error_offset, std::optional<Target>* target,
                           size_t* target_offset) {
  size_t& pos = *at;
  if (pos >= text.size() || text[pos] != '[') return absl::OkStatus();
  size_t open = pos++;
  size_t start = pos;
  bool in_quote = false;
  while (pos < text.size() && (in_quote || text[pos] != ']')) {
    if (text[pos] == '\\' && in_quote && pos + 1 < text.size()) ++pos;
    else if (text[pos] == '"') in_quote = !in_quote;
    ++pos;
  }
  if (pos >= text.size()) return ErrorAt(error_offset, open, "unterminated '[' in device literal");
  size_t inner_offset = 0;
  absl::StatusOr<Target> parsed = Target::Parse(text.substr(start, pos - start), &inner_offset);
  if (!parsed.ok()) return ErrorAt(error_offset, start + inner_offset, parsed.status().message());
  *target = *parsed;
  *target_offset = start;
  ++pos;  // ']'
  return absl::OkStatus();
}

// Field-wise join of one optional field; false on conflict.
template <typename T>
bool JoinField(const T& a, const T& b, bool a_set, bool b_set, T& out) {
  if (a_set && b_set && !(a == b)) return false;
  out = a_set ? a : b;
  return true;
}

}  // namespace

absl::StatusOr<VirtualDevice> VirtualDevice::Make(DeviceType type, int virtual_device_id, std::optional<Target> target,
                                                  std::string memory_scope) {
  if (virtual_device_id < kUnconstrainedId)
    return absl::InvalidArgumentError(absl::StrCat("virtual device id ", virtual_device_id, " is negative"));
  if (target) {
    DeviceType target_type = target->device_type();
    if (type == DeviceType::kUnconstrained) {
      type = target_type;
    } else if (type != target_type) {
      return absl::InvalidArgumentError(absl::StrCat("device type ", DeviceTypeName(type), " disagrees with target '",
                                                     target->ToString(), "', which runs on ",
                                                     DeviceTypeName(target_type)));
    }
  }
  for (char c : memory_scope)
    if (!IsScopeChar(c))
      return absl::InvalidArgumentError(
          absl::StrCat("memory scope '", memory_scope, "' has a character outside [A-Za-z0-9_.]"));
  VirtualDevice device;
  device.device_type_ = type;
  device.virtual_device_id_ = virtual_device_id;
  device.target_ = std::move(target);
  device.memory_scope_ = std::move(memory_scope);
  return device;
}

VirtualDevice VirtualDevice::ForDevice(DeviceType type, int id) {
  VirtualDevice device;
  device.device_type_ = type;
  device.virtual_device_id_ = id < 0 ? kUnconstrainedId : id;
  return device;
}

VirtualDevice VirtualDevice::ForScope(std::string memory_scope) {
  VirtualDevice device;
  device.memory_scope_ = std::move(memory_scope);
  return device;
}

bool VirtualDevice::IsFullyUnconstrained() const {
  return !has_device_type() && !has_id() && !has_target() && !has_memory_scope();
}

bool VirtualDevice::IsFullyConstrained() const { return has_target() && has_id() && has_memory_scope(); }

absl::StatusOr<Device> VirtualDevice::ToDevice() const {
  if (!has_device_type())
    return absl::FailedPreconditionError(absl::StrCat("virtual device ", ToString(), " has no device type"));
  if (!has_id()) return absl::FailedPreconditionError(absl::StrCat("virtual device ", ToString(), " has no device id"));
  return Device{device_type_, virtual_device_id_};
}

std::string VirtualDevice::ToString() const {
  if (IsFullyUnconstrained()) return "?";
  std::string out;
  if (has_device_type() || has_id() || has_target()) {
    out = std::string(DeviceTypeName(device_type_));
    if (has_id()) absl::StrAppend(&out, ":", virtual_device_id_);
    if (has_target()) absl::StrAppend(&out, "[", target_->ToString(), "]");
  }
  if (has_memory_scope()) absl::StrAppend(&out, "/", memory_scope_);
  return out;
}

absl::StatusOr<VirtualDevice> ParseVirtualDevicePrefix(absl::string_view text, size_t* consumed, size_t* error_offset) {
  size_t pos = 0;
  auto finish = [&](absl::StatusOr<VirtualDevice> result) -> absl::StatusOr<VirtualDevice> {
    if (result.ok() && consumed != nullptr) *consumed = pos;
    return result;
  };
  auto check_end = [&]() -> absl::Status {
    if (pos < text.size() && !EndsLiteral(text[pos]))
      return ErrorAt(error_offset, pos, absl::StrCat("unexpected ", Describe(text, pos), " in device literal"));
    return absl::OkStatus();
  };
  if (text.empty() || EndsLiteral(text[0]))
    return ErrorAt(error_offset, 0,
                   absl::StrCat("expected a device literal (cpu:0, cuda:1/global, ?, …), found ", Describe(text, 0)));
  if (text[pos] == '?') {
    ++pos;
    if (absl::Status s = check_end(); !s.ok()) return s;
    return finish(VirtualDevice());
  }

  DeviceType type = DeviceType::kUnconstrained;
  int id = VirtualDevice::kUnconstrainedId;
  std::optional<Target> target;
  size_t target_offset = 0;
  if (pos < text.size() && text[pos] != '/') {
    if (absl::Status s = ParseDeviceTypeAt(text, &pos, error_offset, &type); !s.ok()) return s;
    if (absl::Status s = ParseDeviceIdAt(text, &pos, error_offset, &id); !s.ok()) return s;
    if (absl::Status s = ParseTargetAt(text, &pos, error_offset, &target, &target_offset); !s.ok()) return s;
  }
  std::string scope;
  if (pos < text.size() && text[pos] == '/') {
    ++pos;
    size_t scope_start = pos;
    while (pos < text.size() && IsScopeChar(text[pos])) ++pos;
    if (pos == scope_start)
      return ErrorAt(error_offset, pos, absl::StrCat("expected a memory scope after '/', found ", Describe(text, pos)));
    scope = std::string(text.substr(scope_start, pos - scope_start));
  }
  if (absl::Status s = check_end(); !s.ok()) return s;
  absl::StatusOr<VirtualDevice> device = VirtualDevice::Make(type, id, target, std::move(scope));
  if (!device.ok()) return ErrorAt(error_offset, target_offset, device.status().message());
  return finish(std::move(device));
}

absl::StatusOr<VirtualDevice> ParseVirtualDevice(absl::string_view text, size_t* error_offset) {
  size_t consumed = 0;
  absl::StatusOr<VirtualDevice> device = ParseVirtualDevicePrefix(text, &consumed, error_offset);
  if (!device.ok()) return device;
  if (consumed != text.size())
    return ErrorAt(error_offset, consumed,
                   absl::StrCat("unexpected ", Describe(text, consumed), " after device literal"));
  return device;
}

std::optional<VirtualDevice> Join(const VirtualDevice& a, const VirtualDevice& b) {
  VirtualDevice out;
  if (!JoinField(a.device_type_, b.device_type_, a.has_device_type(), b.has_device_type(), out.device_type_) ||
      !JoinField(a.virtual_device_id_, b.virtual_device_id_, a.has_id(), b.has_id(), out.virtual_device_id_) ||
      !JoinField(a.target_, b.target_, a.has_target(), b.has_target(), out.target_) ||
      !JoinField(a.memory_scope_, b.memory_scope_, a.has_memory_scope(), b.has_memory_scope(), out.memory_scope_))
    return std::nullopt;
  return out;
}

VirtualDevice Default(const VirtualDevice& lhs, const VirtualDevice& rhs) {
  VirtualDevice out;
  out.device_type_ = lhs.has_device_type() ? lhs.device_type_ : rhs.device_type_;
  out.virtual_device_id_ = lhs.has_id() ? lhs.virtual_device_id_ : rhs.virtual_device_id_;
  out.memory_scope_ = lhs.has_memory_scope() ? lhs.memory_scope_ : rhs.memory_scope_;
  if (lhs.has_target()) {
    out.target_ = lhs.target_;
  } else if (rhs.has_target() && rhs.target_->device_type() == out.device_type_) {
    out.target_ = rhs.target_;
  }
  return out;
}

const VirtualDevice& VirtualDeviceCache::Intern(const VirtualDevice& device) {
  absl::MutexLock lock(&mutex_);
  return *devices_.insert(device).first;
}

size_t VirtualDeviceCache::size() const {
  absl::MutexLock lock(&mutex_);
  return devices_.size();
}

}  // namespace vdev
