// SolveComponent (internal/reduced_placement.h): one component of the shrunk placement problem as a
// Z3 MaxSAT problem. The only Z3 user of the optimiser; no z3::exception leaves this file.
#include <z3++.h>

#include <stdlib.h>  // on_exit

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/planner/internal/reduced_placement.h"

namespace vdev::planner_internal {
namespace {

// A component's Z3 problem: a device variable per problem variable; the objective is Σ of the soft
// constraints' weights plus `constant` (unary minima; pairs' minima where a pair has a negative
// cost, which a soft constraint cannot carry).
struct Z3Problem {
  z3::context& ctx;
  z3::optimize& opt;
  const z3::func_decl_vector& consts;
  absl::flat_hash_map<uint32_t, size_t> index;
  std::vector<z3::expr> x;
  Cost constant = 0;
  std::optional<z3::optimize::handle> objective;

  void Soft(const z3::expr& e, Cost weight) {
    if (weight > 0) objective = opt.add_soft(e, std::to_string(weight).c_str());
  }
  z3::expr Is(uint32_t v, int device) const { return x[index.at(v)] == consts[device](); }
};

void AddUnaryCosts(const Reduced& r, const std::vector<uint32_t>& vars, Z3Problem& z) {
  for (uint32_t v : vars) {
    Cost low = kForbidden;
    for (int i = 0; i < r.d; ++i) low = std::min(low, r.unary[v][i]);
    z.constant += low;
    for (int i = 0; i < r.d; ++i) {
      if (r.unary[v][i] == kForbidden) {
        z.opt.add(!z.Is(v, i));
      } else {
        z.Soft(!z.Is(v, i), r.unary[v][i] - low);
      }
    }
  }
}

void AddPairCosts(const Reduced& r, Z3Problem& z) {
  auto allowed = [&](uint32_t v, int i) { return r.unary[v][i] != kForbidden; };
  for (size_t e = 0; e < r.pairs.size(); ++e) {
    if (!r.pair_live[e] || !z.index.contains(r.pairs[e].a)) continue;
    const PlacementModel::Pair& p = r.pairs[e];
    Cost low = 0;
    for (int i = 0; i < r.d; ++i) {
      for (int j = 0; j < r.d; ++j) {
        if (allowed(p.a, i) && allowed(p.b, j)) low = std::min(low, p.cost[i * r.d + j]);
      }
    }
    z.constant += low;
    for (int i = 0; i < r.d; ++i) {
      for (int j = 0; j < r.d; ++j) {
        if (allowed(p.a, i) && allowed(p.b, j)) z.Soft(!(z.Is(p.a, i) && z.Is(p.b, j)), p.cost[i * r.d + j] - low);
      }
    }
  }
}

// The capacity cuts naming the component's variables (the others in them are fixed), as hard
// constraints; returns which cuts were added.
std::vector<bool> AddCuts(const Reduced& r, const PlacementModel& problem, const std::vector<uint32_t>& vars,
                          Z3Problem& z) {
  std::vector<bool> cut_added(problem.capacity.size(), false);
  for (uint32_t v : vars) {
    for (uint32_t c : r.cuts_of[v]) {
      if (cut_added[c]) continue;
      cut_added[c] = true;
      const PlacementModel::CapacityCut& cut = problem.capacity[c];
      auto on = [&](uint32_t var, bool want) -> z3::expr {
        if (r.fixed[var] >= 0) return z.ctx.bool_val((r.fixed[var] == cut.device) == want);
        return want ? z.Is(var, cut.device) : !z.Is(var, cut.device);
      };
      // One flat sum: a chain of binary additions as deep as the cut is long is slow to build and
      // to delete.
      z3::expr_vector addends(z.ctx);
      for (const PlacementModel::CapacityCut::Term& t : cut.terms) {
        z3::expr holds = on(t.var, true);
        if (t.other != UINT32_MAX) holds = holds && on(t.other, false);
        addends.push_back(z3::ite(holds, z.ctx.int_val(t.bytes), z.ctx.int_val(0)));
      }
      if (!addends.empty()) z.opt.add(z3::sum(addends) <= z.ctx.int_val(cut.limit));
    }
  }
  return cut_added;
}

// The objective's proven lower bound (every soft constraint's weight is >= 0, so at least the
// constant). After a timeout Z3 may have been cancelled mid-way and throw: the bound is then the constant.
Cost ProvenLowerBound(Z3Problem& z) {
  if (!z.objective) return z.constant;
  try {
    int64_t value = 0;
    z3::expr bound = z.opt.lower(*z.objective);
    if (bound.is_numeral_i64(value)) return z.constant + value;
  } catch (const z3::exception&) {
  }
  return z.constant;
}

// The model's devices; a model cut short by the timeout may leave a variable unassigned (completed
// to any device) or on a forbidden one: no model, then.
absl::Status ReadDevices(const Reduced& r, const std::vector<uint32_t>& vars, const z3::model& model,
                         const Z3Problem& z, std::vector<int>& device) {
  for (uint32_t v : vars) {
    z3::expr value = model.eval(z.x[z.index.at(v)], /*model_completion=*/true);
    int chosen = -1;
    for (int i = 0; i < r.d && chosen < 0; ++i) {
      if (z3::eq(value, z.consts[i]())) chosen = i;
    }
    if (chosen < 0 || r.unary[v][chosen] == kForbidden) {
      return absl::DeadlineExceededError("placement: no model within the time limit");
    }
    device[v] = chosen;
  }
  return absl::OkStatus();
}

// A model cut short may also break a cut: no model, then.
absl::Status CheckCuts(const Reduced& r, const PlacementModel& problem, const std::vector<bool>& cut_added,
                       const std::vector<int>& device) {
  for (size_t c = 0; c < cut_added.size(); ++c) {
    if (!cut_added[c]) continue;
    const PlacementModel::CapacityCut& cut = problem.capacity[c];
    std::vector<int> placed(device.size(), -1);
    for (const PlacementModel::CapacityCut::Term& t : cut.terms) {
      for (uint32_t v : {t.var, t.other}) {
        if (v != UINT32_MAX) placed[v] = r.fixed[v] >= 0 ? r.fixed[v] : device[v];
      }
    }
    if (CutLoad(cut, placed) > cut.limit)
      return absl::DeadlineExceededError("placement: no model within the time limit");
  }
  return absl::OkStatus();
}

// One Z3 solve, owned jointly by its caller and the thread that runs it (Z3Solve), so that the
// caller can return at its deadline while the thread still runs: Z3 does not stop at every point
// of its search when its timeout expires, and deleting a large context can take minutes.
struct Z3Job {
  Reduced r;
  PlacementModel problem;
  std::vector<uint32_t> vars;
  double seconds = 0;
  uint64_t rlimit = 0;
  std::mutex mutex;
  std::condition_variable changed;
  z3::context* running = nullptr;  // while the solve runs: what the caller interrupts
  bool answered = false;           // status, device, optimal and lower are set
  bool finished = false;           // and the context is deleted
  bool abandoned = false;          // the caller returned without it
  absl::Status status;
  std::vector<int> device;
  bool optimal = false;
  Cost lower = 0;
};

absl::Status Solve(z3::context& ctx, Z3Job& job) {
  const Reduced& r = job.r;
  try {
    std::vector<std::string> names;
    for (int i = 0; i < r.d; ++i) names.push_back(absl::StrCat("d", i));
    std::vector<const char*> name_ptrs;
    for (const std::string& n : names) name_ptrs.push_back(n.c_str());
    z3::func_decl_vector consts(ctx);
    z3::func_decl_vector testers(ctx);
    z3::sort dev = ctx.enumeration_sort("Device", r.d, name_ptrs.data(), consts, testers);
    z3::optimize opt(ctx);
    Z3Problem z{ctx, opt, consts};
    for (uint32_t v : job.vars) {
      z.index[v] = z.x.size();
      z.x.push_back(ctx.constant(absl::StrCat("x", v).c_str(), dev));
    }
    z3::params params(ctx);
    params.set("maxsat_engine", ctx.str_symbol("maxres"));
    params.set("timeout", static_cast<unsigned>(std::clamp(job.seconds * 1000, 1.0, 4e9)));
    if (job.rlimit > 0) params.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(job.rlimit, UINT32_MAX)));
    opt.set(params);
    opt.push();
    AddUnaryCosts(r, job.vars, z);
    AddPairCosts(r, z);
    const std::vector<bool> cut_added = AddCuts(r, job.problem, job.vars, z);
    z3::check_result result = opt.check();
    if (result == z3::unsat) {
      opt.pop();
      if (std::find(cut_added.begin(), cut_added.end(), true) != cut_added.end()) {
        return absl::FailedPreconditionError("placement: no assignment keeps every device within its capacity");
      }
      return absl::InternalError("placement: a component without forbidden-only variables is unsatisfiable");
    }
    z3::model model = opt.get_model();
    job.optimal = result == z3::sat;
    job.lower = ProvenLowerBound(z);
    absl::Status read = ReadDevices(r, job.vars, model, z, job.device);
    opt.pop();
    if (!read.ok()) return read;
    return CheckCuts(r, job.problem, cut_added, job.device);
  } catch (const z3::exception& e) {
    // Interrupted, past its timeout or out of its resource limit, Z3 may throw instead of answering.
    const std::string message = e.msg();
    for (const char* limit : {"cancel", "timeout", "resource", "interrupt"}) {
      if (absl::StrContains(message, limit)) {
        return absl::DeadlineExceededError(
            absl::StrCat("placement: no model within the time limit (Z3: ", message, ")"));
      }
    }
    return absl::InternalError(absl::StrCat("placement: Z3: ", message));
  }
}

