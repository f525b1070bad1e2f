// The host executor of channel plans (behaviour in vdev/channels/channel_executor.h): one thread per thread
// block and instance, one proxy thread per rank for its port channels.
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "internal/layout.h"
#include "internal/packet_sweep.h"
#include "internal/plan_checks.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/support/checked_size.h"
#include "vdev/support/half.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

std::atomic_ref<uint64_t> Word(uint64_t* p) { return std::atomic_ref<uint64_t>(*p); }

// A port channel request, served in order by the rank's proxy thread.
struct Request {
  int channel = 0;
  char* dst = nullptr;
  const char* src = nullptr;
  size_t bytes = 0;
  uint64_t* semaphore = nullptr;  // set to `count` after the copy when given
  uint64_t count = 0;
};

}  // namespace

struct HostPlanExecutor::State {
  DataType type = DataType::kF32;
  size_t elem = 4;
  size_t max_count = 0;
  int instances = 1;
  internal::RegionLayout layout;
  // [tb][op] -> for signals and waits: (k-th of its semaphore in an execution, per execution)
  std::vector<std::vector<std::pair<int, int>>> counts;
  std::vector<ChunkRef> spares;  // of this rank's scratch, for the stale-packet sweep
  // (index, count) of a packet source of this rank's ops -> the ranks that write those packets
  std::map<std::pair<int, int>, std::vector<int>> packet_writers;
  uint64_t call = 0;
};

namespace {

// One execution on one rank: what every thread of it shares.
class Run {
 public:
  Run(PeerGroup& session, IPCMemory& region, const ProgramSpec& plan, const HostPlanExecutor::State& state,
      size_t count, uint64_t call)
      : session_(session),
        region_(region),
        plan_(plan),
        s_(state),
        count_(count),
        call_(call),
        flag_(internal::PacketFlag(call)),
        issued_(plan.port_channels.size()),
        completed_(plan.port_channels.size()) {
    deadline_ = absl::Now() + session.timeout();
  }

  absl::Status Execute() {
    const int me = region_.worker_id;
    const int tbs = static_cast<int>(plan_.ranks[me].size());
    bool has_ports = false;
    for (const ChannelSpec& c : plan_.port_channels) has_ports = has_ports || c.src == me;
    std::thread proxy;
    if (has_ports) proxy = std::thread([this] { ServeProxy(); });
    std::vector<std::thread> threads;
    for (int t = 0; t < tbs; ++t) {
      for (int m = 0; m < s_.instances; ++m) {
        if (t == 0 && m == 0) continue;
        threads.emplace_back([this, t, m] { Record(RunThreadBlock(t, m)); });
      }
    }
    if (tbs > 0) Record(RunThreadBlock(0, 0));
    for (std::thread& t : threads) t.join();
    if (has_ports) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      proxy.join();
    }
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  void Record(absl::Status s) {
    if (s.ok()) return;
    abort_.store(true);
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok() || absl::IsCancelled(error_)) error_ = s;
  }

  std::string Where(int t, int m, int i) const {
    const Op& op = plan_.ranks[region_.worker_id][t].ops[i];
    return absl::StrCat("plan ", plan_.name, " execution #", call_, ": rank ", region_.worker_id, " tb ", t,
                        s_.instances > 1 ? absl::StrCat(" instance ", m) : "", " op ", i, " (", OpName(op.kind), ")");
  }

  // Spins until ready() (yielding: ranks and thread blocks share few cores); bounded by the session's
  // timeout, and given up once none of `peers` (the ranks that can still make it ready; none for
  // this rank's own proxy) is alive, checked every millisecond.
  template <typename Ready, typename Describe>
  absl::Status Await(Ready ready, absl::Span<const int> peers, Describe describe) {
    absl::Time next_check = absl::Now() + absl::Milliseconds(1);
    for (uint64_t spins = 0; !ready(); ++spins) {
      if (spins < 64) continue;
      sched_yield();
      if ((spins & 15) != 0) continue;
      if (abort_.load(std::memory_order_relaxed)) return absl::CancelledError("another thread block failed");
      const absl::Time now = absl::Now();
      if (now < next_check) continue;
      next_check = now + absl::Milliseconds(1);
      absl::Status alive = AnyAlive(peers);
      if (!alive.ok() && ready()) break;
      if (!alive.ok()) return absl::UnavailableError(absl::StrCat(describe(), ": ", alive.message()));
      if (now > deadline_) {
        return absl::DeadlineExceededError(
            absl::StrCat(describe(), ": nothing came within ", absl::FormatDuration(session_.timeout())));
      }
    }
    return absl::OkStatus();
  }

