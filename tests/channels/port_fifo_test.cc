// The port-channel FIFO's protocol without a GPU: host threads take tickets, wait for their slot and
// write requests exactly as the plan kernel does (cuda_executor's RunPort: fields, then seq), while
// PortFifoReader takes them in ticket order and retires them late, so producers keep finding the
// FIFO full and every slot is reused many times over; a request may signal only a rank's port
// semaphore words (two ranks' here, plain host memory standing in for device memory).
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "internal/cuda_proxy.h"

namespace vdev::channels::internal {
namespace {

uint64_t Load(const uint64_t& w) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_acquire);
}
void Store(uint64_t& w, uint64_t v) { std::atomic_ref<uint64_t>(w).store(v, std::memory_order_release); }

// Two ranks' port semaphore words.
struct Semaphores {
  std::vector<uint64_t> words = std::vector<uint64_t>(2 * kPortSemaphoreWords);
  std::vector<uint64_t*> ranks() { return {words.data(), words.data() + kPortSemaphoreWords}; }
  // The word a ticket's request signals: spread over both ranks' words.
  uint64_t Address(uint64_t ticket) { return reinterpret_cast<uint64_t>(&words[(ticket * 7) % words.size()]); }
};

// The kernel's side of one request (RunPort), with values derived from the ticket.
void Produce(PortFifo* fifo, std::atomic<uint64_t>* tickets, Semaphores* semaphores) {
  const uint64_t ticket = tickets->fetch_add(1);
  while (ticket >= Load(fifo->done) + kPortFifoSlots) std::this_thread::yield();
  PortRequest& q = fifo->slots[ticket % kPortFifoSlots];
  Store(q.dst, 3 * ticket + 1);
  Store(q.src, 5 * ticket + 2);
  Store(q.bytes, ticket % 17);
  Store(q.semaphore, ticket % 3 == 0 ? 0 : semaphores->Address(ticket));
  Store(q.count, ticket / 2);
  Store(q.seq, ticket + 1);
}

TEST(PortFifoTest, RequestsArriveWholeAndInTicketOrderAcrossManyWraps) {
  auto fifo = std::make_unique<PortFifo>();  // zeroed, as the host-mapped FIFO is
  Semaphores semaphores;
  std::atomic<uint64_t> tickets{0};
  constexpr int kProducers = 4, kEach = 3000;  // 12,000 requests: 46 times round the slots
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) Produce(fifo.get(), &tickets, &semaphores);
    });
  }
  PortFifoReader reader(fifo.get(), semaphores.ranks());
  std::vector<std::pair<PortRequest, uint64_t>> pending;
  // Retires what is pending (the copies "finished"), oldest first.
  auto retire = [&] {
    for (const auto& [q, t] : pending) {
      reader.Retire(t);
      ASSERT_EQ(Load(fifo->done), t + 1);
    }
    pending.clear();
  };
  uint64_t expected = 0;
  while (expected < uint64_t{kProducers} * kEach) {
    PortRequest q;
    uint64_t ticket = 0;
    const absl::StatusOr<bool> next = reader.Next(&q, &ticket);
    ASSERT_TRUE(next.ok()) << next.status();
    if (!*next) {
      retire();
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(ticket, expected);
    ASSERT_EQ(q.dst, 3 * ticket + 1);
    ASSERT_EQ(q.src, 5 * ticket + 2);
    ASSERT_EQ(q.bytes, ticket % 17);
    ASSERT_EQ(q.semaphore, ticket % 3 == 0 ? 0 : semaphores.Address(ticket));
    ASSERT_EQ(q.count, ticket / 2);
    ++expected;
    pending.push_back({q, ticket});
    if (pending.size() == kPortFifoSlots) retire();  // a full FIFO: producers wait for these
  }
  retire();
  for (std::thread& t : producers) t.join();
  EXPECT_EQ(fifo->done, uint64_t{kProducers} * kEach);
}

TEST(PortFifoTest, ARequestSignallingOutsideEveryRanksSemaphoresIsAnError) {
  auto fifo = std::make_unique<PortFifo>();
  Semaphores semaphores;
  PortFifoReader reader(fifo.get(), semaphores.ranks());
  uint64_t stray = 0;
  // One word past rank 1's last, a misaligned one inside rank 0's, and one outside altogether.
  const uint64_t past = reinterpret_cast<uint64_t>(semaphores.words.data() + 2 * kPortSemaphoreWords);
  for (const uint64_t address :
       {past, reinterpret_cast<uint64_t>(semaphores.words.data()) + 4, reinterpret_cast<uint64_t>(&stray)}) {
    fifo->slots[0] = PortRequest{.semaphore = address, .count = 1, .seq = 1};
    PortRequest q;
    uint64_t ticket = 0;
    const absl::StatusOr<bool> next = reader.Next(&q, &ticket);
    ASSERT_FALSE(next.ok());
    EXPECT_NE(next.status().message().find("not a rank's port semaphore"), absl::string_view::npos) << next.status();
  }
  fifo->slots[0].semaphore = reinterpret_cast<uint64_t>(&semaphores.words[kPortSemaphoreWords + 3]);
  PortRequest q;
  uint64_t ticket = 0;
  const absl::StatusOr<bool> next = reader.Next(&q, &ticket);
  ASSERT_TRUE(next.ok() && *next) << next.status();
  EXPECT_EQ(q.semaphore, reinterpret_cast<uint64_t>(&semaphores.words[kPortSemaphoreWords + 3]));
}

TEST(PortFifoTest, ASlotLeftFromTheLastRoundIsNotTakenAgain) {
  auto fifo = std::make_unique<PortFifo>();
  fifo->done = kPortFifoSlots;  // tickets 0..255 served; the slots still hold their requests
  for (uint64_t t = 0; t < kPortFifoSlots; ++t) fifo->slots[t].seq = t + 1;
  PortFifoReader reader(fifo.get(), {});
  PortRequest q;
  uint64_t ticket = 0;
  EXPECT_FALSE(*reader.Next(&q, &ticket));  // slot 0 holds ticket 0's request, not ticket 256's
  fifo->slots[0].seq = kPortFifoSlots + 1;
  ASSERT_TRUE(*reader.Next(&q, &ticket));
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