// Abandoned solves still running. Exiting while one runs would destroy Z3's static state under it
// (a crash after the program's output): the process then ends at once, with the status it exits
// with and its streams flushed, before the static destructors run (on_exit handlers registered
// after Z3's statics were made run before those are destroyed).
std::mutex abandoned_mutex;
int abandoned_running = 0;

void EndWithoutStaticDestructors(int status, void*) {
  {
    std::lock_guard<std::mutex> lock(abandoned_mutex);
    if (abandoned_running == 0) return;
  }
  std::fflush(nullptr);  // std::cout and std::cerr write through stdio (synced by default)
  std::_Exit(status);
}

void Abandon(Z3Job& job, std::thread& thread) {
  static const bool registered = on_exit(EndWithoutStaticDestructors, nullptr) == 0;
  (void)registered;
  {
    std::lock_guard<std::mutex> lock(abandoned_mutex);
    ++abandoned_running;
  }
  job.abandoned = true;  // under job.mutex: the thread reads it when it finishes
  thread.detach();
}

void RunJob(const std::shared_ptr<Z3Job>& job) {
  {
    z3::context ctx;
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      job->running = &ctx;
    }
    absl::Status status = Solve(ctx, *job);
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      job->running = nullptr;
      job->status = std::move(status);
      job->answered = true;
    }
    job->changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->finished = true;
    if (job->abandoned) {
      std::lock_guard<std::mutex> count(abandoned_mutex);
      --abandoned_running;
    }
  }
  job->changed.notify_all();
}

}  // namespace

