// OutputDir (run_output_dir.h): the outputs' directory, its signal-time removal and the sweep.
#include "run_output_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace vdev::cli {
namespace {

constexpr char kPrefix[] = "vdev-run-";
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

// The process's start time (field 22 of /proc/PID/stat), or 0 when it does not exist. Fields
// follow the command name, which is in parentheses and may hold both: they start after the last ')'.
unsigned long long StartTime(pid_t pid) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream text;
  text << file.rdbuf();
  const std::string stat = text.str();
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(paren + 1), ' ', absl::SkipEmpty());
  unsigned long long start = 0;  // fields[0] is field 3 (the state)
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &start)) return 0;
  return start;
}

// The directory being removed by the signal handler: a fixed buffer, as the handler may not allocate.
char temporary_path[PATH_MAX] = {};
struct sigaction previous_actions[std::size(kCleanupSignals)];

// Removes the entries of directory `fd` and, below them, up to `depth` levels of subdirectories,
// with system calls only (getdents64, unlinkat): safe in a signal handler. The outputs are
// DIR/rank<k>/output<i>.npy, two levels.
void RemoveEntries(int fd, int depth) {
  alignas(8) char buffer[4096];
  // Entries removed while the directory is read may make the reading skip others: read it again
  // while a pass removes something.
  for (bool removed = true; removed;) {
    removed = false;
    lseek(fd, 0, SEEK_SET);
    long got = 0;
    while ((got = syscall(SYS_getdents64, fd, buffer, sizeof buffer)) > 0) {
      for (long at = 0; at < got;) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(buffer + at);
        at += entry->d_reclen;
        const char* name = entry->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
        if (unlinkat(fd, name, 0) == 0) {
          removed = true;
          continue;
        }
        const int child = depth > 0 ? openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (child < 0) continue;
        RemoveEntries(child, depth - 1);
        close(child);
        removed |= unlinkat(fd, name, AT_REMOVEDIR) == 0;
      }
    }
  }
}

void RemoveOnSignal(int sig) {
  const int saved = errno;
  if (temporary_path[0] != '\0') {
    const int fd = open(temporary_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      RemoveEntries(fd, 2);
      close(fd);
    }
    rmdir(temporary_path);
  }
  // The signal is blocked while its handler runs: raised again, it is delivered with its default
  // action (the end of the process, with the signal's status) as soon as the handler returns.
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved;
}

void InstallHandlers(const std::string& path) {
  std::memcpy(temporary_path, path.c_str(), path.size() + 1);
  struct sigaction action = {};
  action.sa_handler = RemoveOnSignal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kCleanupSignals); ++i) {
    sigaction(kCleanupSignals[i], nullptr, &previous_actions[i]);
    // A signal the caller ignores (nohup's SIGHUP) stays ignored: it ends nothing.
    if (previous_actions[i].sa_handler == SIG_IGN) continue;
    sigaction(kCleanupSignals[i], &action, nullptr);
  }
}

void RestoreHandlers() {
  for (size_t i = 0; i < std::size(kCleanupSignals); ++i) sigaction(kCleanupSignals[i], &previous_actions[i], nullptr);
  temporary_path[0] = '\0';
}

// Whether the controller named in `name` (vdev-run-<pid>-<start>-XXXXXX) is gone; false when the
// name is not of that form.
bool OwnerIsGone(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kPrefix)) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(name, '-');
  pid_t pid = 0;
  unsigned long long start = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &pid) || !absl::SimpleAtoi(parts[1], &start) || pid <= 0) {
    return false;
  }
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // That pid lives: it is another process only if its start time is known and differs.
  const unsigned long long now_start = StartTime(pid);
  return start != 0 && now_start != 0 && now_start != start;
}

}  // namespace

int SweepStaleRunDirs(const std::string& parent) {
  int removed = 0;
  std::error_code error;
  for (const std::filesystem::directory_entry& entry : std::filesystem::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    struct stat info = {};
    if (!OwnerIsGone(name) || lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != geteuid()) {
      continue;
    }
    std::error_code ignored;  // another run's sweep may be removing it too
    if (std::filesystem::remove_all(entry.path(), ignored) > 0) ++removed;
  }
  return removed;
}

absl::StatusOr<OutputDir> OutputDir::Make(const std::string& requested) {
  OutputDir dir;
  if (!requested.empty()) {
    std::error_code error;
    std::filesystem::create_directories(requested, error);
    if (error) return absl::InvalidArgumentError(absl::StrCat("--outputs ", requested, ": ", error.message()));
    // Made and removed again now, so that a directory nothing can be written to fails the run
    // before the workers compute anything.
    std::string probe = absl::StrCat(requested, "/.vdev-probe-XXXXXX");
    if (mkdtemp(probe.data()) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--outputs ", requested, ": cannot write in this directory: ", std::strerror(errno)));
    }
    rmdir(probe.c_str());
    dir.path_ = requested;
    return dir;
  }
  const std::string parent = std::filesystem::temp_directory_path().string();
  SweepStaleRunDirs(parent);
  std::string pattern = absl::StrCat(parent, "/", kPrefix, getpid(), "-", StartTime(getpid()), "-XXXXXX");
  if (pattern.size() >= PATH_MAX || mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot make a temporary directory in ", parent, ": ", std::strerror(errno)));
  }
  dir.path_ = pattern;
  dir.temporary_ = true;
  InstallHandlers(dir.path_);
  return dir;
}

OutputDir::OutputDir(OutputDir&& other) noexcept : path_(std::move(other.path_)), temporary_(other.temporary_) {
  other.temporary_ = false;
}

OutputDir::~OutputDir() {
  if (!temporary_) return;
  RestoreHandlers();
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace vdev::cli