  // OK while one of `peers` lives or none is named; else every one's reason.
  absl::Status AnyAlive(absl::Span<const int> peers) const {
    std::vector<std::string> gone;
    for (int peer : peers) {
      absl::Status alive = session_.CheckAlive(peer);
      if (alive.ok()) return alive;
      gone.emplace_back(alive.message());
    }
    if (gone.empty()) return absl::OkStatus();
    return absl::UnavailableError(absl::StrJoin(gone, "; "));
  }

  char* Base(int rank, const ChunkRef& c) const {
    char* region = static_cast<char*>(region_.remote_data[rank]);
    switch (c.buffer) {
      case BufferKind::kInput: return region + s_.layout.input;
      case BufferKind::kOutput: return region + s_.layout.output;
      case BufferKind::kScratch: return region + s_.layout.scratch[call_ & 1];
    }
    return region;
  }
  // Where a chunk's data (or its first packet line) starts.
  char* At(const ChunkRef& c) const {
    if (c.packets)
      return Base(c.rank, c) + 16 * internal::PacketLine(count_, plan_.chunks_per_segment, c.index, s_.elem);
    return Base(c.rank, c) + internal::ChunkBegin(count_, plan_.chunks_per_segment, c.index) * s_.elem;
  }

  // Whole lines (a last half-used one padded with zeros), as the CUDA executor writes them.
  void WritePackets(char* lines, uint64_t b, const char* data, size_t bytes) const {
    uint64_t* words = reinterpret_cast<uint64_t*>(lines + 2 * b);
    for (size_t w = 0; w * 4 < bytes || (w & 1) != 0; ++w) {
      if (w * 4 >= bytes) {
        Word(&words[w]).store(uint64_t{flag_} << 32, std::memory_order_relaxed);
        continue;
      }
      uint32_t d = 0;
      std::memcpy(&d, data + 4 * w, std::min<size_t>(4, bytes - 4 * w));
      Word(&words[w]).store(d | (uint64_t{flag_} << 32), std::memory_order_relaxed);
    }
  }

  // Waits for this execution's packets in `src` (of this rank's scratch) from the ranks that write
  // them: a peer that finished its executions and exited may be no writer of these.
  absl::Status ReadPackets(const ChunkRef& src, uint64_t b, char* data, size_t bytes, int t, int m, int i) {
    uint64_t* words = reinterpret_cast<uint64_t*>(At(src) + 2 * b);
    const std::vector<int>& writers = s_.packet_writers.at({src.index, src.count});
    auto describe = [&] {
      return absl::StrCat(Where(t, m, i), ": waiting for packets from rank", writers.size() > 1 ? "s " : " ",
                          absl::StrJoin(writers, " or "));
    };
    for (size_t w = 0; w * 4 < bytes; ++w) {
      uint64_t v = 0;
      VDEV_RETURN_IF_ERROR(Await([&] { return ((v = Word(&words[w]).load(std::memory_order_relaxed)) >> 32) == flag_; },
                                 writers, describe));
      const uint32_t d = static_cast<uint32_t>(v);
      std::memcpy(data + 4 * w, &d, std::min<size_t>(4, bytes - 4 * w));
    }
    return absl::OkStatus();
  }

