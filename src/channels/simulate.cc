// The validator's simulation (model in validate.cc): thread blocks run their ops until a wait or a
// packet read blocks; vector clocks order accesses; every chunk carries the set of inputs summed
// into it. Ranks move to their next execution independently, as the executors do.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "internal/simulate.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::internal {
namespace {

using Clock = std::vector<uint32_t>;

void JoinInto(Clock& a, const Clock& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max(a[i], b[i]);
}

// Who touched a chunk: a thread block's op, a proxy (tb = -2) or a host (tb = -1).
struct Actor {
  int rank = 0;
  int tb = -1;
  int op = -1;
  OpKind kind = OpKind::kCopy;
  int channel = -1;
};

std::string ActorText(const Actor& a) {
  if (a.tb == -1) return absl::StrCat("rank ", a.rank, "'s caller");
  if (a.tb == -2) return absl::StrCat("rank ", a.rank, "'s proxy of port channel ", a.channel);
  return absl::StrCat("rank ", a.rank, " tb ", a.tb, " op ", a.op, " (", OpName(a.kind), ")");
}

struct Access {
  int thread = 0;
  uint32_t stamp = 0;
  uint64_t op_seq = 0;  // accesses of one op never race with each other
  int call = 0;
  bool packets = false;
  int part = 0, parts = 1, ref_index = 0, ref_count = 0;
  Actor actor;
  Clock clock;  // a packet write: the writer's clock, which a reader of the packets acquires
};

struct CellValue {
  int call = 0;          // 0: nothing written yet; -1: mixes executions
  std::vector<int> ids;  // inputs summed into it (rank * input chunks + chunk), sorted
  friend bool operator==(const CellValue&, const CellValue&) = default;
};

struct Cell {
  std::optional<Access> write;
  std::vector<Access> reads;
  CellValue value;
};

struct ThreadBlockState {
  int id = 0;
  size_t pc = 0;
  bool done = true;
  uint32_t phase = 0;
  Clock vc, pending;
};

struct Proxy {
  int id = 0;
  uint32_t phase = 0;
  Clock vc;
};

// Starts the next phase of a thread (a thread block, a port channel's proxy, a rank's host): a
// tick of its own entry in its vector clock.
template <typename Thread>
void NextPhase(Thread& t) {
  ++t.phase;
  t.vc[t.id] = t.phase;
}

struct Semaphore {
  int signals = 0;
  int waits = 0;
  std::vector<Clock> clocks;  // the k-th signal's clock (empty for a relaxed one)
};

std::string ValueText(const CellValue& v, int input_chunks) {
  if (v.call == 0) return "nothing";
  std::vector<std::string> parts;
  for (int id : v.ids) parts.push_back(absl::StrCat("r", id / input_chunks, ".", id % input_chunks));
  return absl::StrCat("{", absl::StrJoin(parts, " + "), "}", v.call < 0 ? " (mixing executions)" : "");
}

class Simulation {
 public:
  explicit Simulation(const ProgramSpec& p) : p_(p), n_(p.world_size), c_(p.chunks_per_segment) {
    in_chunks_ = InputSegments(p.collective, n_) * c_;
    out_chunks_ = OutputSegments(p.collective, n_) * c_;
    int threads = 0;
    tbs_.resize(n_);
    for (int r = 0; r < n_; ++r) {
      for (size_t t = 0; t < p.ranks[r].size(); ++t) tbs_[r].push_back({.id = threads++});
    }
    for (size_t i = 0; i < p.port_channels.size(); ++i) proxies_.push_back({.id = threads++});
    for (int r = 0; r < n_; ++r) hosts_.push_back({.id = threads++});
    for (auto& rank : tbs_) {
      for (ThreadBlockState& tb : rank) tb.vc = tb.pending = Clock(threads, 0);
    }
    for (Proxy& x : proxies_) x.vc = Clock(threads, 0);
    for (Proxy& h : hosts_) h.vc = Clock(threads, 0);
    zero_ = Clock(threads, 0);
    cells_per_rank_ = in_chunks_ + out_chunks_ + 2 * p.scratch_chunks;
    cells_.resize(static_cast<size_t>(n_) * cells_per_rank_);
    call_.assign(n_, 0);
  }

