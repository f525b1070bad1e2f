// Checking a host executor's results: what every rank's output must hold for a plan's collective,
// from every rank's Input<T>(r, i, salt) (runtime/allreduce_test_util.h), and one execution checked
// against it. Shared by the host executor's tests and the validator's soundness test.
#ifndef VDEV_TESTS_CHANNELS_HOST_RUN_CHECK_H_
#define VDEV_TESTS_CHANNELS_HOST_RUN_CHECK_H_

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/allreduce_test_util.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/channels/channel_program.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::testing {

// What rank `rank`'s output element i must be, from everyone's vdev::testing::Input<T>(r, j, salt).
template <typename T>
T Expected(const ProgramSpec& plan, int rank, size_t i, size_t count, uint64_t salt) {
  return CollectiveOutput<T>(plan, rank, i, count,
                             [salt](int r, size_t j) { return vdev::testing::Input<T>(r, j, salt); });
}

// One execution of `count` elements a segment on `exec`, every output element checked (in place:
// the input buffer receives the output).
template <typename T>
absl::Status RunAndCheck(PeerGroup& s, HostPlanExecutor& exec, size_t count, uint64_t salt, bool in_place) {
  const ProgramSpec& plan = exec.plan();
  const size_t in_n = count * InputSegments(plan.collective, plan.world_size);
  const size_t out_n = count * OutputSegments(plan.collective, plan.world_size);
  std::vector<T> in(std::max(in_n, out_n)), out(out_n, static_cast<T>(-7));
  for (size_t i = 0; i < in_n; ++i) in[i] = vdev::testing::Input<T>(s.rank(), i, salt);
  T* dst = in_place ? in.data() : out.data();
  VDEV_RETURN_IF_ERROR(exec.Execute(in.data(), dst, count));
  for (size_t i = 0; i < out_n; ++i) {
    const T want = Expected<T>(plan, s.rank(), i, count, salt);
    if (dst[i] != want) {
      return absl::InternalError(
          absl::StrCat(plan.name, " count ", count, " salt ", salt, " element ", i, ": got ", dst[i], " want ", want));
    }
  }
  return absl::OkStatus();
}

}  // namespace vdev::channels::testing

#endif  // VDEV_TESTS_CHANNELS_HOST_RUN_CHECK_H_
