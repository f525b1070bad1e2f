// How UploadedPlan::Upload flattens a plan for the CUDA kernel (FlattenPlan; no GPU needed): which
// ops run as one step, the registers' limit on a fused run, and the semaphore counts.
#include "internal/cuda_plan.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "vdev/channels/channel_algorithms.h"

namespace vdev::channels::internal {
namespace {

FlatPlan Flat(const ProgramSpec& plan, int rank = 0) {
  absl::StatusOr<FlatPlan> flat = FlattenPlan(plan, rank);
  EXPECT_TRUE(flat.ok()) << flat.status();
  return flat.ok() ? *std::move(flat) : FlatPlan();
}

// `field` of the first flattened op of shipped plan `name` (rank 0) once rank 0's op `op` of thread
// block 0 carries data sync `sync`.
template <typename Field>
int FirstOpWithSync(const char* name, int world, int op, Sync sync, Field field) {
  ProgramSpec plan = *ShippedPlan(name, world);
  plan.ranks[0][0].ops[op].sync = sync;
  return field(Flat(plan).ops[0]);
}

// The batch of every op of thread block 0, in order.
std::vector<int> Batches(const FlatPlan& flat) {
  std::vector<int> b;
  for (int i = flat.tb_begin[0]; i < flat.tb_begin[1]; ++i) b.push_back(flat.ops[i].batch);
  return b;
}

TEST(FlattenPlanTest, PutsOfOneSourceToEveryPeerRunAsOneStep) {
  // one_shot_ll on 8 ranks: 7 put_packets of the input, then the 8-source reduce.
  const FlatPlan flat = Flat(*ShippedPlan("one_shot_ll", 8));
  EXPECT_EQ(flat.max_srcs, 8);
  EXPECT_EQ(Batches(flat), (std::vector<int>{7, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(flat.ops[0].kind, kDevPutPackets);
  EXPECT_EQ(flat.ops[7].kind, kDevReduce);
  // one_shot_push on 4 ranks: 3 puts, 3 signals, 3 waits (each a step), the reduce.
  EXPECT_EQ(Batches(Flat(*ShippedPlan("one_shot_push", 4))), (std::vector<int>{3, 0, 0, 3, 0, 0, 3, 0, 0, 1}));
}

TEST(FlattenPlanTest, AReduceOfThePacketsSourceRunsInThePutsStep) {
  // one_shot_ll: the reduce sums the input the put_packets run sends (and packets): one step.
  for (int world : {2, 5, 8}) {
    const FlatPlan flat = Flat(*ShippedPlan("one_shot_ll", world));
    EXPECT_EQ(flat.ops[0].then_reduce, 1) << world;
    EXPECT_EQ(flat.ops[world - 1].kind, kDevReduce);
    EXPECT_EQ(flat.ops[world - 1].then_reduce, 0);
  }
  // A data sync between them, or a reduce of another source, keeps two steps.
  auto then_reduce = [](const DeviceOp& op) { return op.then_reduce; };
  EXPECT_EQ(FirstOpWithSync("one_shot_ll", 3, 2, Sync::kBefore, then_reduce), 0);
  EXPECT_EQ(FirstOpWithSync("one_shot_ll", 3, 1, Sync::kAfter, then_reduce), 0);
  ProgramSpec plan = *ShippedPlan("one_shot_ll", 3);
  for (ChunkRef& c : plan.ranks[0][0].ops[2].srcs) {
    if (!c.packets) c.buffer = BufferKind::kOutput;
  }
  EXPECT_EQ(Flat(plan).ops[0].then_reduce, 0);
  // Memory-channel puts never take a reduce along.
  for (const DeviceOp& op : Flat(*ShippedPlan("one_shot_push", 4)).ops) EXPECT_EQ(op.then_reduce, 0);
}

TEST(FlattenPlanTest, ASignalRunTakesTheWaitRunAfterIt) {
  // one_shot on 4 ranks: (3 signals, 3 waits) twice around the reduce: each pair one step.
  const FlatPlan flat = Flat(*ShippedPlan("one_shot", 4));
  ASSERT_EQ(flat.ops.size(), 13u);
  for (int i : {0, 7}) {
    EXPECT_EQ(flat.ops[i].kind, kDevSignal);
    EXPECT_EQ(flat.ops[i].then_wait, 1) << i;
    EXPECT_EQ(flat.ops[i + 3].kind, kDevWait);
    EXPECT_EQ(flat.ops[i + 3].batch, 3);
  }
  for (const DeviceOp& op : flat.ops) {
    if (op.kind != kDevSignal) EXPECT_EQ(op.then_wait, 0);
  }
  // A data sync between the runs keeps two steps.
  auto then_wait = [](const DeviceOp& op) { return op.then_wait; };
  EXPECT_EQ(FirstOpWithSync("one_shot", 4, 3, Sync::kBefore, then_wait), 0);
  EXPECT_EQ(FirstOpWithSync("one_shot", 4, 2, Sync::kAfter, then_wait), 0);
}

TEST(FlattenPlanTest, ADataSyncOrAnotherSourceEndsARun) {
  ProgramSpec plan = *ShippedPlan("one_shot_push", 4);
  plan.ranks[0][0].ops[1].sync = Sync::kBefore;  // the second put waits for the block's first
  EXPECT_EQ(Batches(Flat(plan)), (std::vector<int>{1, 2, 0, 3, 0, 0, 3, 0, 0, 1}));
  plan = *ShippedPlan("one_shot_push", 4);
  plan.ranks[0][0].ops[0].sync = Sync::kAfter;
  EXPECT_EQ(Batches(Flat(plan)), (std::vector<int>{1, 2, 0, 3, 0, 0, 3, 0, 0, 1}));
  // two_shot: every put sends another chunk of the input, so none is fused.
  const FlatPlan two_shot = Flat(*ShippedPlan("two_shot", 3));
  EXPECT_EQ(two_shot.ops[0].kind, kDevPut);
  EXPECT_EQ(two_shot.ops[0].batch, 1);
  EXPECT_EQ(two_shot.ops[1].batch, 1);
}

TEST(FlattenPlanTest, AFusedRunIsNoLongerThanTheKernelsSources) {
  // all_gather on 8 ranks has no reduce (one source at most): the 2-source kernel, whose fused runs
  // hold 2 destinations in registers.
  const FlatPlan flat = Flat(*ShippedPlan("all_gather", 8));
  EXPECT_EQ(flat.max_srcs, 1);
  EXPECT_EQ(KernelSources(flat.max_srcs), 2);
  std::vector<int> puts;
  for (int i = flat.tb_begin[0]; i < flat.tb_begin[1]; ++i) {
    if (flat.ops[i].kind == kDevPut && flat.ops[i].batch > 0) puts.push_back(flat.ops[i].batch);
  }
  EXPECT_EQ(puts, (std::vector<int>{2, 2, 2, 1}));
}

TEST(FlattenPlanTest, SemaphoreCountsMatchTheHostExecutors) {
  // one_shot on 3 ranks: two barriers, so each semaphore is signalled and waited for twice per
  // execution; the second barrier's ops are the 2nd of 2.
  const FlatPlan flat = Flat(*ShippedPlan("one_shot", 3), 1);
  std::vector<std::pair<int, int>> signals, waits;
  for (const DeviceOp& op : flat.ops) {
    if (op.kind == kDevSignal) signals.push_back({static_cast<int>(op.k), static_cast<int>(op.per_call)});
    if (op.kind == kDevWait) waits.push_back({static_cast<int>(op.k), static_cast<int>(op.per_call)});
  }
  const std::vector<std::pair<int, int>> want = {{1, 2}, {1, 2}, {2, 2}, {2, 2}};
  EXPECT_EQ(signals, want);
  EXPECT_EQ(waits, want);
  EXPECT_NE(flat.ops[0].peer, 1);  // rank 1 signals its peers 0 and 2
}

TEST(FlattenPlanTest, PortChannelsNeedTheProxyAndWaitOnPortSemaphores) {
  const FlatPlan flat = Flat(*ShippedPlan("all_gather_port", 3));
  EXPECT_TRUE(flat.uses_ports);
  int port_puts = 0, waits = 0;
  for (const DeviceOp& op : flat.ops) {
    if (op.kind == kDevPortPut) {
      ++port_puts;
      EXPECT_EQ(op.port, kDevWithSignal);
      EXPECT_EQ(op.k, 1u);
      EXPECT_EQ(op.per_call, 1u);
    }
    if (op.kind == kDevWait) {
      ++waits;
      EXPECT_EQ(op.port, kDevPortSemaphore);
    }
  }
  EXPECT_EQ(port_puts, 2);
  EXPECT_EQ(waits, 2);
  EXPECT_FALSE(Flat(*ShippedPlan("all_gather", 3)).uses_ports);
}

TEST(FlattenPlanTest, EveryPortWaitHasTheSignalOfItsPeersProxy) {
  // A wait of rank r for peer q (tag, k-th of per_call) is met only by rank q's port signal to r
  // with the same tag, place and count per execution: the proxy stores (e - 1) * per_call + k.
  for (int world = 2; world <= 8; ++world) {
    const ProgramSpec plan = *ShippedPlan("all_gather_port", world);
    std::vector<FlatPlan> flat;
    for (int r = 0; r < world; ++r) flat.push_back(Flat(plan, r));
    for (int r = 0; r < world; ++r) {
      int waits = 0;
      for (const DeviceOp& w : flat[r].ops) {
        if (w.kind != kDevWait) continue;
        EXPECT_EQ(w.port, kDevPortSemaphore);
        ++waits;
        int matches = 0;
        for (const DeviceOp& s : flat[w.peer].ops) {
          matches += s.kind == kDevPortPut && (s.port & kDevWithSignal) && s.peer == r && s.tag == w.tag &&
                     s.k == w.k && s.per_call == w.per_call;
        }
        EXPECT_EQ(matches, 1) << "world " << world << " rank " << r << " wait for " << w.peer;
      }
      EXPECT_EQ(waits, world - 1);
    }
  }
}

TEST(FlattenPlanTest, ALocalReduceOfPacketsNamesARankThatWritesThem) {
  // The peer a timed-out packet poll names must be one whose put_packets reach this rank.
  for (const std::string& name : ShippedPlanNames()) {
    for (int world : {2, 3, 4, 8}) {
      absl::StatusOr<ProgramSpec> plan = ShippedPlan(name, world);
      if (!plan.ok()) continue;
      for (int r = 0; r < world; ++r) {
        for (const DeviceOp& op : Flat(*plan, r).ops) {
          if (op.kind != kDevReduce || op.packets == 0) continue;
          ASSERT_NE(op.peer, r) << name << " world " << world;
          const FlatPlan writer = Flat(*plan, op.peer);
          EXPECT_TRUE(std::any_of(writer.ops.begin(), writer.ops.end(),
                                  [&](const DeviceOp& w) {
                                    return (w.kind == kDevPutPackets || w.kind == kDevReadPutPackets) &&
                                           w.dst.rank == r;
                                  }))
              << name << " world " << world << ": rank " << r << " names rank " << op.peer;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vdev::channels::internal