  absl::Status Run(int calls) {
    VDEV_RETURN_IF_ERROR(CheckBalance());
    for (int r = 0; r < n_; ++r) VDEV_RETURN_IF_ERROR(StartCall(r));
    while (true) {
      bool progress = false, all_done = true;
      for (int r = 0; r < n_; ++r) {
        if (call_[r] > calls) continue;
        all_done = false;
        bool rank_done = true;
        for (size_t t = 0; t < tbs_[r].size(); ++t) {
          while (!tbs_[r][t].done) {
            VDEV_ASSIGN_OR_RETURN(bool stepped, Step(r, static_cast<int>(t)));
            if (!stepped) break;
            progress = true;
          }
          rank_done = rank_done && tbs_[r][t].done;
        }
        if (!rank_done) continue;
        VDEV_RETURN_IF_ERROR(EndCall(r));
        if (call_[r] < calls) {
          VDEV_RETURN_IF_ERROR(StartCall(r));
        } else {
          call_[r] = calls + 1;
        }
        progress = true;
      }
      if (all_done) return absl::OkStatus();
      if (!progress) return Deadlock();
    }
  }

 private:
  // A semaphore: (owner, signalling rank, tag, port?). Port channels count in semaphores of their
  // own, apart from memory channels' between the same ranks with the same tag (docs/channels.md).
  using Key = std::tuple<int, int, int, bool>;

  // The semaphore a signal by `op` on `ch` raises, and the one a wait on `ch` waits for.
  static Key SignalKey(const Op& op, const ChannelSpec& ch) { return {ch.dst, ch.src, ch.tag, IsPortOp(op.kind)}; }
  static Key WaitKey(const Op& op, const ChannelSpec& ch) { return {ch.src, ch.dst, ch.tag, IsPortOp(op.kind)}; }

  // Every semaphore is signalled as often as it is waited for in one execution.
  absl::Status CheckBalance() {
    std::map<Key, std::pair<int, int>> count;  // signals, waits
    std::map<Key, std::string> first_wait;
    for (int r = 0; r < n_; ++r) {
      for (size_t t = 0; t < p_.ranks[r].size(); ++t) {
        const std::vector<Op>& ops = p_.ranks[r][t].ops;
        for (size_t i = 0; i < ops.size(); ++i) {
          if (!SignalsSemaphore(ops[i]) && !WaitsOnSemaphore(ops[i])) continue;
          const std::string where = absl::StrCat("rank ", r, " tb ", t, " op ", i, " (", OpName(ops[i].kind), ")");
          if (ops[i].parts != 1)
            return absl::InvalidArgumentError(absl::StrCat(where, ": signals and waits take one thread block"));
          const ChannelSpec& ch = ChannelOf(p_, ops[i]);
          if (SignalsSemaphore(ops[i])) ++count[SignalKey(ops[i], ch)].first;
          if (WaitsOnSemaphore(ops[i])) {
            ++count[WaitKey(ops[i], ch)].second;
            first_wait.emplace(WaitKey(ops[i], ch), where);
          }
        }
      }
    }
    for (const auto& [key, sw] : count) {
      const auto [owner, from, tag, port] = key;
      if (sw.first < sw.second) {
        return absl::InvalidArgumentError(absl::StrCat(first_wait[key], " waits on the ", port ? "port " : "",
                                                       "channel from rank ", from, " (tag ", tag, "), which rank ",
                                                       from, " signals ", sw.first, " times per execution against ",
                                                       sw.second, " waits: a wait with no matching signal deadlocks"));
      }
      if (sw.first > sw.second) {
        return absl::InvalidArgumentError(absl::StrCat("rank ", from, " signals rank ", owner, port ? " by port" : "",
                                                       " (tag ", tag, ") ", sw.first, " times per execution but rank ",
                                                       owner, " waits ", sw.second,
                                                       " times: the semaphore would drift out of step"));
      }
    }
    return absl::OkStatus();
  }

  int CellIndex(const ChunkRef& c, int k, int call) const {
    int base = 0;
    if (c.buffer == BufferKind::kOutput) base = in_chunks_;
    if (c.buffer == BufferKind::kScratch) base = in_chunks_ + out_chunks_ + (call & 1) * p_.scratch_chunks;
    return c.rank * cells_per_rank_ + base + c.index + k;
  }

  std::string CellText(const ChunkRef& c, int k, int call) const {
    return absl::StrCat(BufferName(c.buffer),
                        c.buffer == BufferKind::kScratch ? absl::StrCat(" (half ", call & 1, ")") : "", " chunk ",
                        c.index + k, " of rank ", c.rank);
  }

