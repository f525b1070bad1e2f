// `vdev launch -n N -- PROGRAM ARGS`: starts N workers of one session on this host.
//
// Makes a private rendezvous directory (mkdtemp, mode 0700), starts the workers with
// VDEV_RANK / VDEV_WORLD_SIZE / VDEV_LOCAL_RANK / VDEV_RENDEZVOUS / VDEV_SESSION_ID set, and waits.
// When a worker fails, it is reported by rank and pid; the others are given `grace` to notice (their
// own waits are bounded) and are then killed. Afterwards the directory and any shared-memory segment
// of the session (`/dev/shm/vdev-<session id>-*`) are removed, whatever happened.
//
// The job's processes go together:
// - The workers form one process group of their own (worker 0's pid), so their children
//   (`sh -c 'prog'`) are signalled with them; whatever is still running in the group when the
//   last worker ends is killed with the job.
// - SIGINT, SIGTERM or SIGHUP to the launcher stops the job: the group gets SIGTERM, then SIGKILL
//   2 s later. (The group is not the terminal's foreground group: Ctrl-C reaches the launcher,
//   which passes it on; a worker reading the terminal would be stopped by SIGTTIN.)
// - A launcher killed outright (SIGKILL) takes the job along: each worker has PR_SET_PDEATHSIG
//   (SIGKILL), and a guardian process (outside the group, ignoring the terminal's signals) that
//   sees the launcher vanish kills the group and removes the rendezvous directory and segments.
// - SIGPIPE is ignored by the launcher while the job runs (`vdev launch ... 2>&1 | head` does not
//   kill it); the workers get the disposition the launcher's caller had.
// The exit status names the worker that ended first: exits are watched with pidfds, so the launcher
// wakes at the first one; exits seen in one wake-up put a worker killed by a signal before one that
// exited with a status (its peers fail because of it), then go by rank.
// Launch forks: call it from a single-threaded process (PR_SET_PDEATHSIG follows the forking thread).
#ifndef VDEV_LAUNCH_H_
#define VDEV_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vdev/runtime/peer_group.h"

namespace vdev {

struct LaunchOptions {
  int num_workers = 1;
  std::vector<std::string> argv;  // PROGRAM ARGS
  absl::Duration grace = kDefaultPeerTimeout + absl::Seconds(4);
};

// Returns the job's exit status: 0 when every worker exited 0, otherwise the first failing worker's
// exit code (128 + signal number when it was killed; 128 + the signal that stopped the launcher).
// Errors are for failures to start at all.
absl::StatusOr<int> Launch(const LaunchOptions& options);

// A fresh random session id (16 hex digits) for PeerGroupOptions::session_id.
std::string NewSessionId();

// Removes the shared-memory segments of a session (`/dev/shm/vdev-<session id>-*`), e.g. those of
// a worker killed between creating a segment and sharing it. An empty id removes nothing.
void RemoveSessionSegments(absl::string_view session_id);

}  // namespace vdev

#endif  // VDEV_LAUNCH_H_
