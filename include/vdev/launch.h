// `vdev launch -n N -- PROGRAM ARGS`: starts N workers of one session on this host.
//
// Makes a private rendezvous directory (mkdtemp, mode 0700), starts the workers with
// VDEV_RANK / VDEV_WORLD_SIZE / VDEV_LOCAL_RANK / VDEV_RENDEZVOUS / VDEV_SESSION_ID set, and waits.
// When a worker fails, it is reported by rank and pid; the others are given `grace` to notice (their
// own waits are bounded) and are then killed. Afterwards the directory and any shared-memory segment
// of the session (`/dev/shm/vdev-<session id>-*`) are removed, whatever happened. SIGINT, SIGTERM
// or SIGHUP to the launcher stops the job: the workers get SIGTERM, then SIGKILL 2 s later.
#ifndef VDEV_LAUNCH_H_
#define VDEV_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "vdev/session.h"

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

// A fresh random session id (16 hex digits) for SessionOptions::session_id.
std::string NewSessionId();

// Removes the shared-memory segments of a session (`/dev/shm/vdev-<session id>-*`), e.g. those of
// a worker killed between creating a segment and sharing it. An empty id removes nothing.
void RemoveSessionSegments(absl::string_view session_id);

}  // namespace vdev

#endif  // VDEV_LAUNCH_H_