  static bool Overlap(const Access& a, const Access& b) {
    if (a.parts == 1 || b.parts == 1 || a.ref_index != b.ref_index || a.ref_count != b.ref_count) return true;
    return int64_t{a.part} * b.parts < int64_t{b.part + 1} * a.parts &&
           int64_t{b.part} * a.parts < int64_t{a.part + 1} * b.parts;
  }

  absl::Status Race(const Access& a, const Access& b, bool a_writes, bool b_writes, const std::string& cell) const {
    return absl::InvalidArgumentError(
        absl::StrCat("race in execution ", a.call, ": ", ActorText(a.actor), a_writes ? " writes " : " reads ", cell,
                     " while ", ActorText(b.actor), "'s ", b_writes ? "write" : "read", " of it (execution ", b.call,
                     ") is not ordered before: no data sync, signal/wait or flush between them"));
  }

  // Records an access and checks it against the cell's earlier ones. A packet read of this
  // execution's packets acquires their writer's clock into `acquire` (when given).
  absl::Status Touch(const ChunkRef& c, int k, int call, const Access& a, const Clock& vc, bool write,
                     Clock* acquire = nullptr) {
    Cell& cell = cells_[CellIndex(c, k, call)];
    auto ordered = [&](const Access& b) { return b.op_seq == a.op_seq || vc[b.thread] > b.stamp; };
    if (cell.write && cell.write->packets != a.packets && c.buffer == BufferKind::kScratch && !write) {
      return absl::InvalidArgumentError(absl::StrCat(
          ActorText(a.actor), " reads ", CellText(c, k, call), a.packets ? " as packets, but " : " as plain data, but ",
          ActorText(cell.write->actor), " wrote it ", a.packets ? "as plain data" : "as packets"));
    }
    const bool flag_ordered = cell.write && a.packets && cell.write->packets && cell.write->call == a.call;
    if (cell.write && !flag_ordered && !ordered(*cell.write) && Overlap(a, *cell.write)) {
      return Race(a, *cell.write, write, true, CellText(c, k, call));
    }
    if (!write) {
      if (flag_ordered && acquire != nullptr) JoinInto(*acquire, cell.write->clock);
      cell.reads.push_back(a);
      return absl::OkStatus();
    }
    for (const Access& r : cell.reads) {
      if (!ordered(r) && Overlap(a, r)) return Race(a, r, true, false, CellText(c, k, call));
    }
    cell.reads.clear();
    cell.write = a;
    return absl::OkStatus();
  }

  static Access MakeAccess(int thread, uint32_t stamp, uint64_t seq, int call, const Op* op, const ChunkRef& ref,
                           bool packets, const Actor& actor) {
    Access a{.thread = thread, .stamp = stamp, .op_seq = seq, .call = call, .packets = packets, .actor = actor};
    if (op != nullptr) {
      a.part = op->part;
      a.parts = op->parts;
    }
    a.ref_index = ref.index;
    a.ref_count = ref.count;
    return a;
  }

  absl::Status StartCall(int r) {
    const int call = ++call_[r];
    Proxy& host = hosts_[r];
    NextPhase(host);
    const ChunkRef input{r, BufferKind::kInput, 0, in_chunks_};
    Access a = MakeAccess(host.id, host.phase, ++op_seq_, call, nullptr, input, false, {.rank = r});
    for (int k = 0; k < in_chunks_; ++k) {
      // A race here is a peer's read of the previous input that nothing ordered before this rank's
      // previous execution ended (the caller rewrites the input right after it).
      VDEV_RETURN_IF_ERROR(Touch(input, k, call, a, host.vc, true));
      cells_[CellIndex(input, k, call)].value = {call, {r * in_chunks_ + k}};
    }
    NextPhase(host);
    for (ThreadBlockState& tb : tbs_[r]) {
      JoinInto(tb.vc, host.vc);
      Sync(tb);
      tb.pc = 0;
      tb.done = p_.ranks[r][&tb - tbs_[r].data()].ops.empty();
    }
    for (size_t i = 0; i < p_.port_channels.size(); ++i) {
      if (p_.port_channels[i].src == r) JoinInto(proxies_[i].vc, host.vc);
    }
    return absl::OkStatus();
  }

