// What the host all-reduce tests (copying and zero-copy) share: their inputs and their cases.
#ifndef VDEV_TESTS_RUNTIME_ALLREDUCE_TEST_UTIL_H_
#define VDEV_TESTS_RUNTIME_ALLREDUCE_TEST_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/half.h"

namespace vdev::testing {

// Integer-valued, so every summation order gives the exact answer; differs per call (salt).
template <typename T>
T Input(int rank, size_t i, uint64_t salt) {
  return static_cast<T>(static_cast<int>((i * 7 + salt * 13) % 1000) - 500 + rank * 3);
}

// f16/bf16 inputs (as bits): values in [-50, 50) with three decimals, so sums need rounding.
inline uint16_t HalfInput(DataType type, int rank, size_t i, uint64_t salt) {
  const uint64_t h = (i * 2654435761u + salt * 40503u + static_cast<uint64_t>(rank) * 9973u) % 100000;
  const float v = static_cast<float>(h) / 1000.0f - 50.0f;
  return type == DataType::kF16 ? FloatToHalf(v) : FloatToBF16(v);
}

inline float HalfValue(DataType type, uint16_t bits) {
  return type == DataType::kF16 ? HalfToFloat(bits) : BF16ToFloat(bits);
}

// What the host backend promises for f16/bf16: the f32 sum in rank order, rounded once. With
// `round_each_step`, the sum rounded after every addition instead (what it must not compute).
inline uint16_t HalfSum(DataType type, int world, size_t i, uint64_t salt, bool round_each_step = false) {
  auto narrow = [type](float f) { return type == DataType::kF16 ? FloatToHalf(f) : FloatToBF16(f); };
  float acc = HalfValue(type, HalfInput(type, 0, i, salt));
  for (int r = 1; r < world; ++r) {
    acc += HalfValue(type, HalfInput(type, r, i, salt));
    if (round_each_step) acc = HalfValue(type, narrow(acc));
  }
  return narrow(acc);
}

struct AllReduceCase {
  int world;
  AllReduceAlgorithm algorithm;
};

// "world3_oneshot": a test name for a case.
inline std::string AllReduceCaseName(const ::testing::TestParamInfo<AllReduceCase>& info) {
  std::string algo(AlgorithmName(info.param.algorithm));
  algo.erase(std::remove(algo.begin(), algo.end(), '-'), algo.end());
  return absl::StrCat("world", info.param.world, "_", algo);
}

}  // namespace vdev::testing

#endif  // VDEV_TESTS_RUNTIME_ALLREDUCE_TEST_UTIL_H_
