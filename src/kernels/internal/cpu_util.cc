// The shared helpers of the CPU kernels (internal/cpu_util.h).
#include "internal/cpu_util.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace vdev::kernels_internal {

namespace {

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void WidenHalfF16C(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = HalfToFloat(in[i]);
}

// The F16C bit comes from CPUID itself: clang 14's __builtin_cpu_supports does not know "f16c".
// "avx" there also checks that the OS saves the AVX registers.
bool HasF16C() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif

}  // namespace

void WidenToFloat(ir::DType dtype, const void* in, float* out, int64_t n) {
  switch (dtype) {
    case ir::DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(in);
#if defined(__x86_64__)
      if (HasF16C()) return WidenHalfF16C(h, out, n);
#endif
      for (int64_t i = 0; i < n; ++i) out[i] = HalfToFloat(h[i]);
      return;
    }
    case ir::DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(in);
      for (int64_t i = 0; i < n; ++i) out[i] = BF16ToFloat(h[i]);
      return;
    }
    default:  // f32: the caller's dispatch admits float dtypes only
      std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  }
}

void NarrowFromFloat(ir::DType dtype, const float* in, void* out, int64_t n) {
  switch (dtype) {
    case ir::DType::kF16: {
      auto* h = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) h[i] = FloatToHalf(in[i]);
      return;
    }
    case ir::DType::kBF16: {
      auto* h = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) h[i] = FloatToBF16(in[i]);
      return;
    }
    default: std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
  }
}

void AddCpuKernel(KernelRegistry& registry, absl::string_view op, KernelFn fn) {
  (void)registry.Register(op, DeviceType::kCPU, fn);
}

float* Scratch(int slot, int64_t n) {
  thread_local std::vector<float> buffers[4];
  std::vector<float>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}

absl::StatusOr<BroadcastWalk> BroadcastWalk::Make(const KernelOp& op, const Shape& out, const Shape& a,
                                                  const Shape& b) {
  const size_t rank = out.size();
  if (a.size() > rank || b.size() > rank)
    return Invalid(op, "operands ", ShapeString(a), " and ", ShapeString(b), " do not broadcast to ", ShapeString(out));
  // Right-aligned dims with contiguous strides, 0 where an operand broadcasts.
  std::vector<int64_t> sa(rank, 0), sb(rank, 0);
  int64_t stride_a = 1, stride_b = 1;
  for (size_t i = rank; i-- > 0;) {
    const size_t lead_a = rank - a.size(), lead_b = rank - b.size();
    const int64_t da = i < lead_a ? 1 : a[i - lead_a], db = i < lead_b ? 1 : b[i - lead_b];
    const int64_t want = da == 1 ? db : da;
    if ((da != 1 && db != 1 && da != db) || out[i] != want)
      return Invalid(op, "operands ", ShapeString(a), " and ", ShapeString(b), " do not broadcast to ",
                     ShapeString(out));
    sa[i] = da == 1 ? 0 : stride_a;
    sb[i] = db == 1 ? 0 : stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  BroadcastWalk w;
  w.total_ = 1;
  for (size_t i = 0; i < rank; ++i) {
    w.total_ *= out[i];
    if (out[i] == 1) continue;  // walks nothing
    const size_t last = w.dims_.size();
    if (last > 0 && w.stride_a_[last - 1] == sa[i] * out[i] && w.stride_b_[last - 1] == sb[i] * out[i]) {
      w.dims_[last - 1] *= out[i];  // the outer dim continues this one: merge
      w.stride_a_[last - 1] = sa[i];
      w.stride_b_[last - 1] = sb[i];
      continue;
    }
    w.dims_.push_back(out[i]);
    w.stride_a_.push_back(sa[i]);
    w.stride_b_.push_back(sb[i]);
  }
  return w;
}

}  // namespace vdev::kernels_internal
