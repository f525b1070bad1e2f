// The threaded back end: one thread per worker, each with an inbox; one outbox for all replies, so
// the controller can wait for one worker while hearing of another's failure.
#include <deque>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "internal/transport.h"

namespace vdev::internal {
namespace {

// Shared with the worker threads (which outlive the transport when abandoned by Stop).
struct Mailboxes {
  explicit Mailboxes(int n) : inboxes(n), finished(n, false) {}
  absl::Mutex mu;
  std::vector<std::deque<std::string>> inboxes ABSL_GUARDED_BY(mu);
  std::deque<Incoming> outbox ABSL_GUARDED_BY(mu);
  std::vector<bool> finished ABSL_GUARDED_BY(mu);
};

void RunCommands(Mailboxes* boxes, WorkerIdentity identity) {
  Worker worker(identity, nullptr);
  std::deque<std::string>& inbox = boxes->inboxes[identity.worker_id];
  bool running = true;
  while (running) {
    std::deque<std::string> batch;
    {
      absl::MutexLock lock(&boxes->mu);
      boxes->mu.Await(absl::Condition(
          +[](std::deque<std::string>* q) { return !q->empty(); }, &inbox));
      batch.swap(inbox);
    }
    for (std::string& message : batch) {
      std::string reply;
      running = worker.Handle(message, &reply);
      if (!reply.empty()) {
        absl::MutexLock lock(&boxes->mu);
        boxes->outbox.push_back(Incoming{identity.worker_id, false, std::move(reply)});
      }
      if (!running) break;
    }
    // Everything received has run: say so before waiting for more (what SyncWorker waits for).
    if (std::string ack = worker.TakeAck(); running && !ack.empty()) {
      absl::MutexLock lock(&boxes->mu);
      boxes->outbox.push_back(Incoming{identity.worker_id, false, std::move(ack)});
    }
  }
}

void RunWorkerThread(std::shared_ptr<Mailboxes> boxes, WorkerIdentity identity) {
  // The worker (its IPC memory and session) is gone before the thread counts as finished.
  RunCommands(boxes.get(), identity);
  absl::MutexLock lock(&boxes->mu);
  boxes->finished[identity.worker_id] = true;
}

class ThreadedTransport final : public Transport {
 public:
  ThreadedTransport(int n, int groups) : boxes_(std::make_shared<Mailboxes>(n)) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back(RunWorkerThread, boxes_, WorkerIdentity{i, n, groups});
    }
  }
  ~ThreadedTransport() override { Stop(absl::Now()); }

  absl::Status Send(int worker, std::vector<std::string> messages, absl::Time, absl::string_view tail) override {
    messages.back().append(tail.data(), tail.size());
    absl::MutexLock lock(&boxes_->mu);
    if (boxes_->finished[worker]) return absl::UnavailableError("the worker thread has ended");
    for (std::string& m : messages) boxes_->inboxes[worker].push_back(std::move(m));
    return absl::OkStatus();
  }

  std::optional<Incoming> Receive(absl::Time deadline) override {
    absl::MutexLock lock(&boxes_->mu);
    boxes_->mu.AwaitWithDeadline(absl::Condition(
                                     +[](std::deque<Incoming>* q) { return !q->empty(); }, &boxes_->outbox),
                                 deadline);
    if (boxes_->outbox.empty()) return std::nullopt;
    Incoming next = std::move(boxes_->outbox.front());
    boxes_->outbox.pop_front();
    return next;
  }

  void Stop(absl::Time deadline) override {
    if (threads_.empty()) return;
    {
      absl::MutexLock lock(&boxes_->mu);
      boxes_->mu.AwaitWithDeadline(absl::Condition(
                                       +[](std::vector<bool>* f) {
                                         for (bool done : *f) {
                                           if (!done) return false;
                                         }
                                         return true;
                                       },
                                       &boxes_->finished),
                                   deadline);
    }
    for (size_t i = 0; i < threads_.size(); ++i) {
      bool finished;
      {
        absl::MutexLock lock(&boxes_->mu);
        finished = boxes_->finished[i];
      }
      // A thread still inside a worker function cannot be stopped: it is left to finish on its
      // own, holding only the mailboxes, and its later commands are never sent.
      if (finished) {
        threads_[i].join();
      } else {
        threads_[i].detach();
      }
    }
    threads_.clear();
  }

  std::vector<pid_t> pids() const override { return {}; }

 private:
  std::shared_ptr<Mailboxes> boxes_;
  std::vector<std::thread> threads_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transport>> StartThreads(int num_workers, int num_groups) {
  return std::unique_ptr<Transport>(new ThreadedTransport(num_workers, num_groups));
}

}  // namespace vdev::internal
