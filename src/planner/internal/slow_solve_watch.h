// SlowSolveWatch: the placement solver's progress line, printed once a solve has run a while.
#ifndef VDEV_SRC_PLANNER_INTERNAL_SLOW_SOLVE_WATCH_H_
#define VDEV_SRC_PLANNER_INTERNAL_SLOW_SOLVE_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "src/planner/placement_solver.h"

namespace vdev::planner_internal {

// Prints a progress line through `on_slow` once the solve it guards has run `after` seconds: from a
// watching thread while it runs, or, if that thread has not been scheduled by then, when it ends.
class SlowSolveWatch {
 public:
  SlowSolveWatch(const std::function<void(const PlacementProgress&)>& on_slow, PlacementProgress progress, double after)
      : on_slow_(on_slow), progress_(progress), after_(after), start_(std::chrono::steady_clock::now()) {
    if (!on_slow_) return;
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(after_), [this] { return done_; })) Report();
    });
  }
  ~SlowSolveWatch() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= after_) Report();
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Report() {  // under mutex_
    if (!reported_) on_slow_(progress_);
    reported_ = true;
  }
  const std::function<void(const PlacementProgress&)>& on_slow_;
  PlacementProgress progress_;
  double after_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool reported_ = false;
  std::thread thread_;
};

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_SLOW_SOLVE_WATCH_H_
