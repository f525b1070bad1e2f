// The messages between a controller session and its workers, one byte string each.
//
// Both back ends carry the same strings (the threaded one through queues, the process one framed
// on a socket), so one decoder serves both and the threaded back end tests the wire format too.
// A command is [kind u8][seq u64] then its fields; a reply is [kind u8][seq u64] then its fields.
// Numbers are little-endian as the host stores them (both ends run on the same host).
#ifndef VDEV_SRC_CONTROLLER_INTERNAL_PROTOCOL_H_
#define VDEV_SRC_CONTROLLER_INTERNAL_PROTOCOL_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/string_view.h"
#include "vdev/kernels/tensor.h"
#include "vdev/support/checked_size.h"

namespace vdev::internal {

enum class CommandKind : uint8_t {
  kGetFunc = 1,  // result_reg, name
  kCall,         // func_reg, result_reg, count, values
  kFree,         // count, regs
  kCopyTo,       // reg, staged u8, tensor (staged: its header; the bytes are in the staging area)
  kCopyFrom,     // reg, may stage u8 (worker 0; replied with kValue: a tensor or a staged tensor)
  kDebugGet,     // reg (replied with kValue)
  kDebugSet,     // reg, value
  kInitCcl,      // ccl, device id, rendezvous dir, session id, timeout ms
  kShutdown,
};

enum class ReplyKind : uint8_t {
  kHello = 1,  // a worker process is running
  kDone,       // the worker has run every command up to seq (sent whenever it runs out of work)
  kValue,      // value
  kError,      // status code i32, message (names the worker and the command)
};

// Values on the wire: a DRef travels as its register number, a worker object as its type name.
// kStagedTensor: a tensor's header, its bytes in the staging area (internal/staging.h).
enum class ValueTag : uint8_t { kNone, kInt, kFloat, kString, kShape, kTensor, kRegister, kObject, kStagedTensor };

class Encoder {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Str(absl::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  void ShapeOf(const Shape& shape) {
    U64(shape.size());
    for (int64_t d : shape) I64(d);
  }
  void Tensor(const HostTensor& t) {
    TensorHeader(t);
    Raw(t.bytes.data(), t.bytes.size());
  }
  // A tensor without its bytes, which the sender then appends to the message (a transport's tail).
  void TensorHeader(const HostTensor& t) {
    U8(static_cast<uint8_t>(t.dtype));
    ShapeOf(t.shape);
    U64(t.bytes.size());
  }
  // A value as ValueTag then its fields, for the kinds both sides send alike.
  void Tagged(std::monostate) { U8(static_cast<uint8_t>(ValueTag::kNone)); }
  void Tagged(int64_t v) {
    U8(static_cast<uint8_t>(ValueTag::kInt));
    I64(v);
  }
  void Tagged(double v) {
    U8(static_cast<uint8_t>(ValueTag::kFloat));
    F64(v);
  }
  void Tagged(const std::string& v) {
    U8(static_cast<uint8_t>(ValueTag::kString));
    Str(v);
  }
  void Tagged(const Shape& v) {
    U8(static_cast<uint8_t>(ValueTag::kShape));
    ShapeOf(v);
  }
  void Tagged(const HostTensor& v) {
    U8(static_cast<uint8_t>(ValueTag::kTensor));
    Tensor(v);
  }
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Every read returns false (and reads nothing) when the message is too short or malformed.
class Decoder {
 public:
  explicit Decoder(absl::string_view in) : in_(in) {}
  bool U8(uint8_t* v) { return Raw(v, sizeof *v); }
  bool U64(uint64_t* v) { return Raw(v, sizeof *v); }
  bool I64(int64_t* v) { return Raw(v, sizeof *v); }
  bool F64(double* v) { return Raw(v, sizeof *v); }
  bool Str(std::string* s) {
    uint64_t n = 0;
    if (!U64(&n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool ShapeOf(Shape* shape) {
    uint64_t rank = 0;
    if (!U64(&rank) || rank > in_.size() / sizeof(int64_t)) return false;
    shape->resize(rank);
    for (int64_t& d : *shape) {
      if (!I64(&d) || d < 0) return false;
    }
    return true;
  }
  // Reads a tensor, reusing `t`'s buffer when it has the right size.
  bool Tensor(HostTensor* t) { return TensorHeader(t) && Raw(t->bytes.data(), t->bytes.size()); }
  // Reads dtype and shape and sizes t->bytes (reusing its buffer), leaving the bytes to the caller.
  bool TensorHeader(HostTensor* t) {
    uint8_t dtype = 0;
    uint64_t n = 0;
    if (!U8(&dtype) || dtype > static_cast<uint8_t>(ir::DType::kBool) || !ShapeOf(&t->shape) || !U64(&n)) {
      return false;
    }
    t->dtype = static_cast<ir::DType>(dtype);
    // Checked: a shape whose product wraps around must not pass for a small tensor.
    std::optional<size_t> bytes = DTypeBytes(t->dtype);
    for (int64_t d : t->shape) bytes = bytes ? CheckedMul(*bytes, static_cast<size_t>(d)) : std::nullopt;
    if (!bytes || *bytes != n) return false;
    t->bytes.resize(n);
    return true;
  }
  bool Raw(void* p, size_t n) {
    if (in_.size() < n) return false;
    if (n > 0) std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  absl::string_view in_;
};

// What `kind` is called in error messages ("CallPacked", "SyncWorker", ...).
absl::string_view CommandName(CommandKind kind);

}  // namespace vdev::internal

#endif  // VDEV_SRC_CONTROLLER_INTERNAL_PROTOCOL_H_
