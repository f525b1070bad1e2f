// The validator's soundness against the host executor: programs made by mutating the shipped plans
// (an op dropped, duplicated, moved past its neighbour, given another data sync or made relaxed)
// are validated, and every one the validator accepts must run on the host executor — real worker
// processes, three executions at ragged sizes — to exactly its collective's result without a wait
// timing out. A mutant that validates but deadlocks or computes something else is a validator bug.
// Deterministic (a fixed seed); the mutants it rejects are most of them and cost only a validation.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "channels/host_run_check.h"
#include "gtest/gtest.h"
#include "runtime/worker_harness.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

using testing::RunAndCheck;
using vdev::testing::HarnessOptions;
using vdev::testing::RunWorkers;
using vdev::testing::UniqueSessionId;

// One random edit of one op of `plan`, described in `what`; false when the drawn op cannot take it.
bool Mutate(ProgramSpec& plan, std::mt19937& rng, std::string* what) {
  const int rank = std::uniform_int_distribution<int>(0, plan.world_size - 1)(rng);
  std::vector<ThreadBlock>& tbs = plan.ranks[rank];
  if (tbs.empty()) return false;
  const int tb = std::uniform_int_distribution<int>(0, static_cast<int>(tbs.size()) - 1)(rng);
  std::vector<Op>& ops = tbs[tb].ops;
  if (ops.empty()) return false;
  const int i = std::uniform_int_distribution<int>(0, static_cast<int>(ops.size()) - 1)(rng);
  const int kind = std::uniform_int_distribution<int>(0, 4)(rng);
  *what = absl::StrCat("rank ", rank, " tb ", tb, " op ", i, " (", OpName(ops[i].kind), ") ");
  switch (kind) {
    case 0:
      ops.erase(ops.begin() + i);
      absl::StrAppend(what, "dropped");
      return true;
    case 1:
      ops.insert(ops.begin() + i, ops[i]);
      absl::StrAppend(what, "duplicated");
      return true;
    case 2:
      if (i + 1 >= static_cast<int>(ops.size())) return false;
      std::swap(ops[i], ops[i + 1]);
      absl::StrAppend(what, "moved after the next op");
      return true;
    case 3: {
      const Sync sync = static_cast<Sync>(std::uniform_int_distribution<int>(0, 3)(rng));
      if (sync == ops[i].sync) return false;
      ops[i].sync = sync;
      absl::StrAppend(what, "given sync ", SyncName(sync));
      return true;
    }
    default:
      if (ops[i].kind != OpKind::kSignal && ops[i].kind != OpKind::kWait)
        return false;  // port ops have no relaxed form
      ops[i].relaxed = !ops[i].relaxed;
      absl::StrAppend(what, ops[i].relaxed ? "made relaxed" : "made ordering");
      return true;
  }
}

TEST(ValidatorSoundnessTest, EveryMutantOfAShippedPlanThatValidatesRunsExactlyOnTheHostExecutor) {
  std::mt19937 rng(20261126);
  HarnessOptions options;
  options.timeout = absl::Seconds(30);  // a deadlock the validator let through fails in 30 s
  int mutants = 0, accepted = 0;
  for (int round = 0; round < 30; ++round) {
    for (int world : {2, 3, 4}) {
      for (const std::string& name : ShippedPlanNames()) {
        absl::StatusOr<ProgramSpec> shipped = ShippedPlan(name, world);
        ASSERT_TRUE(shipped.ok()) << shipped.status();
        ProgramSpec plan = *shipped;
        std::string what;
        if (!Mutate(plan, rng, &what)) continue;
        ++mutants;
        if (plan == *shipped || !ValidateProgram(plan).ok()) continue;
        ++accepted;
        SCOPED_TRACE(absl::StrCat(name, " world ", world, ": ", what));
        vdev::testing::ExpectAllOk(RunWorkers(
            world, UniqueSessionId(),
            [&plan](PeerGroup& s) -> absl::Status {
              VDEV_ASSIGN_OR_RETURN(std::unique_ptr<IPCAllocator> alloc, CreateHostIPCAllocator(&s));
              VDEV_ASSIGN_OR_RETURN(auto exec, HostPlanExecutor::Create(s, *alloc, plan, 64, DataType::kI32));
              for (size_t count : {size_t{1}, size_t{7}, size_t{33}}) {
                VDEV_RETURN_IF_ERROR(RunAndCheck<int32_t>(s, *exec, count, count, false));
              }
              return absl::OkStatus();
            },
            options));
      }
    }
  }
  // The mutations must reach the executor at all for the test to say anything (592 mutants, 174
  // accepted with this seed). With the simulation's deadlock verdict switched off, mutants that
  // deadlock (one_shot_ll with a put_packets moved after the reduce) validate, and this fails.
  EXPECT_GT(mutants, 300);
  EXPECT_GT(accepted, 50) << "of " << mutants << " mutants";
  std::printf("%d mutants, %d accepted by the validator and run\n", mutants, accepted);
}

}  // namespace
}  // namespace vdev::channels
