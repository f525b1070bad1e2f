// The host IPC allocator across real worker processes.
#include "vdev/runtime/ipc_memory.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/worker_harness.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using ::testing::AllOf;
using testing::ExpectAllOk;
using ::testing::HasSubstr;
using testing::LeftoverSegments;
using testing::RunWorkers;
using testing::UniqueSessionId;
using testing::WorkerResult;

absl::Status Check(bool ok, absl::string_view what) { return ok ? absl::OkStatus() : absl::InternalError(what); }

TEST(HostIPCMemoryTest, EveryWorkerSeesEveryOthersWritesAndZeroedBarriers) {
  for (int n : {2, 3, 4, 8}) {
    const std::string id = UniqueSessionId();
    ExpectAllOk(RunWorkers(n, id, [n](PeerGroup& s) -> absl::Status {
      VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
      VDEV_ASSIGN_OR_RETURN(IPCMemory * m, alloc->Allocate(1000));
      VDEV_RETURN_IF_ERROR(Check(m->num_workers == n && m->worker_id == s.rank() && m->size == 1000 &&
                                     m->remote_data.size() == static_cast<size_t>(n),
                                 "fields"));
      for (int i = 0; i < n; ++i) {
        for (size_t w = 0; w < kBarrierWords; ++w) {
          VDEV_RETURN_IF_ERROR(Check(m->barrier_in[i][w] == 0 && m->barrier_out[i][w] == 0, "dirty barrier"));
        }
      }
      VDEV_RETURN_IF_ERROR(Check(m->barrier_flag[0] == 0, "dirty epoch"));
      std::memset(m->remote_data[s.rank()], 'a' + s.rank(), 1000);
      VDEV_RETURN_IF_ERROR(s.Barrier("written"));
      for (int i = 0; i < n; ++i) {
        const char* p = static_cast<const char*>(m->remote_data[i]);
        VDEV_RETURN_IF_ERROR(Check(p[0] == 'a' + i && p[999] == 'a' + i, "peer data"));
      }
      // Segments are unlinked as soon as everyone mapped them.
      return Check(LeftoverSegments(s.session_id()).empty(), "segment still linked");
    }));
    EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
  }
}

TEST(HostIPCMemoryTest, SizeMismatchIsReportedOnEveryWorker) {
  std::vector<WorkerResult> results = RunWorkers(3, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    return alloc->Allocate(s.rank() == 1 ? 8192 : 4096).status();
  });
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.message, AllOf(HasSubstr("worker 1 made allocation request #1 of 8192 bytes"),
                                 HasSubstr("worker 0 made allocation request #1 of 4096 bytes")));
  }
}

TEST(HostIPCMemoryTest, SizeThatOverflowsIsAnErrorOnEveryWorkerAndTheAllocatorStaysUsable) {
  // Rounded up with its barrier flags, SIZE_MAX - 100 bytes wrapped around to a ~36 KiB region.
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    for (size_t bytes : {SIZE_MAX - 100, SIZE_MAX, SIZE_MAX - 30000}) {
      absl::StatusOr<IPCMemory*> m = alloc->Allocate(bytes);
      VDEV_RETURN_IF_ERROR(Check(!m.ok() && m.status().code() == absl::StatusCode::kInvalidArgument &&
                                     absl::StrContains(m.status().message(), "overflows a 64-bit size"),
                                 absl::StrCat(bytes, " bytes: ", m.ok() ? "allocated" : m.status().ToString())));
    }
    VDEV_ASSIGN_OR_RETURN(IPCMemory * m, alloc->Allocate(4096));  // the workers are still in step
    return Check(m->size == 4096, "size");
  }));
}

TEST(HostIPCMemoryTest, OneWorkerAskingForAnOverflowingSizeFailsEveryWorkerWithoutHanging) {
  std::vector<WorkerResult> results = RunWorkers(3, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    return alloc->Allocate(s.rank() == 2 ? SIZE_MAX - 100 : 4096).status();
  });
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.message, HasSubstr("overflows a 64-bit size"));
  }
  EXPECT_THAT(results[0].message, HasSubstr("worker 2 could not allocate"));
}

TEST(HostIPCMemoryTest, SequenceMismatchIsReportedNotHung) {
  // Worker 0 allocates twice, worker 1 once and then does something else on the session.
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_RETURN_IF_ERROR(alloc->Allocate(64).status());
    if (s.rank() == 0) return alloc->Allocate(64).status();
    return s.Barrier("something-else");
  });
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.message, HasSubstr("worker 1 called something-else"));
  }
}

TEST(HostIPCMemoryTest, FreedMemoryIsPooledAlikeOnEveryWorker) {
  const std::string id = UniqueSessionId();
  ExpectAllOk(RunWorkers(3, id, [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * a, alloc->Allocate(4096));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * b, alloc->Allocate(512));
    const uint64_t seq_a = a->sequence;
    void* data_a = a->remote_data[s.rank()];
    alloc->Free(a);
    VDEV_ASSIGN_OR_RETURN(IPCMemory * c, alloc->Allocate(4096));
    VDEV_RETURN_IF_ERROR(Check(c == a && c->sequence == seq_a && c->remote_data[s.rank()] == data_a, "not reused"));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * d, alloc->Allocate(4096));
    return Check(d != a && d != b && d->sequence == 3, "new allocation");
  }));
  EXPECT_THAT(LeftoverSegments(id), ::testing::IsEmpty());
}

TEST(HostIPCMemoryTest, PoolDivergenceIsDetected) {
  std::vector<WorkerResult> results = RunWorkers(2, UniqueSessionId(), [](PeerGroup& s) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
    VDEV_ASSIGN_OR_RETURN(IPCMemory * a, alloc->Allocate(256));
    if (s.rank() == 0) alloc->Free(a);  // worker 1 forgot to free
    return alloc->Allocate(256).status();
  });
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.message, HasSubstr("(pooled #1)"));
  }
}

}  // namespace
}  // namespace vdev
