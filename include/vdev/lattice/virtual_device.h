// VirtualDevice: where a value lives, as far as it is known; and the lattice operations on it.
//
// A VirtualDevice has four independent fields, each possibly unconstrained:
//   device type     (DLPack code; kUnconstrained)
//   virtual id      (>= 0; -1 unconstrained)
//   target          (a Target; nullopt unconstrained)
//   memory scope    ("global", "ipc_memory", …; "" unconstrained)
// The fully unconstrained device `?` is the bottom of the information order; a field set on a device
// is a constraint on the value that lives there.
//
// Literal syntax (see docs/spec/ir-text.md):
//   ?    cpu:0    cuda:3[cuda -arch=sm_90]/global    /ipc_memory    *:3    cuda
// Example:
//   VirtualDevice a = *ParseVirtualDevice("cuda:3");
//   VirtualDevice b = *ParseVirtualDevice("cuda[cuda]/global");
//   Join(a, b)->ToString() == "cuda:3[cuda]/global"
#ifndef VDEV_VIRTUAL_DEVICE_H_
#define VDEV_VIRTUAL_DEVICE_H_

#include <optional>
#include <ostream>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/container/node_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "vdev/lattice/device_type.h"
#include "vdev/lattice/target.h"

namespace vdev {

// A concrete device: what a runtime allocates on.
struct Device {
  DeviceType type;
  int id;
  friend bool operator==(const Device&, const Device&) = default;
};

class VirtualDevice {
 public:
  static constexpr int kUnconstrainedId = -1;

  // The fully unconstrained device `?`.
  VirtualDevice() = default;

  // Checks that a target, when given, agrees with the device type (a type left unconstrained is
  // taken from the target). Returns InvalidArgument on a disagreement or a negative id below -1.
  static absl::StatusOr<VirtualDevice> Make(DeviceType type, int virtual_device_id = kUnconstrainedId,
                                            std::optional<Target> target = std::nullopt, std::string memory_scope = "");
  // Shorthands for the common, always valid cases.
  static VirtualDevice ForDevice(DeviceType type, int id = kUnconstrainedId);
  static VirtualDevice ForScope(std::string memory_scope);

  DeviceType device_type() const { return device_type_; }
  int virtual_device_id() const { return virtual_device_id_; }
  const std::optional<Target>& target() const { return target_; }
  const std::string& memory_scope() const { return memory_scope_; }

  bool has_device_type() const { return device_type_ != DeviceType::kUnconstrained; }
  bool has_id() const { return virtual_device_id_ != kUnconstrainedId; }
  bool has_target() const { return target_.has_value(); }
  bool has_memory_scope() const { return !memory_scope_.empty(); }

  // `?`: no field set.
  bool IsFullyUnconstrained() const;
  // Target, id and scope all set (the device type is then implied by the target).
  bool IsFullyConstrained() const;

  // The concrete device; FailedPrecondition when the type or the id is unconstrained.
  absl::StatusOr<Device> ToDevice() const;

  // The canonical literal (see above). ParseVirtualDevice(d.ToString()) == d.
  std::string ToString() const;

  friend bool operator==(const VirtualDevice&, const VirtualDevice&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const VirtualDevice& d) {
    // Interned targets are identified by their canonical text's address.
    const std::string* target = d.target_ ? &d.target_->ToString() : nullptr;
    return H::combine(std::move(h), d.device_type_, d.virtual_device_id_, target, d.memory_scope_);
  }
  template <typename Sink>
  friend void AbslStringify(Sink& sink, const VirtualDevice& d) {
    sink.Append(d.ToString());
  }
  friend std::ostream& operator<<(std::ostream& os, const VirtualDevice& d) { return os << d.ToString(); }

 private:
  friend std::optional<VirtualDevice> Join(const VirtualDevice&, const VirtualDevice&);
  friend VirtualDevice Default(const VirtualDevice&, const VirtualDevice&);

  DeviceType device_type_ = DeviceType::kUnconstrained;
  int virtual_device_id_ = kUnconstrainedId;
  std::optional<Target> target_;
  std::string memory_scope_;
};

// Parses a whole literal. On failure returns InvalidArgument; when error_offset is given it
// receives the byte offset of the offending character in `text`.
absl::StatusOr<VirtualDevice> ParseVirtualDevice(absl::string_view text, size_t* error_offset = nullptr);

// Parses the literal at the start of `text` and stops before the first character that cannot
// continue it (`,`, `)`, `}`, whitespace outside `[...]`, end of text); *consumed receives its length.
// For lexers that meet literals inside larger text.
absl::StatusOr<VirtualDevice> ParseVirtualDevicePrefix(absl::string_view text, size_t* consumed,
                                                       size_t* error_offset = nullptr);

// Join: the most constrained device that agrees with both, or nullopt when some field is set in
// both and differs. Field by field: unset ⊔ x = x, x ⊔ x = x, x ⊔ y (x ≠ y) = conflict.
// The device type implied by a target takes part: cpu ⊔ [cuda] is a conflict.
// Laws (tested exhaustively on a small domain and with RapidCheck):
//   Join(a, b) == Join(b, a)                                  commutative
//   Join(Join(a, b), c) == Join(a, Join(b, c)) where defined  associative
//   Join(a, a) == a                                           idempotent
//   Join(a, ?) == a                                           ? is the identity
//   Join(a, b) agrees with a and with b on every field they set
//   Join(a, b) is defined iff no field set in both differs
[[nodiscard]] std::optional<VirtualDevice> Join(const VirtualDevice& a, const VirtualDevice& b);

// Default: lhs's fields where set, otherwise rhs's; rhs's target is taken only when its device type
// matches the resulting device type (so defaulting never makes a device disagree with its target).
// Laws:
//   Default(a, ?) == a,  Default(?, b) == b,  Default(a, a) == a
//   Default(a, b) agrees with a on every field a sets
//   Default(Default(a, b), b) == Default(a, b)                 idempotent in its first argument
//   Join(a, b) defined and targets agreeing ⇒ Default(a, b) == *Join(a, b)
[[nodiscard]] VirtualDevice Default(const VirtualDevice& lhs, const VirtualDevice& rhs);

// Interns virtual devices so that canonical devices are shared: Intern(a) and Intern(b) return the
// same reference exactly when a == b. Thread-safe; references stay valid for the cache's lifetime.
class VirtualDeviceCache {
 public:
  const VirtualDevice& Intern(const VirtualDevice& device);
  const VirtualDevice& Unconstrained() { return Intern(VirtualDevice()); }
  size_t size() const;

 private:
  mutable absl::Mutex mutex_;
  absl::node_hash_set<VirtualDevice> devices_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace vdev

#endif  // VDEV_VIRTUAL_DEVICE_H_
