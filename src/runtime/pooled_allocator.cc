// The collective allocation protocol (see internal/pooled_allocator.h).
#include "internal/pooled_allocator.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/support/checked_size.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

// What one worker asked for; compared field by field across workers.
struct Request {
  uint64_t number = 0;  // how many Allocate calls this worker has made, this one included
  uint64_t bytes = 0;
  uint64_t reused = 0;  // sequence of the pooled allocation handed out again, 0 for a new one
  std::string Describe() const {
    return absl::StrCat("allocation request #", number, " of ", bytes, " bytes",
                        reused ? absl::StrCat(" (pooled #", reused, ")") : "");
  }
};

std::string Encode(const Request& r, char kind, absl::string_view body) {
  char head[96];
  std::snprintf(head, sizeof(head), "%llu %llu %llu\n", static_cast<unsigned long long>(r.number),
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.reused));
  return absl::StrCat(head, std::string(1, kind), body);
}

bool Decode(const std::string& text, Request* r, char* kind, std::string* body) {
  unsigned long long n = 0, b = 0, u = 0;
  size_t nl = text.find('\n');
  if (nl == std::string::npos || nl + 1 >= text.size() ||
      std::sscanf(text.c_str(), "%llu %llu %llu", &n, &b, &u) != 3) {
    return false;
  }
  *r = Request{n, b, u};
  *kind = text[nl + 1];
  *body = text.substr(nl + 2);
  return true;
}

// Exchanges every worker's request; fails (on every worker alike) when they differ or one failed.
absl::StatusOr<std::vector<std::string>> Exchange(PeerGroup* session, const Request& mine, char kind,
                                                  absl::string_view body) {
  std::vector<std::string> all;
  VDEV_RETURN_IF_ERROR(session->AllGather("ipc-allocate", Encode(mine, kind, body), &all));
  std::vector<std::string> handles(all.size());
  std::vector<std::string> problems;
  Request first;
  for (size_t i = 0; i < all.size(); ++i) {
    Request r;
    char k = 0;
    if (!Decode(all[i], &r, &k, &handles[i])) {
      problems.push_back(absl::StrCat("worker ", i, " sent a malformed request"));
      continue;
    }
    if (i == 0) first = r;
    if (k == 'E') {
      problems.push_back(absl::StrCat("worker ", i, " could not allocate ", r.bytes, " bytes: ", handles[i]));
    } else if (r.number != first.number || r.bytes != first.bytes || r.reused != first.reused) {
      problems.push_back(absl::StrCat("worker ", i, " made ", r.Describe(), " but worker 0 made ", first.Describe()));
    }
  }
  if (!problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("collective allocation failed: ", absl::StrJoin(problems, "; ")));
  }
  return handles;
}

}  // namespace

std::optional<RegionLayout> LayoutFor(size_t bytes) {
  // The barrier words and epochs after the data are a fixed 34 KiB: only the data's rounding and
  // the sums after it can overflow.
  constexpr size_t kFlagBytes = (2 * kBarrierWords + kMaxBarrierBlocks) * sizeof(uint64_t);
  const std::optional<size_t> data = CheckedRoundUp(bytes, kRegionAlignment);
  const std::optional<size_t> flags_end = data ? CheckedAdd(*data, kFlagBytes) : std::nullopt;
  const std::optional<size_t> total = flags_end ? CheckedRoundUp(*flags_end, 4096) : std::nullopt;
  if (!total) return std::nullopt;
  RegionLayout l;
  l.data_bytes = *data;
  l.barrier_in_offset = l.data_bytes;
  l.barrier_out_offset = l.barrier_in_offset + kBarrierWords * sizeof(uint64_t);
  l.epochs_offset = l.barrier_out_offset + kBarrierWords * sizeof(uint64_t);
  l.total_bytes = *total;
  return l;
}

absl::StatusOr<IPCMemory*> PooledIPCAllocator::Allocate(size_t bytes) {
  const int n = session_->world_size();
  const int me = session_->rank();
  Request request{++requests_, bytes, 0};
  const std::optional<RegionLayout> layout = LayoutFor(bytes);
  if (!layout) {
    // Said to the peers too (as a failed allocation), so a worker alone in asking cannot hang them.
    const absl::Status too_large = absl::InvalidArgumentError(absl::StrCat(
        "an IPC allocation of ", bytes, " bytes (with its barrier flags, rounded to pages) overflows a 64-bit size"));
    Exchange(session_, request, 'E', too_large.message()).status().IgnoreError();
    return too_large;
  }
  for (const std::unique_ptr<PoolEntry>& e : entries_) {
    if (!e->in_use && e->memory.size == bytes) {
      request.reused = e->memory.sequence;
      VDEV_RETURN_IF_ERROR(Exchange(session_, request, 'H', "").status());
      e->in_use = true;
      return &e->memory;
    }
  }
  auto entry = std::make_unique<PoolEntry>();
  entry->mappings.assign(n, nullptr);
  entry->region_bytes = layout->total_bytes;
  const uint64_t sequence = ++next_sequence_;
  absl::StatusOr<std::string> handle = CreateLocal(*layout, sequence, entry.get());
  absl::StatusOr<std::vector<std::string>> handles = handle.ok()
                                                         ? Exchange(session_, request, 'H', *handle)
                                                         : Exchange(session_, request, 'E', handle.status().message());
  if (!handles.ok()) {  // every worker saw the same requests, so every worker fails here alike
    Release(entry.get());
    return handles.status();
  }
  absl::Status status = OpenPeers(*layout, *handles, entry.get());
  // Everyone learns whether everyone mapped everything before anyone lets go of its name.
  std::vector<std::string> opened;
  absl::Status agreed = session_->AllGather("ipc-mapped", status.ok() ? "" : status.message(), &opened);
  if (status.ok() && agreed.ok()) {
    for (size_t i = 0; i < opened.size(); ++i) {
      if (!opened[i].empty()) {
        status =
            absl::FailedPreconditionError(absl::StrCat("worker ", i, " could not map the peers' memory: ", opened[i]));
        break;
      }
    }
  } else if (status.ok()) {
    status = agreed;
  }
  if (!status.ok()) {
    Release(entry.get());
    return status;
  }
  AllMapped(entry.get());
  IPCMemory& m = entry->memory;
  m.num_workers = n;
  m.worker_id = me;
  m.size = bytes;
  m.sequence = sequence;
  for (int i = 0; i < n; ++i) {
    char* base = static_cast<char*>(entry->mappings[i]);
    m.remote_data.push_back(base);
    m.barrier_in.push_back(reinterpret_cast<uint64_t*>(base + layout->barrier_in_offset));
    m.barrier_out.push_back(reinterpret_cast<uint64_t*>(base + layout->barrier_out_offset));
  }
  m.barrier_flag = reinterpret_cast<uint64_t*>(static_cast<char*>(entry->mappings[me]) + layout->epochs_offset);
  entry->in_use = true;
  entries_.push_back(std::move(entry));
  return &entries_.back()->memory;
}

void PooledIPCAllocator::Free(IPCMemory* memory) {
  for (const std::unique_ptr<PoolEntry>& e : entries_) {
    if (&e->memory == memory) e->in_use = false;
  }
}

void PooledIPCAllocator::ReleaseAll() {
  for (const std::unique_ptr<PoolEntry>& e : entries_) Release(e.get());
  entries_.clear();
}

}  // namespace vdev::internal
