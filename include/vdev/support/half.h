// IEEE binary16 (f16) and bfloat16 (bf16) on the host: exact widening, round-to-nearest-even narrowing.
//
// What the CPU kernels store and the executor reads back; the CUDA kernels round the same way
// (__float2half_rn, __float2bfloat16_rn), so a value rounded on either side has the same bits.
//   uint16_t h = FloatToHalf(0.1f);   // 0x2E66
//   float back = HalfToFloat(h);      // 0.0999755859375
#ifndef VDEV_HALF_H_
#define VDEV_HALF_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vdev {

inline float BitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t FloatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float BF16ToFloat(uint16_t h) { return BitsToFloat(uint32_t{h} << 16); }

// NaNs stay NaN (quiet, sign kept); everything else rounds to nearest even (overflow gives inf).
inline uint16_t FloatToBF16(float f) {
  uint32_t bits = FloatToBits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return BitsToFloat(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return BitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in f32.
  const float magnitude = static_cast<float>(mantissa) * BitsToFloat(0x33800000u);
  return sign != 0 ? -magnitude : magnitude;
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t bits = FloatToBits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));  // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): scale so the integer part is the f16 mantissa and round it
    const float scaled = BitsToFloat(abs) * BitsToFloat(0x4B800000u);  // * 2^24
    // to nearest even (1024 becomes the smallest normal, whose bits follow on).
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace vdev

#endif  // VDEV_HALF_H_
