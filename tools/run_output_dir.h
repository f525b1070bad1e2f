// Where `vdev run`'s workers write their outputs: the directory of --outputs, or a temporary one
// that no way of ending the run leaves behind.
//
// A temporary directory is named vdev-run-<pid>-<start>-XXXXXX after its controller (its pid and
// the start time of that process, in clock ticks since boot, from /proc/PID/stat). It goes:
//   - when the run ends, with the OutputDir;
//   - on SIGINT, SIGTERM, SIGHUP, SIGQUIT or SIGPIPE: a handler removes it (system calls only:
//     the signal may come in the middle of anything) and the signal then takes its default course;
//   - after SIGKILL, which runs nothing of ours, at the next temporary directory made by any
//     `vdev run` of the same user: the sweep removes every vdev-run-* directory whose controller
//     (that pid with that start time) no longer exists. A live run's directory is never touched,
//     whether the run is this user's or not; a pid reused since is told apart by its start time.
#ifndef VDEV_TOOLS_RUN_OUTPUT_DIR_H_
#define VDEV_TOOLS_RUN_OUTPUT_DIR_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vdev::cli {

class OutputDir {
 public:
  // `requested` empty: a temporary directory (after the sweep). Otherwise `requested`, created if
  // need be and refused unless a file can be made in it (before any worker computes anything).
  static absl::StatusOr<OutputDir> Make(const std::string& requested);

  OutputDir(OutputDir&& other) noexcept;
  OutputDir& operator=(OutputDir&&) = delete;
  ~OutputDir();
  const std::string& path() const { return path_; }

 private:
  OutputDir() = default;
  std::string path_;
  bool temporary_ = false;
};

// Removes the vdev-run-* directories under `parent` whose controllers are gone; returns how many.
int SweepStaleRunDirs(const std::string& parent);

}  // namespace vdev::cli

#endif  // VDEV_TOOLS_RUN_OUTPUT_DIR_H_
