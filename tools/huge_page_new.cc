// The `vdev` executable's global operator new: malloc, as the default one, and then huge pages
// asked for on every large block (vdev/support/huge_pages.h).
//
// Why: planning a million-binding program fills ~200 MB of fresh memory (the text, the module's
// arenas, the planner's tables, the spread graph); faulting it in 4 KiB at a time was about a fifth
// of `vdev plan`'s wall time. Where transparent huge pages are `madvise` only (a common default),
// nothing but this advice gives them to a process; asking in each container that grows large would
// miss those sized through resize or a constructor, which touch the memory at once. A block from
// malloc that large is fresh from mmap or the top of the heap, so the advice comes before its first
// touch. The operator delete of the C++ library frees with free(), which matches. Left out under a
// sanitizer, whose own operator new tracks how each block was allocated (malloc'ed memory freed by
// operator delete would be reported as a mismatch).
#include <cstddef>
#include <cstdlib>
#include <new>

#include "vdev/support/huge_pages.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define VDEV_SANITIZED_NEW 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VDEV_SANITIZED_NEW 1
#endif

#if !defined(VDEV_SANITIZED_NEW)
void* operator new(std::size_t size) {
  if (size == 0) size = 1;
  for (;;) {
    if (void* block = std::malloc(size)) {
      vdev::AdviseHugePages(block, size);
      return block;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* operator new[](std::size_t size) { return ::operator new(size); }
#endif  // !VDEV_SANITIZED_NEW