absl::Status SolveComponent(const Reduced& r, const PlacementModel& problem, const std::vector<uint32_t>& vars,
                            const Z3Limits& limits, std::vector<int>& device, bool& optimal, Cost& lower) {
  auto job = std::make_shared<Z3Job>();
  job->r = r;
  job->problem = problem;
  job->vars = vars;
  job->seconds = limits.seconds;
  job->rlimit = limits.rlimit;
  job->device = device;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, limits.seconds) + kZ3DeadlineMargin);
  std::thread thread(RunJob, job);
  std::unique_lock<std::mutex> lock(job->mutex);
  if (!job->changed.wait_until(lock, deadline, [&] { return job->answered; })) {
    if (job->running != nullptr) job->running->interrupt();
    job->changed.wait_for(lock, std::chrono::duration<double>(kZ3DeadlineMargin), [&] { return job->answered; });
  }
  // A context that takes past the deadline to delete is left to its thread.
  const bool finished = job->answered && job->changed.wait_until(lock, deadline, [&] { return job->finished; });
  const bool answered = job->answered;
  if (!finished) Abandon(*job, thread);
  lock.unlock();
  if (finished) thread.join();
  if (!answered) {
    return absl::DeadlineExceededError(
        "placement: no placement within the time limit (Z3 did not stop at it; its solve was abandoned)");
  }
  // The thread writes nothing more once answered.
  if (!job->status.ok()) return job->status;
  device = job->device;
  optimal = job->optimal;
  lower = job->lower;
  return absl::OkStatus();
}

}  // namespace vdev::planner_internal
