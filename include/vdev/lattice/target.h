// Compilation targets, interned so that structural equality is pointer equality.
//
// TVM compares targets by reference, so two separately built `cuda` targets fail to join. Here every
// Target is a handle to one canonical, immutable node per structure: `Target::Parse("cuda")` twice
// yields handles that compare equal and share storage.
//
// Text form: the kind first, then `-key=value` options (or `-flag`, meaning `-flag=true`), and an
// optional host target as `-host=KIND` or `-host="KIND -key=value …"`:
//   cuda -arch=sm_90 -host="llvm -mcpu=znver4"
// The canonical print orders options by key and puts the host last; Parse(ToString(t)) == t.
#ifndef VDEV_TARGET_H_
#define VDEV_TARGET_H_

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "vdev/lattice/device_type.h"

namespace vdev {

enum class TargetKind { kLLVM, kCUDA, kROCm, kMetal, kVulkan, kOpenCL, kHexagon, kWebGPU };

absl::string_view TargetKindName(TargetKind kind);
std::optional<TargetKind> TargetKindFromName(absl::string_view name);
// The device type code for a target kind runs on (llvm → cpu, cuda → cuda, …).
DeviceType TargetKindDeviceType(TargetKind kind);

class Target {
 public:
  using Options = std::map<std::string, std::string, std::less<>>;

  // Parses the text form above. On failure returns InvalidArgument; when error_offset is given it
  // receives the byte offset in `text` of the offending character.
  static absl::StatusOr<Target> Parse(absl::string_view text, size_t* error_offset = nullptr);
  // Builds (and interns) a target from its parts.
  static Target Make(TargetKind kind, Options options = {}, std::optional<Target> host = std::nullopt);

  TargetKind kind() const;
  DeviceType device_type() const { return TargetKindDeviceType(kind()); }
  const Options& options() const;
  // The host target, or nullopt.
  std::optional<Target> host() const;
  // Canonical text form.
  const std::string& ToString() const;

  // Interning makes these structural comparisons.
  friend bool operator==(const Target& a, const Target& b) { return a.node_ == b.node_; }
  template <typename H>
  friend H AbslHashValue(H h, const Target& t) {
    return H::combine(std::move(h), t.node_);
  }
  template <typename Sink>
  friend void AbslStringify(Sink& sink, const Target& t) {
    sink.Append(t.ToString());
  }
  friend std::ostream& operator<<(std::ostream& os, const Target& t) { return os << t.ToString(); }

  struct Node;

 private:
  explicit Target(const Node* node) : node_(node) {}
  const Node* node_;  // owned by the process-wide intern table; never freed
};

}  // namespace vdev

#endif  // VDEV_TARGET_H_
