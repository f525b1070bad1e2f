// The port-channel FIFO's protocol without a GPU: host threads take tickets, wait for their slot and
// write requests exactly as the plan kernel does (cuda_executor's RunPort: fields, then seq), while
// PortFifoReader takes them in ticket order and retires them late, so producers keep finding the
// FIFO full and every slot is reused many times over.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "internal/cuda_proxy.h"

namespace vdev::channels::internal {
namespace {

uint64_t Load(const uint64_t& w) { return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_acquire); }
void Store(uint64_t& w, uint64_t v) { std::atomic_ref<uint64_t>(w).store(v, std::memory_order_release); }

// The kernel's side of one request (RunPort), with values derived from the ticket.
void Produce(PortFifo* fifo, std::atomic<uint64_t>* tickets) {
  const uint64_t ticket = tickets->fetch_add(1);
  while (ticket >= Load(fifo->done) + kPortFifoSlots) std::this_thread::yield();
  PortRequest& q = fifo->slots[ticket % kPortFifoSlots];
  Store(q.dst, 3 * ticket + 1);
  Store(q.src, 5 * ticket + 2);
  Store(q.bytes, ticket % 17);
  Store(q.semaphore, ticket % 3 == 0 ? 0 : 7 * ticket);
  Store(q.count, ticket / 2);
  Store(q.seq, ticket + 1);
}

TEST(PortFifoTest, RequestsArriveWholeAndInTicketOrderAcrossManyWraps) {
  auto fifo = std::make_unique<PortFifo>();  // zeroed, as the host-mapped FIFO is
  std::atomic<uint64_t> tickets{0};
  constexpr int kProducers = 4, kEach = 3000;  // 12,000 requests: 46 times round the slots
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) Produce(fifo.get(), &tickets);
    });
  }
  PortFifoReader reader(fifo.get());
  std::vector<uint64_t> pending;
  uint64_t expected = 0;
  while (expected < uint64_t{kProducers} * kEach) {
    PortRequest q;
    uint64_t ticket = 0;
    if (!reader.Next(&q, &ticket)) {
      // Nothing new: retire what is pending (the copies "finished"), oldest first.
      for (uint64_t t : pending) reader.Retire(t);
      pending.clear();
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(ticket, expected);
    ASSERT_EQ(q.dst, 3 * ticket + 1);
    ASSERT_EQ(q.src, 5 * ticket + 2);
    ASSERT_EQ(q.bytes, ticket % 17);
    ASSERT_EQ(q.semaphore, ticket % 3 == 0 ? 0 : 7 * ticket);
    ASSERT_EQ(q.count, ticket / 2);
    ++expected;
    pending.push_back(ticket);
    if (pending.size() == kPortFifoSlots) {  // a full FIFO: producers wait for these
      for (uint64_t t : pending) reader.Retire(t);
      pending.clear();
    }
  }
  for (uint64_t t : pending) reader.Retire(t);
  for (std::thread& t : producers) t.join();
  EXPECT_EQ(fifo->done, uint64_t{kProducers} * kEach);
}

TEST(PortFifoTest, ASlotLeftFromTheLastRoundIsNotTakenAgain) {
  auto fifo = std::make_unique<PortFifo>();
  fifo->done = kPortFifoSlots;  // tickets 0..255 served; the slots still hold their requests
  for (uint64_t t = 0; t < kPortFifoSlots; ++t) fifo->slots[t].seq = t + 1;
  PortFifoReader reader(fifo.get());
  PortRequest q;
  uint64_t ticket = 0;
  EXPECT_FALSE(reader.Next(&q, &ticket));  // slot 0 holds ticket 0's request, not ticket 256's
  fifo->slots[0].seq = kPortFifoSlots + 1;
  ASSERT_TRUE(reader.Next(&q, &ticket));
  EXPECT_EQ(ticket, uint64_t{kPortFifoSlots});
}

TEST(PortFifoTest, WorkQueuesForEveryStreamOrAClearError) {
  // The test binaries set CUDA_DEVICE_MAX_CONNECTIONS only in PlanWorld; here the variable decides.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8", 1);
  EXPECT_TRUE(CheckWorkQueues(8).ok());
  const absl::Status s = CheckWorkQueues(10);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("10 streams"), absl::string_view::npos) << s;
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 1);
  EXPECT_TRUE(CheckWorkQueues(16).ok());
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_FALSE(CheckWorkQueues(9).ok());  // the driver's default: 8
}

}  // namespace
}  // namespace vdev::channels::internal
