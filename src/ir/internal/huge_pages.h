// Transparent huge pages for the large flat arenas of a parsed or planned module.
//
// A million-binding module fills ~150 MB of freshly mapped memory; with 4 KiB pages that is tens of
// thousands of page faults per parse, a fifth of its time (perf). Asking for huge pages on the
// reserved-but-untouched part of an arena makes the kernel fault it in 2 MiB at a time. Advisory
// only: where huge pages are off or unavailable nothing changes.
#ifndef VDEV_SRC_PLANNER_HUGE_PAGES_H_
#define VDEV_SRC_PLANNER_HUGE_PAGES_H_

#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vdev::ir::internal {

template <typename T>
void AdviseHugePages(const std::vector<T>& v) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const size_t bytes = v.capacity() * sizeof(T);
  if (bytes < 2 * kHuge) return;  // small arenas: not worth a system call
  const uintptr_t data = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t begin = (data + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (data + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)v;
#endif
}

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_PLANNER_HUGE_PAGES_H_
