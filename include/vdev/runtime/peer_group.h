// A worker session: the N processes of one job on one host, their ranks, and a control channel.
//
// One process per GPU (or per host-backend worker). The workers meet in a rendezvous directory that
// only their user can enter (mode 0700): worker 0 listens on a Unix socket there, the others connect.
// Over that channel the session offers the two collectives the runtime needs to set memory up —
// `AllGather` of byte strings and `Barrier` — and every wait in it is bounded: a worker that died, or
// never came, is reported by rank (and pid) instead of hanging the others.
//
// Example (inside a program started by `vdev launch -n 4 -- prog` or by `mpirun -n 4 prog`):
//
//   absl::StatusOr<std::unique_ptr<vdev::PeerGroup>> session = vdev::PeerGroup::FromEnvironment();
//   if (!session.ok()) { std::cerr << session.status() << "\n"; return 1; }
//   std::vector<std::string> all;
//   absl::Status s = (*session)->AllGather("hello", std::to_string((*session)->rank()), &all);
#ifndef VDEV_PEER_GROUP_H_
#define VDEV_PEER_GROUP_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace vdev {

// Largest world size the runtime supports (the all-reduce kernels are written for 2..8 peers).
inline constexpr int kMaxWorkers = 8;

// Default bound on every wait for a peer; `VDEV_TIMEOUT_MS` overrides it in FromEnvironment.
inline constexpr absl::Duration kDefaultPeerTimeout = absl::Seconds(8);

// Environment of a worker started by `vdev launch`.
inline constexpr char kEnvRank[] = "VDEV_RANK";
inline constexpr char kEnvWorldSize[] = "VDEV_WORLD_SIZE";
inline constexpr char kEnvLocalRank[] = "VDEV_LOCAL_RANK";
inline constexpr char kEnvRendezvous[] = "VDEV_RENDEZVOUS";
inline constexpr char kEnvSessionId[] = "VDEV_SESSION_ID";
inline constexpr char kEnvTimeoutMs[] = "VDEV_TIMEOUT_MS";

struct PeerGroupOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // Private directory shared by all workers; must exist, be owned by this user and have mode 0700.
  std::string rendezvous_dir;
  // Names shared-memory segments; empty: worker 0 draws a random one and hands it to the others.
  std::string session_id;
  absl::Duration timeout = kDefaultPeerTimeout;
  // Worker 0 removes the (then empty) rendezvous directory when its session ends: set for the
  // directories FromEnvironment makes under mpirun, which no launcher cleans up.
  bool remove_rendezvous_dir = false;
};

class PeerGroup {
 public:
  // Joins the session described by `options`; returns once every worker has joined (or, within
  // `options.timeout`, an error naming the workers that did not).
  static absl::StatusOr<std::unique_ptr<PeerGroup>> Create(const PeerGroupOptions& options);

  // Reads rank and world size from the environment: `VDEV_RANK`/`VDEV_WORLD_SIZE`/`VDEV_RENDEZVOUS`
  // (set by `vdev launch`) or, failing those, Open MPI's `OMPI_COMM_WORLD_RANK`/`_SIZE`/`_LOCAL_RANK`
  // with a rendezvous directory derived from the job id (`PMIX_NAMESPACE` or `OMPI_MCA_ess_base_jobid`).
  static absl::StatusOr<PeerGroupOptions> OptionsFromEnvironment();
  static absl::StatusOr<std::unique_ptr<PeerGroup>> FromEnvironment();

  ~PeerGroup();
  PeerGroup(const PeerGroup&) = delete;
  PeerGroup& operator=(const PeerGroup&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  int local_rank() const { return options_.local_rank; }
  const std::string& session_id() const { return options_.session_id; }
  absl::Duration timeout() const { return options_.timeout; }
  // Bounds the waits of later collectives (and of the executors created after it): a caller may
  // give one phase a tighter bound than the session's start.
  void set_timeout(absl::Duration timeout) { options_.timeout = timeout; }
  pid_t pid(int rank) const { return pids_[rank]; }

  // Every worker contributes `mine`; on success `all[i]` is worker i's contribution. `tag` names the
  // operation: workers that call different operations (or the same one a different number of times)
  // get an error naming both calls instead of exchanging unrelated data.
  absl::Status AllGather(absl::string_view tag, absl::string_view mine, std::vector<std::string>* all);
  absl::Status Barrier(absl::string_view tag);

  // OK while worker `rank` is running; otherwise an error naming it and its pid. Cheap enough to
  // call from a spin loop every millisecond (it reads /proc/PID/stat).
  absl::Status CheckAlive(int rank) const;

 private:
  explicit PeerGroup(PeerGroupOptions options) : options_(std::move(options)) {}
  absl::Status Join();
  absl::Status JoinAsLeader();
  absl::Status JoinAsMember();
  absl::Status AllGatherAsMember(absl::string_view tag, absl::string_view mine, uint64_t seq, absl::Time deadline,
                                 const std::string& call, std::vector<std::string>* all);
  std::string GatherAtLeader(absl::string_view tag, uint64_t seq, absl::Time deadline, const std::string& call,
                             std::vector<bool>* pending, std::vector<std::string>* all);
  absl::Status AbortAllGather(absl::string_view tag, uint64_t seq, const std::string& call, const std::string& failure,
                              const std::vector<bool>& pending);

  PeerGroupOptions options_;
  std::vector<pid_t> pids_;
  int listen_fd_ = -1;
  std::vector<int> peer_fds_;  // worker 0: one per rank (-1 at 0); others: [0] is worker 0
  uint64_t sequence_ = 0;      // collectives called so far
  bool broken_ = false;        // a collective failed: the channel is out of step for good
};

}  // namespace vdev

#endif  // VDEV_PEER_GROUP_H_
