// Transparent huge pages for large fresh buffers: a parsed or planned module's flat arenas, a
// program's text, and (in the `vdev` executable) every large allocation.
//
// A million-binding module fills ~150 MB of freshly mapped memory; with 4 KiB pages that is tens of
// thousands of page faults per parse, a fifth of its time (perf). Asking for huge pages on the
// reserved-but-untouched part of an arena makes the kernel fault it in 2 MiB at a time. Advisory
// only: where huge pages are off or unavailable nothing changes.
#ifndef VDEV_SUPPORT_HUGE_PAGES_H_
#define VDEV_SUPPORT_HUGE_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vdev {

// Asks for huge pages on the 2 MiB-aligned part of [data, data + bytes), which should not have been
// touched yet (pages already faulted in stay small until the kernel collapses them).
inline void AdviseHugePages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;  // small arenas: not worth a system call
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (start + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// The same for a vector's reserved capacity.
template <typename T>
void AdviseHugePages(const std::vector<T>& v) {
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace vdev

#endif  // VDEV_SUPPORT_HUGE_PAGES_H_
