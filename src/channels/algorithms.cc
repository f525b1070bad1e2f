// The shipped collectives, written in the channel language (descriptions in vdev/channels/channel_algorithms.h).
// Every sum runs in rank order 0..N-1 wherever it is taken, so all ranks get bitwise-equal results.
#include <functional>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/channels/channel_algorithms.h"

namespace vdev::channels {
namespace {

// Channels between every ordered pair of ranks, tag 0: ch[r].at(q) is rank r's channel to q.
template <typename Channel>
using Pairs = std::vector<std::map<int, Channel>>;

template <typename Channel, typename Add>
Pairs<Channel> AllPairs(const Program& p, Add add) {
  const int n = p.world_size();
  Pairs<Channel> ch(n);
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (q != r) ch[r].emplace(q, add(q, r));
    }
  }
  return ch;
}

Pairs<MemoryChannel> MemoryPairs(Program& p) {
  return AllPairs<MemoryChannel>(p, [&p](int dst, int src) { return p.AddMemoryChannel(dst, src); });
}

// Rank r signals every peer with one data sync before the first signal (the thread block's earlier
// ops are then done), and waits for every peer with one after the last wait; the CUDA executor runs
// such a run of signals or waits in parallel, one thread each.
void SignalAll(Pairs<MemoryChannel>& ch, int r) {
  bool first = true;
  for (auto& [q, c] : ch[r]) {
    c.Signal(0, first ? Sync::kBefore : Sync::kNone);
    first = false;
  }
}
void WaitAll(Pairs<MemoryChannel>& ch, int r) {
  size_t i = 0;
  for (auto& [q, c] : ch[r]) c.Wait(0, ++i == ch[r].size() ? Sync::kAfter : Sync::kNone);
}
void Barrier(Pairs<MemoryChannel>& ch, int r) {
  SignalAll(ch, r);
  WaitAll(ch, r);
}

// `out` (on its rank, thread block 0) as the sum over every rank q of `source(q)`, in rank order.
template <typename Source>
void ReduceOverRanks(Program& p, int n, ChunkRef out, Source source) {
  std::vector<ChunkRef> sources;
  for (int q = 0; q < n; ++q) sources.push_back(source(q));
  p.Reduce(0, out, std::move(sources));
}

absl::StatusOr<ProgramSpec> OneShot(int n) {
  Program p("one_shot", Collective::kAllReduce, n);
  auto ch = MemoryPairs(p);
  for (int r = 0; r < n; ++r) {
    Barrier(ch, r);
    ReduceOverRanks(p, n, p.Output(r, 0), [&](int q) { return p.Input(q, 0); });
    Barrier(ch, r);
  }
  return std::move(p).Build();
}

// Rank r puts chunk `chunk_for(q)` of its input into rank q's scratch chunk r, and sums its own
// chunk `chunk_for(r)` from every rank into its output. The scratch halves alternate, so no exit
// barrier is needed (a rank reaches execution e + 2 only after every peer finished e).
template <typename ChunkFor>
absl::StatusOr<ProgramSpec> PushThenReduce(absl::string_view name, Collective collective, int n, ChunkFor chunk_for) {
  Program p(std::string(name), collective, n, 1, /*scratch_chunks=*/n);
  auto ch = MemoryPairs(p);
  for (int r = 0; r < n; ++r) {
    for (auto& [q, c] : ch[r]) c.Put(0, p.Scratch(q, r), p.Input(r, chunk_for(q)));
    Barrier(ch, r);
    ReduceOverRanks(p, n, p.Output(r, 0), [&](int q) { return q == r ? p.Input(r, chunk_for(r)) : p.Scratch(r, q); });
  }
  return std::move(p).Build();
}

absl::StatusOr<ProgramSpec> OneShotPush(int n) {
  return PushThenReduce("one_shot_push", Collective::kAllReduce, n, [](int) { return 0; });
}

absl::StatusOr<ProgramSpec> TwoShot(int n) {
  // Chunk q of every input is summed by rank q; rank q's scratch segment s holds rank s's chunk q.
  Program p("two_shot", Collective::kAllReduce, n, /*chunks_per_segment=*/n, /*scratch_chunks=*/n * n);
  auto ch = MemoryPairs(p);
  for (int r = 0; r < n; ++r) {
    for (auto& [q, c] : ch[r]) c.Put(0, p.Scratch(q, r * n + q), p.Input(r, q));
    Barrier(ch, r);
    ReduceOverRanks(p, n, p.Output(r, r), [&](int q) { return q == r ? p.Input(r, r) : p.Scratch(r, q * n + r); });
    bool first = true;  // one sync after the sum, before the first put reads it
    for (auto& [q, c] : ch[r]) {
      c.Put(0, p.Output(q, r), p.Output(r, r), first ? Sync::kBefore : Sync::kNone);
      first = false;
    }
    Barrier(ch, r);
  }
  return std::move(p).Build();
}