  template <typename T>
  static T Add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
    } else {
      return a + b;
    }
  }

  template <typename T>
  static void Sum(const std::vector<const char*>& srcs, char* dst, size_t bytes) {
    const size_t n = bytes / sizeof(T);
    for (size_t e = 0; e < n; ++e) {
      T acc;
      std::memcpy(&acc, srcs[0] + e * sizeof(T), sizeof(T));
      for (size_t j = 1; j < srcs.size(); ++j) {
        T v;
        std::memcpy(&v, srcs[j] + e * sizeof(T), sizeof(T));
        acc = Add(acc, v);
      }
      std::memcpy(dst + e * sizeof(T), &acc, sizeof(T));
    }
  }
  // f16 and bf16 (by their bits): summed in f32, every element widened exactly, rounded once to
  // nearest even at the end — what the all-reduce backends compute, so a plan whose reduce takes
  // every rank's value gives the same bits as the hand-written kernels.
  template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
  static void SumNarrow(const std::vector<const char*>& srcs, char* dst, size_t bytes) {
    for (size_t e = 0; e < bytes / 2; ++e) {
      uint16_t bits;
      std::memcpy(&bits, srcs[0] + 2 * e, 2);
      float acc = Widen(bits);
      for (size_t j = 1; j < srcs.size(); ++j) {
        std::memcpy(&bits, srcs[j] + 2 * e, 2);
        acc += Widen(bits);
      }
      bits = Narrow(acc);
      std::memcpy(dst + 2 * e, &bits, 2);
    }
  }

  absl::Status RunOp(int t, int m, int i) {
    const int me = region_.worker_id;
    const Op& op = plan_.ranks[me][t].ops[i];
    const int parts = op.parts * s_.instances, part = op.part * s_.instances + m;
    const bool port = IsPortOp(op.kind);
    const ChannelSpec* ch = nullptr;
    if (op.channel >= 0) ch = &ChannelOf(plan_, op);
    const int tag = ch != nullptr ? ch->tag * s_.instances + m : 0;
    internal::Range r{};
    if (!op.srcs.empty()) {
      const uint64_t size =
          internal::ChunkBytes(count_, plan_.chunks_per_segment, op.dst.index, op.dst.count, s_.elem).size();
      r = internal::PartOf(size, part, parts);
    }
    switch (op.kind) {
      case OpKind::kPut:
      case OpKind::kGet:
      case OpKind::kCopy:
        if (op.srcs[0].packets) {
          return ReadPackets(op.srcs[0], r.begin, At(op.dst) + r.begin, r.size(), t, m, i);
        }
        if (r.size() > 0) std::memmove(At(op.dst) + r.begin, At(op.srcs[0]) + r.begin, r.size());
        return absl::OkStatus();
      case OpKind::kSignal: {
        // The k-th signal of execution e sets the count to (e - 1) * per_call + k (one thread block
        // signals each semaphore, in order).
        const auto [k, per_call] = s_.counts[t][i];
        Word(&Semaphores(false, ch->dst)[tag * kMaxWorkers + me])
            .store((call_ - 1) * per_call + k, op.relaxed ? std::memory_order_relaxed : std::memory_order_release);
        return absl::OkStatus();
      }
      case OpKind::kWait:
      case OpKind::kPortWait: {
        const auto [signal, per_call] = s_.counts[t][i];
        const uint64_t target = (call_ - 1) * per_call + signal;
        const auto k = signal;  // a copy: clang 14 cannot capture a structured binding in a lambda
        uint64_t* word = &Semaphores(port, me)[tag * kMaxWorkers + ch->dst];
        const auto order = op.relaxed ? std::memory_order_relaxed : std::memory_order_acquire;
        return Await([&] { return Word(word).load(order) >= target; }, {ch->dst},
                     [&] {
                       return absl::StrCat(Where(t, m, i), ": waiting for signal #", k, " of this execution from rank ",
                                           ch->dst, port ? " by port" : "", " (tag ", ch->tag, "; count ",
                                           Word(word).load(), " of ", target, ")");
                     });
      }
      case OpKind::kPutPackets:
        WritePackets(At(op.dst), r.begin, At(op.srcs[0]) + r.begin, r.size());
        return absl::OkStatus();
      case OpKind::kReadPutPackets: {
        std::vector<char> data(r.size());
        VDEV_RETURN_IF_ERROR(ReadPackets(op.srcs[0], r.begin, data.data(), r.size(), t, m, i));
        WritePackets(At(op.dst), r.begin, data.data(), r.size());
        return absl::OkStatus();
      }
      case OpKind::kReduce: {
        std::vector<std::vector<char>> unpacked;
        std::vector<const char*> srcs;
        for (const ChunkRef& src : op.srcs) {
          if (!src.packets) {
            srcs.push_back(At(src) + r.begin);
            continue;
          }
          unpacked.emplace_back(r.size());
          VDEV_RETURN_IF_ERROR(ReadPackets(src, r.begin, unpacked.back().data(), r.size(), t, m, i));
          srcs.push_back(unpacked.back().data());
        }
        char* dst = At(op.dst) + r.begin;
        switch (s_.type) {
          case DataType::kF64: Sum<double>(srcs, dst, r.size()); break;
          case DataType::kI32: Sum<int32_t>(srcs, dst, r.size()); break;
          case DataType::kF16: SumNarrow<HalfToFloat, FloatToHalf>(srcs, dst, r.size()); break;
          case DataType::kBF16: SumNarrow<BF16ToFloat, FloatToBF16>(srcs, dst, r.size()); break;
          default: Sum<float>(srcs, dst, r.size()); break;
        }
        return absl::OkStatus();
      }
      case OpKind::kPortPut:
      case OpKind::kPortSignal: {
        Request q{.channel = op.channel};
        if (op.kind == OpKind::kPortPut) {
          q.dst = At(op.dst) + r.begin;
          q.src = At(op.srcs[0]) + r.begin;
          q.bytes = r.size();
        }
        if (op.kind == OpKind::kPortSignal || op.with_signal) {
          q.semaphore = &Semaphores(true, ch->dst)[tag * kMaxWorkers + me];
          q.count = (call_ - 1) * s_.counts[t][i].second + s_.counts[t][i].first;
        }
        issued_[op.channel].fetch_add(1);
        {
          std::lock_guard<std::mutex> lock(mu_);
          queue_.push_back(q);
        }
        cv_.notify_all();
        if (!op.with_flush) return absl::OkStatus();
        return Flush(op.channel, t, m, i);
      }
      case OpKind::kPortFlush: return Flush(op.channel, t, m, i);
    }
    return absl::OkStatus();
  }

  // Rank `rank`'s semaphore words: memory channels' in barrier_in, port channels' (their own,
  // docs/channels.md) in barrier_out.
  uint64_t* Semaphores(bool port, int rank) const {
    return port ? region_.barrier_out[rank] : region_.barrier_in[rank];
  }

  // Waits for this rank's own proxy, which needs no peer to finish a request: the channel's peer may
  // see the request's signal, finish and exit before the proxy counts the request completed.
  absl::Status Flush(int channel, int t, int m, int i) {
    const uint64_t target = issued_[channel].load();
    return Await([&] { return completed_[channel].load(std::memory_order_acquire) >= target; }, {},
                 [&] { return absl::StrCat(Where(t, m, i), ": flushing port channel ", channel); });
  }

  absl::Status RunThreadBlock(int t, int m) {
    const size_t ops = plan_.ranks[region_.worker_id][t].ops.size();
    for (size_t i = 0; i < ops; ++i) VDEV_RETURN_IF_ERROR(RunOp(t, m, static_cast<int>(i)));
    return absl::OkStatus();
  }

  void ServeProxy() {
    while (true) {
      Request q;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        q = queue_.front();
        queue_.pop_front();
      }
      if (q.bytes > 0) std::memcpy(q.dst, q.src, q.bytes);
      if (q.semaphore != nullptr) Word(q.semaphore).store(q.count, std::memory_order_release);
      completed_[q.channel].fetch_add(1, std::memory_order_release);
    }
  }

  PeerGroup& session_;
  IPCMemory& region_;
  const ProgramSpec& plan_;
  const HostPlanExecutor::State& s_;
  const size_t count_;
  const uint64_t call_;
  const uint32_t flag_;
  absl::Time deadline_;
  std::atomic<bool> abort_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  bool stop_ = false;
  std::vector<std::atomic<uint64_t>> issued_, completed_;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostPlanExecutor>> HostPlanExecutor::Create(PeerGroup& session, IPCAllocator& allocator,
                                                                           ProgramSpec plan, size_t max_count,
                                                                           DataType type, int instances) {
  VDEV_RETURN_IF_ERROR(internal::CheckPlanForSession(plan, session));
  if (allocator.backend() != MemoryBackend::kHost) {
    return absl::InvalidArgumentError("the host plan executor needs a host IPC allocator");
  }
  // Chunk offsets multiply a count by up to 4096 chunks per segment and 64 scratch segments: up to
  // 2^40 bytes per segment every offset in the region is exact in 64 bits.
  const std::optional<size_t> segment_bytes = CheckedMul(max_count, DataTypeSize(type));
  if (!segment_bytes || *segment_bytes > kMaxSegmentBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_count ", max_count, " of ", DataTypeName(type), ": a segment is limited to 2^40 bytes"));
  }
  const int max_tag = internal::MaxTag(plan);
  if (instances < 1 || (max_tag + 1) * instances > kMaxBarrierBlocks) {
    return absl::InvalidArgumentError(absl::StrCat("instances ", instances, ": the plan's ", max_tag + 1,
                                                   " tags times the instances must stay within ", kMaxBarrierBlocks));
  }
  auto exec = std::unique_ptr<HostPlanExecutor>(new HostPlanExecutor());
  exec->session_ = &session;
  exec->allocator_ = &allocator;
  auto state = std::make_unique<State>();
  state->type = type;
  state->elem = DataTypeSize(type);
  state->max_count = max_count;
  state->instances = instances;
  state->layout = internal::MakeRegionLayout(max_count, state->elem, InputSegments(plan.collective, plan.world_size),
                                             OutputSegments(plan.collective, plan.world_size), plan.chunks_per_segment,
                                             plan.scratch_chunks);
  // The k-th signal and wait of each semaphore in one execution (one thread block signals it and
  // one waits on it: validated).
  const int me = session.rank();
  std::map<std::tuple<int, int, bool, bool>, int> per_call;  // (peer, tag, signal?, port?) -> count
  auto key = [&](const Op& op) -> std::optional<std::tuple<int, int, bool, bool>> {
    const bool signal = SignalsSemaphore(op);
    if (!signal && !WaitsOnSemaphore(op)) return std::nullopt;
    const ChannelSpec& ch = ChannelOf(plan, op);
    return std::make_tuple(ch.dst, ch.tag, signal, IsPortOp(op.kind));
  };
  state->counts.resize(plan.ranks[me].size());
  for (size_t t = 0; t < plan.ranks[me].size(); ++t) {
    for (const Op& op : plan.ranks[me][t].ops) {
      const auto k = key(op);
      state->counts[t].push_back({k ? ++per_call[*k] : 0, 0});
    }
  }
  for (size_t t = 0; t < plan.ranks[me].size(); ++t) {
    for (size_t i = 0; i < plan.ranks[me][t].ops.size(); ++i) {
      if (const auto k = key(plan.ranks[me][t].ops[i])) state->counts[t][i].second = per_call[*k];
    }
  }
  state->spares = internal::SweptScratchSpares(plan, me);
  for (const ThreadBlock& tb : plan.ranks[me]) {
    for (const Op& op : tb.ops) {
      for (const ChunkRef& src : op.srcs) {
        if (src.packets) state->packet_writers[{src.index, src.count}] = internal::PacketWriters(plan, src);
      }
    }
  }
  VDEV_ASSIGN_OR_RETURN(exec->region_, allocator.Allocate(state->layout.total));
  // Memory from the pool keeps what an earlier user left: semaphore counts and packet lines whose
  // flags this executor's first executions would take for their own. Zero them all, and let no rank
  // signal before every rank has.
  std::memset(exec->region_->remote_data[me], 0, state->layout.total);
  for (size_t w = 0; w < kBarrierWords; ++w) {
    Word(&exec->region_->barrier_in[me][w]).store(0);
    Word(&exec->region_->barrier_out[me][w]).store(0);
  }
  absl::Status met = session.Barrier("channels executor");
  if (!met.ok()) {
    allocator.Free(exec->region_);
    return met;
  }
  exec->plan_ = std::move(plan);
  exec->state_ = std::move(state);
  return exec;
}

