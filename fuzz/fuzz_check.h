// The fuzz targets' property check: a broken promise aborts, which libFuzzer reports as a crash
// with the input that broke it.
#ifndef VDEV_FUZZ_FUZZ_CHECK_H_
#define VDEV_FUZZ_FUZZ_CHECK_H_

#include <cstdlib>

namespace vdev::fuzz {

inline void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace vdev::fuzz

#endif  // VDEV_FUZZ_FUZZ_CHECK_H_
