// The host backend of IPCMemory: one POSIX shared-memory segment per worker and allocation.
//
// Segment names are `/vdev-<session id>-<sequence>-<rank>`, so any worker (or `vdev launch`, after
// the job) can remove what a dead worker left behind. Each segment is created with O_EXCL and mode
// 0600, and unlinked by its owner as soon as every worker has mapped it: from then on the mappings
// are its only references and the kernel frees it when the last worker exits, however it exits.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "internal/pooled_allocator.h"
#include "vdev/runtime/ipc_memory.h"

namespace vdev {
namespace {

std::string SegmentName(absl::string_view session_id, uint64_t sequence, int rank) {
  return absl::StrCat("/vdev-", session_id, "-", sequence, "-", rank);
}

class HostIPCAllocator final : public internal::PooledIPCAllocator {
 public:
  using PooledIPCAllocator::PooledIPCAllocator;
  ~HostIPCAllocator() override { ReleaseAll(); }
  MemoryBackend backend() const override { return MemoryBackend::kHost; }

 protected:
  absl::StatusOr<std::string> CreateLocal(const internal::RegionLayout& layout, uint64_t sequence,
                                          internal::PoolEntry* entry) override {
    const int me = session()->rank();
    entry->local_name = SegmentName(session()->session_id(), sequence, me);
    int fd = shm_open(entry->local_name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return absl::InternalError(absl::StrCat("shm_open ", entry->local_name, ": ", std::strerror(errno)));
    void* base = MAP_FAILED;
    if (fchmod(fd, 0600) == 0 && ftruncate(fd, static_cast<off_t>(layout.total_bytes)) == 0) {
      base = mmap(nullptr, layout.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    int saved = errno;
    close(fd);
    if (base == MAP_FAILED) {
      shm_unlink(entry->local_name.c_str());
      return absl::ResourceExhaustedError(
          absl::StrCat("mapping ", layout.total_bytes, " bytes of ", entry->local_name, ": ", std::strerror(saved)));
    }
    // The segment is new (O_EXCL), so ftruncate made its data zero; flags and epochs are zeroed explicitly.
    std::memset(static_cast<char*>(base) + layout.barrier_in_offset, 0, layout.total_bytes - layout.barrier_in_offset);
    entry->mappings[me] = base;
    return entry->local_name;
  }

  absl::Status OpenPeers(const internal::RegionLayout& layout, const std::vector<std::string>& handles,
                         internal::PoolEntry* entry) override {
    for (size_t i = 0; i < handles.size(); ++i) {
      if (entry->mappings[i] != nullptr) continue;
      int fd = shm_open(handles[i].c_str(), O_RDWR | O_CLOEXEC, 0);
      if (fd < 0) return absl::InternalError(absl::StrCat("shm_open ", handles[i], ": ", std::strerror(errno)));
      struct stat st;
      void* base = MAP_FAILED;
      if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == layout.total_bytes) {
        base = mmap(nullptr, layout.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      }
      close(fd);
      if (base == MAP_FAILED) return absl::InternalError(absl::StrCat("mapping ", handles[i], " failed"));
      entry->mappings[i] = base;
    }
    return absl::OkStatus();
  }

  void AllMapped(internal::PoolEntry* entry) override {
    shm_unlink(entry->local_name.c_str());
    entry->local_name.clear();
  }

  void Release(internal::PoolEntry* entry) override {
    for (void*& base : entry->mappings) {
      if (base != nullptr) munmap(base, entry->region_bytes);
      base = nullptr;
    }
    // After a failed allocation the names may still exist, a dead peer's too: remove them all.
    if (!entry->local_name.empty()) {
      size_t dash = entry->local_name.rfind('-');
      std::string prefix = entry->local_name.substr(0, dash + 1);
      for (int r = 0; r < session()->world_size(); ++r) shm_unlink(absl::StrCat(prefix, r).c_str());
      entry->local_name.clear();
    }
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<IPCAllocator>> CreateHostIPCAllocator(PeerGroup* session) {
  return std::unique_ptr<IPCAllocator>(new HostIPCAllocator(session));
}

}  // namespace vdev
