// ReadNpy and WriteNpy of vdev/executor/npy.h.
#include "vdev/executor/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace vdev {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct DTypeCode {
  ir::DType dtype;
  const char* descr;
};
constexpr DTypeCode kCodes[] = {
    {ir::DType::kF64, "<f8"},  {ir::DType::kF32, "<f4"}, {ir::DType::kF16, "<f2"},
    {ir::DType::kBF16, "|V2"}, {ir::DType::kI64, "<i8"}, {ir::DType::kI32, "<i4"},
    {ir::DType::kI8, "|i1"},   {ir::DType::kU8, "|u1"},  {ir::DType::kBool, "|b1"},
};

std::optional<ir::DType> DTypeOfDescr(absl::string_view descr) {
  for (const DTypeCode& c : kCodes) {
    if (descr == c.descr) return c.dtype;
    // One-byte types may be written with '<' or '=' too; 'V2' with any order mark.
    if (descr.size() == 3 && absl::string_view(c.descr).substr(1) == descr.substr(1) &&
        (c.descr[0] == '|' || descr[0] == '='))
      return c.dtype;
  }
  return std::nullopt;
}

const char* DescrOf(ir::DType dtype) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == dtype) return c.descr;
  return "|u1";
}

// The value text after `'key':` in the header dict, up to the matching end.
std::optional<std::string> DictValue(absl::string_view header, absl::string_view key) {
  size_t at = header.find(absl::StrCat("'", key, "'"));
  if (at == absl::string_view::npos) return std::nullopt;
  size_t colon = header.find(':', at);
  if (colon == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(header.substr(colon + 1));
  if (rest.empty()) return std::nullopt;
  size_t end;
  if (rest[0] == '(') {
    end = rest.find(')');
    if (end == absl::string_view::npos) return std::nullopt;
    return std::string(rest.substr(0, end + 1));
  }
  if (rest[0] == '\'') {
    end = rest.find('\'', 1);
    if (end == absl::string_view::npos) return std::nullopt;
    return std::string(rest.substr(1, end - 1));
  }
  end = rest.find_first_of(",}");
  return std::string(absl::StripAsciiWhitespace(rest.substr(0, end)));
}

}  // namespace

absl::StatusOr<HostTensor> ReadNpy(const std::string& path) {
  auto bad = [&path](absl::string_view why) { return absl::InvalidArgumentError(absl::StrCat(path, ": ", why)); };
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? absl::NotFoundError(absl::StrCat(path, ": no such file"))
                           : bad(absl::StrCat("cannot read: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return bad("not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(absl::StrCat("cannot open: ", std::strerror(errno)));
  char prefix[kMagicSize + 2];
  if (!in.read(prefix, sizeof prefix) || std::memcmp(prefix, kMagic, kMagicSize) != 0)
    return bad("not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(prefix[kMagicSize]);
  uint32_t header_size = 0;
  if (major == 1) {
    unsigned char n[2];
    if (!in.read(reinterpret_cast<char*>(n), 2)) return bad("truncated header");
    header_size = n[0] | (n[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char n[4];
    if (!in.read(reinterpret_cast<char*>(n), 4)) return bad("truncated header");
    header_size = n[0] | (n[1] << 8) | (n[2] << 16) | (uint32_t{n[3]} << 24);
  } else {
    return bad(absl::StrCat("unsupported .npy version ", major));
  }
  if (header_size > (1u << 20) || header_size > static_cast<uint64_t>(st.st_size))
    return bad("header size out of range");
  std::string header(header_size, '\0');
  if (!in.read(header.data(), header_size)) return bad("truncated header");

  std::optional<std::string> descr = DictValue(header, "descr");
  std::optional<std::string> fortran = DictValue(header, "fortran_order");
  std::optional<std::string> shape_text = DictValue(header, "shape");
  if (!descr || !fortran || !shape_text) return bad("header lacks descr, fortran_order or shape");
  std::optional<ir::DType> dtype = DTypeOfDescr(*descr);
  if (!dtype)
    return bad(absl::StrCat("unsupported dtype '", *descr, "' (f64 f32 f16 bf16 as |V2, i64 i32 i8 u8 bool)"));
  if (*fortran != "False") return bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  HostTensor t;
  t.dtype = *dtype;
  absl::string_view dims = absl::StripSuffix(absl::StripPrefix(*shape_text, "("), ")");
  int64_t elements = 1;
  for (absl::string_view d : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t n;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &n) || n < 0)
      return bad(absl::StrCat("bad shape ", *shape_text));
    if (n != 0 && elements > (int64_t{1} << 40) / n) return bad(absl::StrCat("shape ", *shape_text, " is too large"));
    elements *= n;
    t.shape.push_back(n);
  }
  const uint64_t data_bytes = static_cast<uint64_t>(elements) * DTypeBytes(*dtype);
  const uint64_t offset = static_cast<uint64_t>(in.tellg());
  if (static_cast<uint64_t>(st.st_size) != offset + data_bytes)
    return bad(absl::StrCat("holds ", static_cast<uint64_t>(st.st_size) - offset, " data bytes; shape ", *shape_text,
                            " of ", ir::DTypeName(*dtype), " needs ", data_bytes));
  t.bytes.resize(data_bytes);
  if (!in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(data_bytes)))
    return bad("truncated data");
  return t;
}

absl::Status WriteNpy(const std::string& path, const HostTensor& tensor) {
  std::string shape;
  if (tensor.shape.size() == 1) {
    shape = absl::StrCat("(", tensor.shape[0], ",)");
  } else {
    shape = absl::StrCat("(", absl::StrJoin(tensor.shape, ", "), ")");
  }
  std::string header =
      absl::StrCat("{'descr': '", DescrOf(tensor.dtype), "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Version 1.0: magic, version, 2-byte size; the data starts at a multiple of 64 bytes.
  const size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  out.write(kMagic, kMagicSize);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char size[2] = {static_cast<char>(header.size() & 0xFF), static_cast<char>(header.size() >> 8)};
  out.write(size, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(tensor.bytes.data()), static_cast<std::streamsize>(tensor.bytes.size()));
  out.close();
  if (!out) return absl::InvalidArgumentError(absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace vdev
