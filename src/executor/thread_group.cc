// ThreadGroup (vdev/executor/executor.h): workers as threads of one process, meeting in memory.
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "vdev/executor/executor.h"

namespace vdev {

// Two phases per call: every worker posts its input, the last one to arrive reduces into every
// worker's output, and all leave together; `generation` tells calls apart.
struct ThreadGroup::State {
  explicit State(int n) : world_size(n), inputs(n), outputs(n) {}
  const int world_size;
  absl::Mutex mutex;
  int arrived ABSL_GUARDED_BY(mutex) = 0;
  uint64_t generation ABSL_GUARDED_BY(mutex) = 0;
  absl::Status result ABSL_GUARDED_BY(mutex);
  absl::Status aborted ABSL_GUARDED_BY(mutex);
  std::vector<TensorRef> inputs ABSL_GUARDED_BY(mutex);
  std::vector<TensorRef> outputs ABSL_GUARDED_BY(mutex);
};

ThreadGroup::ThreadGroup(int world_size) : state_(std::make_unique<State>(world_size)) {}
ThreadGroup::~ThreadGroup() = default;
int ThreadGroup::world_size() const { return state_->world_size; }

absl::Status ThreadGroup::AllReduce(int rank, const TensorRef& in, const TensorRef& out, ReduceOp op) {
  State& s = *state_;
  absl::MutexLock lock(&s.mutex);
  if (!s.aborted.ok()) return s.aborted;
  const uint64_t generation = s.generation;
  s.inputs[rank] = in;
  s.outputs[rank] = out;
  if (++s.arrived == s.world_size) {
    std::vector<const void*> data;
    absl::Status status;
    for (const TensorRef& t : s.inputs) {
      if (t.dtype != in.dtype || t.NumElements() != in.NumElements())
        status = absl::InvalidArgumentError("workers all-reduce tensors of different types");
      data.push_back(t.data);
    }
    // Into a scratch first: an output may be some worker's input.
    std::vector<std::byte> sum(static_cast<size_t>(in.NumBytes()));
    if (status.ok()) status = ReduceInRankOrder(data, sum.data(), in.NumElements(), in.dtype, op);
    if (status.ok())
      for (const TensorRef& o : s.outputs) std::memcpy(o.data, sum.data(), sum.size());
    s.result = status;
    s.arrived = 0;
    ++s.generation;
    return status;
  }
  std::pair<State*, uint64_t> waiting(&s, generation);
  s.mutex.Await(absl::Condition(
      +[](std::pair<State*, uint64_t>* p)
           ABSL_NO_THREAD_SAFETY_ANALYSIS { return p->first->generation != p->second || !p->first->aborted.ok(); },
      &waiting));
  return s.generation != generation ? s.result : s.aborted;
}

void ThreadGroup::Abort(const absl::Status& why) {
  absl::MutexLock lock(&state_->mutex);
  if (state_->aborted.ok()) state_->aborted = why.ok() ? absl::AbortedError("a worker stopped") : why;
}

}  // namespace vdev
