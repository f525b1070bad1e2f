// What the host all-reduce tests (copying and zero-copy) share: their inputs and their cases.
#ifndef VDEV_TESTS_RUNTIME_ALLREDUCE_TEST_UTIL_H_
#define VDEV_TESTS_RUNTIME_ALLREDUCE_TEST_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "vdev/allreduce.h"

namespace vdev::testing {

// Integer-valued, so every summation order gives the exact answer; differs per call (salt).
template <typename T>
T Input(int rank, size_t i, uint64_t salt) {
  return static_cast<T>(static_cast<int>((i * 7 + salt * 13) % 1000) - 500 + rank * 3);
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