absl::StatusOr<std::unique_ptr<HostPlanExecutor>> HostPlanExecutor::ForStrategy(PeerGroup& session,
                                                                                IPCAllocator& allocator,
                                                                                absl::string_view strategy,
                                                                                size_t max_count, DataType type) {
  VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, ShippedPlanForStrategy(strategy, session.world_size()));
  return Create(session, allocator, std::move(plan), max_count, type);
}

HostPlanExecutor::~HostPlanExecutor() {
  if (region_ != nullptr) allocator_->Free(region_);
}

uint64_t HostPlanExecutor::executions() const { return state_->call; }

absl::Status HostPlanExecutor::Execute(const void* in, void* out, size_t count) {
  if (count > state_->max_count) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", plan_.name, ": ", count,
                                                   " elements per segment; the executor was made for at most ",
                                                   state_->max_count));
  }
  const size_t in_bytes = count * state_->elem * InputSegments(plan_.collective, plan_.world_size);
  const size_t out_bytes = count * state_->elem * OutputSegments(plan_.collective, plan_.world_size);
  char* local = static_cast<char*>(region_->remote_data[region_->worker_id]);
  if (in_bytes > 0) std::memcpy(local + state_->layout.input, in, in_bytes);
  const uint64_t call = ++state_->call;
  region_->barrier_flag[0] = call;
  Run run(*session_, *region_, plan_, *state_, count, call);
  VDEV_RETURN_IF_ERROR(run.Execute());
  const internal::RegionLayout& layout = state_->layout;
  const internal::Range slice = internal::PacketSweepSlice(call, layout.scratch[1] - layout.scratch[0]);
  if (!state_->spares.empty() && slice.size() > 0) {
    internal::ZeroUnspared(local + layout.scratch[call & 1], slice,
                           internal::SpareSpans(state_->spares, count, plan_.chunks_per_segment, state_->elem));
  }
  if (out_bytes > 0) std::memcpy(out, local + state_->layout.output, out_bytes);
  return absl::OkStatus();
}

}  // namespace vdev::channels
