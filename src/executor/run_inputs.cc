// ProgramInputs (vdev/executor/run.h): seeded random inputs, or .npy files of a directory.
#include <sys/stat.h>

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "vdev/executor/npy.h"
#include "vdev/executor/run.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

// SplitMix64: small, fast and the same on every machine, so a seed names the same inputs anywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  double Signed() { return static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0; }

 private:
  uint64_t state_;
};

HostTensor RandomTensor(ir::DType dtype, const Shape& shape, uint64_t seed) {
  HostTensor t = HostTensor::Zeros(dtype, shape);
  Random random(seed);
  const int64_t n = t.NumElements();
  const bool floating =
      dtype == ir::DType::kF64 || dtype == ir::DType::kF32 || dtype == ir::DType::kF16 || dtype == ir::DType::kBF16;
  const double scale = shape.size() >= 2 && shape[0] > 0 ? 1.0 / std::sqrt(static_cast<double>(shape[0])) : 1.0;
  const TensorRef out = t.Ref();
  for (int64_t i = 0; i < n; ++i) {
    if (floating) WriteFromDouble(out, i, random.Signed() * scale);
    else if (dtype == ir::DType::kBool) WriteFromDouble(out, i, static_cast<double>(random.Next() & 1));
    else WriteFromDouble(out, i, static_cast<double>(random.Next() % 8));
  }
  return t;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::vector<HostTensor>> ProgramInputs(const LoweredProgram& program, absl::string_view spec, int rank) {
  const ir::Module& m = program.module;
  const ir::FuncId main = m.FindGlobal("main");
  if (main == ir::kNoFunc)
    return absl::InvalidArgumentError(absl::StrCat(program.file, ": error: the program has no @main"));
  std::optional<uint64_t> seed;
  // random:SEED draws the same inputs on every worker (worker 0's of random-per-rank:SEED).
  const bool per_rank = absl::StartsWith(spec, "random-per-rank:");
  if (per_rank || absl::StartsWith(spec, "random:")) {
    const absl::string_view kind = spec.substr(0, spec.find(':') + 1);
    spec.remove_prefix(kind.size());
    uint64_t s;
    if (!absl::SimpleAtoi(spec, &s))
      return absl::InvalidArgumentError(absl::StrCat("--inputs: expected ", kind, "SEED, found ", kind, spec));
    seed = s;
  } else if (!Exists(std::string(spec))) {
    return absl::NotFoundError(absl::StrCat("--inputs: no directory ", spec));
  }
  std::vector<HostTensor> inputs;
  absl::Span<const ir::Param> params = m.Params(m.functions[main]);
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::Param& p = params[i];
    const std::string name(m.Name(p.name));
    if (p.type == ir::kNoType || m.types.kind(p.type) != ir::TypeKind::kTensor)
      return absl::InvalidArgumentError(absl::StrCat("parameter %", name, " of @main is not a tensor"));
    const ir::DType dtype = m.types.node(p.type).dtype;
    Shape shape(m.types.dims(p.type).begin(), m.types.dims(p.type).end());
    for (int64_t d : shape)
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat("parameter %", name, " has a dynamic shape"));
    if (seed) {
      const uint64_t stream = per_rank ? uint64_t(rank) : 0;
      const uint64_t mixed = *seed * 0x100000001B3ull ^ (stream << 40) ^ (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull;
      inputs.push_back(RandomTensor(dtype, shape, mixed));
      continue;
    }
    std::string path = absl::StrCat(spec, "/rank", rank, "/", name, ".npy");
    if (!Exists(path)) path = absl::StrCat(spec, "/", name, ".npy");
    if (!Exists(path))
      return absl::NotFoundError(
          absl::StrCat("input %", name, ": no file ", path, " (nor ", spec, "/rank", rank, "/", name, ".npy)"));
    VDEV_ASSIGN_OR_RETURN(HostTensor t, ReadNpy(path));
    if (t.dtype != dtype || !std::equal(shape.begin(), shape.end(), t.shape.begin(), t.shape.end()))
      return absl::InvalidArgumentError(absl::StrCat("input %", name, " (", path, "): expected ",
                                                     m.types.ToString(p.type), ", the file holds ",
                                                     ir::DTypeName(t.dtype), "[", absl::StrJoin(t.shape, ","), "]"));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace vdev