absl::StatusOr<ProgramSpec> OneShotLL(int n) {
  Program p("one_shot_ll", Collective::kAllReduce, n, 1, /*scratch_chunks=*/n);
  auto ch = MemoryPairs(p);
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (q != r) ch[r].at(q).PutPackets(0, p.Scratch(q, r), p.Input(r, 0));
    }
    ReduceOverRanks(p, n, p.Output(r, 0), [&](int q) { return q == r ? p.Input(r, 0) : p.Scratch(r, q).AsPackets(); });
  }
  return std::move(p).Build();
}

absl::StatusOr<ProgramSpec> ReduceScatter(int n) {
  return PushThenReduce("reduce_scatter", Collective::kReduceScatter, n, [](int rank) { return rank; });
}

absl::StatusOr<ProgramSpec> AllGather(int n, bool port) {
  Program p(port ? "all_gather_port" : "all_gather", Collective::kAllGather, n, 1, /*scratch_chunks=*/n);
  Pairs<MemoryChannel> mem;
  Pairs<PortChannel> ports;
  if (port) {
    ports = AllPairs<PortChannel>(p, [&p](int dst, int src) { return p.AddPortChannel(dst, src); });
  } else {
    mem = MemoryPairs(p);
  }
  for (int r = 0; r < n; ++r) {
    p.Copy(0, p.Output(r, r), p.Input(r, 0));
    if (port) {
      for (auto& [q, c] : ports[r]) c.PutWithSignal(0, p.Scratch(q, r), p.Input(r, 0));
      for (auto& [q, c] : ports[r]) c.Wait(0);
    } else {
      for (auto& [q, c] : mem[r]) c.Put(0, p.Scratch(q, r), p.Input(r, 0));
      Barrier(mem, r);
    }
    for (int q = 0; q < n; ++q) {
      if (q != r) p.Copy(0, p.Output(r, q), p.Scratch(r, q));
    }
  }
  return std::move(p).Build();
}

absl::StatusOr<ProgramSpec> Broadcast(int n) {
  const int root = 0;
  Program p("broadcast", Collective::kBroadcast, n, 1, /*scratch_chunks=*/1, root);
  auto ch = MemoryPairs(p);
  p.Copy(0, p.Output(root, 0), p.Input(root, 0));
  for (auto& [q, c] : ch[root]) c.Put(0, p.Scratch(q, 0), p.Input(root, 0));
  SignalAll(ch, root);
  for (int q = 0; q < n; ++q) {
    if (q == root) continue;
    ch[q].at(root).Wait(0);
    p.Copy(0, p.Output(q, 0), p.Scratch(q, 0));
    ch[q].at(root).Signal(0, Sync::kBefore);  // the acknowledgement: the scratch may be rewritten
  }
  WaitAll(ch, root);
  return std::move(p).Build();
}

}  // namespace

std::vector<std::string> ShippedPlanNames() {
  return {"one_shot",       "one_shot_push", "two_shot",        "one_shot_ll",
          "reduce_scatter", "all_gather",    "all_gather_port", "broadcast"};
}

absl::StatusOr<ProgramSpec> ShippedPlan(absl::string_view name, int world_size) {
  if (world_size < 1 || world_size > 8) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", name, ": world size ", world_size, ": expected 1..8"));
  }
  const int n = world_size;
  if (name == "one_shot") return OneShot(n);
  if (name == "one_shot_push") return OneShotPush(n);
  if (name == "two_shot") return TwoShot(n);
  if (name == "one_shot_ll") return OneShotLL(n);
  if (name == "reduce_scatter") return ReduceScatter(n);
  if (name == "all_gather") return AllGather(n, false);
  if (name == "all_gather_port") return AllGather(n, true);
  if (name == "broadcast") return Broadcast(n);
  return absl::NotFoundError(absl::StrCat("no shipped plan named '", name, "'"));
}

absl::StatusOr<std::string> PlanNameFromStrategy(absl::string_view strategy) {
  constexpr absl::string_view kPrefix = "plan:";
  if (strategy.substr(0, kPrefix.size()) != kPrefix || strategy.size() == kPrefix.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected plan:NAME, found '", strategy, "'"));
  }
  const absl::string_view name = strategy.substr(kPrefix.size());
  for (char c : name) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("plan name '", name, "': expected lower-case letters, digits, '_' and '-'"));
    }
  }
  return std::string(name);
}

absl::StatusOr<ProgramSpec> ShippedPlanForStrategy(absl::string_view strategy, int world_size) {
  absl::StatusOr<std::string> name = PlanNameFromStrategy(strategy);
  if (!name.ok()) return name.status();
  absl::StatusOr<ProgramSpec> plan = ShippedPlan(*name, world_size);
  if (plan.ok() && plan->collective != Collective::kAllReduce) {
    std::vector<std::string> all_reduces;
    for (const std::string& n : ShippedPlanNames()) {
      if (absl::StatusOr<ProgramSpec> p = ShippedPlan(n, world_size);
          p.ok() && p->collective == Collective::kAllReduce) {
        all_reduces.push_back(n);
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", strategy, ": plan ", *name, " is an ", CollectiveName(plan->collective),
                     ", not an allreduce (allreduce plans: ", absl::StrJoin(all_reduces, ", "), ")"));
  }
  return plan;
}

}  // namespace vdev::channels