  std::vector<int> Expected(int r, int k) const {
    const int s = k / c_, j = k % c_;
    std::vector<int> ids;
    switch (p_.collective) {
      case Collective::kAllReduce:
        for (int q = 0; q < n_; ++q) ids.push_back(q * in_chunks_ + j);
        break;
      case Collective::kReduceScatter:
        for (int q = 0; q < n_; ++q) ids.push_back(q * in_chunks_ + r * c_ + j);
        break;
      case Collective::kAllGather: ids.push_back(s * in_chunks_ + j); break;
      case Collective::kBroadcast: ids.push_back(p_.root * in_chunks_ + j); break;
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  absl::Status EndCall(int r) {
    const int call = call_[r];
    Proxy& host = hosts_[r];
    for (ThreadBlockState& tb : tbs_[r]) {
      Sync(tb);
      JoinInto(host.vc, tb.vc);
    }
    for (size_t i = 0; i < p_.port_channels.size(); ++i) {
      if (p_.port_channels[i].src == r) JoinInto(host.vc, proxies_[i].vc);
    }
    NextPhase(host);
    const ChunkRef output{r, BufferKind::kOutput, 0, out_chunks_};
    Access a = MakeAccess(host.id, host.phase, ++op_seq_, call, nullptr, output, false, {.rank = r});
    for (int k = 0; k < out_chunks_; ++k) {
      VDEV_RETURN_IF_ERROR(Touch(output, k, call, a, host.vc, false));
      const CellValue want{call, Expected(r, k)};
      const CellValue& got = cells_[CellIndex(output, k, call)].value;
      if (got != want) {
        return absl::InvalidArgumentError(
            absl::StrCat("wrong result: after execution ", call, " ", CellText(output, k, call), " holds ",
                         ValueText(got, in_chunks_), " but the ", CollectiveName(p_.collective), " needs ",
                         ValueText(want, in_chunks_), " (rX.k: chunk k of rank X's input)"));
      }
    }
    NextPhase(host);
    return absl::OkStatus();
  }

  static void Sync(ThreadBlockState& tb) {
    JoinInto(tb.vc, tb.pending);
    std::fill(tb.pending.begin(), tb.pending.end(), 0);
    NextPhase(tb);
  }

  // Copies or sums the sources' values cell by cell into dst, recording every access.
  absl::Status Move(const Op& op, int thread, uint32_t stamp, const Clock& vc, const Actor& actor, int call,
                    Clock* acquire) {
    std::vector<CellValue> values(op.dst.count);
    const uint64_t seq = ++op_seq_;
    for (const ChunkRef& src : op.srcs) {
      Access a = MakeAccess(thread, stamp, seq, call, &op, src, src.packets, actor);
      for (int k = 0; k < src.count; ++k) {
        VDEV_RETURN_IF_ERROR(Touch(src, k, call, a, vc, false, acquire));
        const CellValue& v = cells_[CellIndex(src, k, call)].value;
        if (v.call == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(ActorText(actor), " reads ", CellText(src, k, call), ", which nothing wrote before"));
        }
        CellValue& out = values[k];
        out.call = out.call == 0 || out.call == v.call ? v.call : -1;
        out.ids.insert(out.ids.end(), v.ids.begin(), v.ids.end());
      }
    }
    Access w = MakeAccess(thread, stamp, seq, call, &op, op.dst, op.dst.packets, actor);
    if (op.dst.packets) w.clock = vc;
    for (int k = 0; k < op.dst.count; ++k) {
      std::sort(values[k].ids.begin(), values[k].ids.end());
      VDEV_RETURN_IF_ERROR(Touch(op.dst, k, call, w, vc, true));
      cells_[CellIndex(op.dst, k, call)].value = values[k];
    }
    return absl::OkStatus();
  }

  // One op of rank r's tb t: false when it must wait (nothing changed).
  absl::StatusOr<bool> Step(int r, int t) {
    ThreadBlockState& tb = tbs_[r][t];
    const Op& op = p_.ranks[r][t].ops[tb.pc];
    const int call = call_[r];
    const Actor actor{r, t, static_cast<int>(tb.pc), op.kind, op.channel};
    const ChannelSpec* ch = op.channel >= 0 ? &ChannelOf(p_, op) : nullptr;
    if (WaitsOnSemaphore(op)) {
      Semaphore& s = semaphores_[WaitKey(op, *ch)];
      if (s.signals <= s.waits) return false;
    }
    for (const ChunkRef& src : op.srcs) {
      if (!src.packets) continue;
      for (int k = 0; k < src.count; ++k) {
        const Cell& cell = cells_[CellIndex(src, k, call)];
        const int written = cell.write && cell.write->packets ? cell.write->call : 0;
        if (written > call) {
          return absl::InvalidArgumentError(
              absl::StrCat(ActorText(actor), ": the packets of execution ", call, " in ", CellText(src, k, call),
                           " can be overwritten by execution ", written, " (", ActorText(cell.write->actor),
                           ") before they are read: nothing orders that write after this read"));
        }
        if (written < call) return false;
      }
    }
    if (op.sync == Sync::kBefore || op.sync == Sync::kBoth) Sync(tb);
    switch (op.kind) {
      case OpKind::kSignal: {
        Semaphore& s = semaphores_[SignalKey(op, *ch)];
        ++s.signals;
        s.clocks.push_back(op.relaxed ? zero_ : tb.vc);
        break;
      }
      case OpKind::kWait:
      case OpKind::kPortWait: {
        Semaphore& s = semaphores_[WaitKey(op, *ch)];
        if (!op.relaxed) JoinInto(tb.pending, s.clocks[s.waits]);
        ++s.waits;
        break;
      }
      case OpKind::kPortPut:
      case OpKind::kPortSignal: {
        Proxy& x = proxies_[op.channel];
        JoinInto(x.vc, tb.vc);
        if (op.kind == OpKind::kPortPut) {
          VDEV_RETURN_IF_ERROR(Move(op, x.id, x.phase, x.vc, {r, -2, -1, op.kind, op.channel}, call, nullptr));
        }
        NextPhase(x);
        if (SignalsSemaphore(op)) {
          Semaphore& s = semaphores_[SignalKey(op, *ch)];
          ++s.signals;
          s.clocks.push_back(x.vc);
        }
        if (op.with_flush) JoinInto(tb.pending, x.vc);
        break;
      }
      case OpKind::kPortFlush: JoinInto(tb.pending, proxies_[op.channel].vc); break;
      default: VDEV_RETURN_IF_ERROR(Move(op, tb.id, tb.phase, tb.vc, actor, call, &tb.pending)); break;
    }
    if (op.sync == Sync::kAfter || op.sync == Sync::kBoth) Sync(tb);
    if (++tb.pc == p_.ranks[r][t].ops.size()) tb.done = true;
    return true;
  }

  absl::Status Deadlock() const {
    std::vector<std::string> blocked;
    for (int r = 0; r < n_; ++r) {
      for (size_t t = 0; t < tbs_[r].size(); ++t) {
        const ThreadBlockState& tb = tbs_[r][t];
        if (tb.done) continue;
        const Op& op = p_.ranks[r][t].ops[tb.pc];
        std::string what = absl::StrCat("rank ", r, " tb ", t, " op ", tb.pc, " (", OpName(op.kind), ")");
        if (WaitsOnSemaphore(op)) {
          const ChannelSpec& ch = ChannelOf(p_, op);
          auto it = semaphores_.find(WaitKey(op, ch));
          const int got = it == semaphores_.end() ? 0 : it->second.signals;
          absl::StrAppend(&what, " waits for ", IsPortOp(op.kind) ? "port " : "", "signal #", got + 1, " from rank ",
                          ch.dst, " (tag ", ch.tag, ")");
        } else {
          absl::StrAppend(&what, " waits for packets no one has written yet");
        }
        blocked.push_back(absl::StrCat(what, " in execution ", call_[r]));
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("deadlock: a wait with no signal that can still come: ", absl::StrJoin(blocked, "; ")));
  }

  const ProgramSpec& p_;
  const int n_, c_;
  int in_chunks_ = 0, out_chunks_ = 0, cells_per_rank_ = 0;
  std::vector<std::vector<ThreadBlockState>> tbs_;
  std::vector<Proxy> proxies_, hosts_;
  Clock zero_;
  std::vector<Cell> cells_;
  std::map<Key, Semaphore> semaphores_;
  std::vector<int> call_;
  uint64_t op_seq_ = 0;
};

}  // namespace

absl::Status SimulateExecutions(const ProgramSpec& program, int calls) { return Simulation(program).Run(calls); }

}  // namespace vdev::channels::internal
