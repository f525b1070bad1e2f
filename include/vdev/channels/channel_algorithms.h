// Collectives written in the channel language (vdev/channels/channel_program.h), shipped as execution plans
// for any world size 1..8, and the `plan:NAME` strategy names that select them.
//
//   one_shot        all-reduce: entry barrier, every rank sums all inputs read from the peers in
//                   rank order (get + reduce), exit barrier (the peers may rewrite their inputs).
//   one_shot_push   all-reduce: the input into every peer's scratch + signal, wait, sum in rank order
//                   (the hand-written one-shot's data path; double-buffered scratch, no exit barrier).
//   two_shot        all-reduce: reduce-scatter (put chunk q to rank q's scratch + signal, sum in rank
//                   order), then all-gather of the sums (put into every output + signal).
//   one_shot_ll     all-reduce: LL packets of the input to every peer's scratch, sum on arrival; no
//                   signal at all (the packets' flags change with every execution).
//   reduce_scatter  reduce-scatter: segment q of every input to rank q's scratch + signal, summed.
//   all_gather      all-gather: the input to every peer's scratch + signal, copied into the output.
//   all_gather_port all-gather through port channels (the proxy thread's copies, put_with_signal).
//   broadcast       broadcast from rank 0: the root's input to every scratch + signal; receivers copy
//                   it out and acknowledge (so the root's next execution cannot overwrite it early).
//
// Example:
//   VDEV_ASSIGN_OR_RETURN(std::string name, PlanNameFromStrategy("plan:two_shot"));
//   VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlan(name, 4));
#ifndef VDEV_CHANNEL_ALGORITHMS_H_
#define VDEV_CHANNEL_ALGORITHMS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels {

// The shipped plans' names, in the order above.
std::vector<std::string> ShippedPlanNames();

// The plan `name` for `world_size` ranks, built and validated; NotFound for an unknown name.
absl::StatusOr<ProgramSpec> ShippedPlan(absl::string_view name, int world_size);

// "plan:NAME" -> NAME, for NAME made of [a-z0-9_-]; InvalidArgument otherwise. Says nothing about
// whether NAME is shipped (a plan may also come from a file).
absl::StatusOr<std::string> PlanNameFromStrategy(absl::string_view strategy);
// The shipped plan that `strategy` ("plan:NAME") names, for `world_size` ranks: PlanNameFromStrategy,
// then ShippedPlan. A strategy says how an all-reduce runs: a plan of another collective is
// InvalidArgument (run as an all-reduce, it would give wrong sums without a word).
absl::StatusOr<ProgramSpec> ShippedPlanForStrategy(absl::string_view strategy, int world_size);

}  // namespace vdev::channels

#endif  // VDEV_CHANNEL_ALGORITHMS_H_
