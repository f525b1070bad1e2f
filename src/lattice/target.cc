// Target parsing, canonical printing and interning.
#include "vdev/lattice/target.h"

#include <array>
#include <utility>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace vdev {

struct Target::Node {
  TargetKind kind;
  Options options;
  const Node* host;
  std::string text;
};

namespace {

struct KindInfo {
  TargetKind kind;
  absl::string_view name;
  DeviceType device_type;
};

constexpr std::array<KindInfo, 8> kKinds = {{
    {TargetKind::kLLVM, "llvm", DeviceType::kCPU},
    {TargetKind::kCUDA, "cuda", DeviceType::kCUDA},
    {TargetKind::kROCm, "rocm", DeviceType::kROCm},
    {TargetKind::kMetal, "metal", DeviceType::kMetal},
    {TargetKind::kVulkan, "vulkan", DeviceType::kVulkan},
    {TargetKind::kOpenCL, "opencl", DeviceType::kOpenCL},
    {TargetKind::kHexagon, "hexagon", DeviceType::kHexagon},
    {TargetKind::kWebGPU, "webgpu", DeviceType::kWebGPU},
}};

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

std::string QuoteIfNeeded(const std::string& value) {
  bool plain = !value.empty();
  for (char c : value)
    if (IsSpace(c) || c == '"' || c == ']' || c == '\\') plain = false;
  if (plain) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string CanonicalText(TargetKind kind, const Target::Options& options, const Target::Node* host) {
  std::string text(TargetKindName(kind));
  for (const auto& [key, value] : options) absl::StrAppend(&text, " -", key, "=", QuoteIfNeeded(value));
  if (host != nullptr) absl::StrAppend(&text, " -host=", QuoteIfNeeded(host->text));
  return text;
}

class InternTable {
 public:
  const Target::Node* Intern(TargetKind kind, Target::Options options, const Target::Node* host) {
    std::string text = CanonicalText(kind, options, host);
    absl::MutexLock lock(&mutex_);
    auto [it, inserted] = nodes_.try_emplace(text);
    if (inserted) it->second = Target::Node{kind, std::move(options), host, text};
    return &it->second;
  }

 private:
  absl::Mutex mutex_;
  absl::node_hash_map<std::string, Target::Node> nodes_ ABSL_GUARDED_BY(mutex_);
};

InternTable& Table() {
  // Leaked on purpose: targets are handed out as raw node pointers that must outlive every static.
  static InternTable* table = new InternTable();
  return *table;
}

absl::Status ErrorAt(size_t* error_offset, size_t offset, absl::string_view message) {
  if (error_offset != nullptr) *error_offset = offset;
  return absl::InvalidArgumentError(message);
}

}  // namespace

absl::string_view TargetKindName(TargetKind kind) {
  for (const KindInfo& info : kKinds)
    if (info.kind == kind) return info.name;
  return "?";
}

std::optional<TargetKind> TargetKindFromName(absl::string_view name) {
  for (const KindInfo& info : kKinds)
    if (info.name == name) return info.kind;
  return std::nullopt;
}

DeviceType TargetKindDeviceType(TargetKind kind) {
  for (const KindInfo& info : kKinds)
    if (info.kind == kind) return info.device_type;
  return DeviceType::kUnconstrained;
}

absl::StatusOr<Target> Target::Parse(absl::string_view text, size_t* error_offset) {
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() && IsSpace(text[pos])) ++pos;
  };
  skip_space();
  size_t kind_start = pos;
  while (pos < text.size() && !IsSpace(text[pos])) ++pos;
  absl::string_view kind_name = text.substr(kind_start, pos - kind_start);
  if (kind_name.empty()) return ErrorAt(error_offset, kind_start, "expected a target kind");
  std::optional<TargetKind> kind = TargetKindFromName(kind_name);
  if (!kind)
    return ErrorAt(error_offset, kind_start,
                   absl::StrCat("unknown target kind '", kind_name,
                                "' (expected llvm, cuda, rocm, metal, vulkan, opencl, hexagon or webgpu)"));
  Options options;
  const Node* host = nullptr;
  while (true) {
    skip_space();
    if (pos >= text.size()) break;
    size_t option_start = pos;
    if (text[pos] != '-') return ErrorAt(error_offset, pos, "expected an option of the form -key=value");
    ++pos;
    size_t key_start = pos;
    while (pos < text.size() && IsKeyChar(text[pos])) ++pos;
    std::string key(text.substr(key_start, pos - key_start));
    if (key.empty()) return ErrorAt(error_offset, key_start, "expected an option name after '-'");
    std::string value = "true";
    if (pos < text.size() && text[pos] == '=') {
      ++pos;
      value.clear();
      if (pos < text.size() && text[pos] == '"') {
        size_t quote = pos++;
        bool closed = false;
        while (pos < text.size()) {
          char c = text[pos++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\' && pos < text.size()) c = text[pos++];
          value.push_back(c);
        }
        if (!closed) return ErrorAt(error_offset, quote, "unterminated quoted option value");
      } else {
        size_t value_start = pos;
        while (pos < text.size() && !IsSpace(text[pos])) ++pos;
        value = std::string(text.substr(value_start, pos - value_start));
        if (value.empty()) return ErrorAt(error_offset, value_start, "expected an option value after '='");
      }
    } else if (pos < text.size() && !IsSpace(text[pos])) {
      return ErrorAt(error_offset, pos,
                     absl::StrCat("unexpected character '", std::string(1, text[pos]), "' in option name"));
    }
    if (key == "host") {
      if (host != nullptr) return ErrorAt(error_offset, option_start, "the host target is given twice");
      size_t inner_offset = 0;
      absl::StatusOr<Target> parsed = Parse(value, &inner_offset);
      if (!parsed.ok())
        return ErrorAt(error_offset, option_start, absl::StrCat("in host target: ", parsed.status().message()));
      if (parsed->host())
        return ErrorAt(error_offset, option_start, "a host target cannot have a host target of its own");
      host = parsed->node_;
      continue;
    }
    if (!options.emplace(key, value).second)
      return ErrorAt(error_offset, option_start, absl::StrCat("option -", key, " is given twice"));
  }
  return Target(Table().Intern(*kind, std::move(options), host));
}

Target Target::Make(TargetKind kind, Options options, std::optional<Target> host) {
  return Target(Table().Intern(kind, std::move(options), host ? host->node_ : nullptr));
}

TargetKind Target::kind() const { return node_->kind; }
const Target::Options& Target::options() const { return node_->options; }
std::optional<Target> Target::host() const {
  if (node_->host == nullptr) return std::nullopt;
  return Target(node_->host);
}
const std::string& Target::ToString() const { return node_->text; }

}  // namespace vdev
