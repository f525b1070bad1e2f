// The guardian: a process outside a job that cleans up after an owner killed with SIGKILL, which
// runs no code of the owner. It blocks on a socket whose other end only the owner holds; end of file
// without the owner's "done" byte means the owner is gone, so it kills the workers, waits for them
// to end (they could still create what it removes), removes the job's directory and the session's
// shared-memory segments, and says so on stderr.
//
// Used by `vdev launch` and by controller sessions (`vdev run`): a worker killed between creating a
// segment and sharing it leaves the name behind, and only a process outside the job can remove it.
//
// The guardian is forked from a process that may have other threads (a controller in a user's
// program), so after fork it makes system calls only: everything it needs is prepared before.
#ifndef VDEV_SRC_GUARDIAN_GUARDIAN_H_
#define VDEV_SRC_GUARDIAN_GUARDIAN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vdev::internal {

struct GuardianDuty {
  pid_t process_group = 0;     // killed with SIGKILL when > 0
  std::vector<pid_t> workers;  // the owner's unreaped children: killed and waited for (2 s at most)
  std::string directory;       // removed with the files in it, when not empty
  std::string session_id;      // /dev/shm/vdev-<session id>-* removed, when not empty
  std::string farewell;        // one line written to stderr after the clean-up, when not empty
};

// Owns a running guardian. Dismiss (or destruction) tells it the owner ended normally and cleaned
// up itself; the guardian then exits without doing anything, and Dismiss reaps it.
class Guardian {
 public:
  static absl::StatusOr<Guardian> Start(const GuardianDuty& duty);

  Guardian(Guardian&& other) noexcept : done_fd_(other.done_fd_), pid_(other.pid_) {
    other.done_fd_ = -1;
    other.pid_ = -1;
  }
  Guardian& operator=(Guardian&& other) noexcept;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  ~Guardian() { Dismiss(); }

  void Dismiss();
  pid_t pid() const { return pid_; }

 private:
  Guardian(int done_fd, pid_t pid) : done_fd_(done_fd), pid_(pid) {}
  int done_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace vdev::internal

#endif  // VDEV_SRC_GUARDIAN_GUARDIAN_H_
