// The session's control channel: a star of Unix stream sockets around worker 0.
//
// Every message is a frame (fixed header + tag + payload). Worker 0 gathers the members'
// contributions with one poll() over all sockets, so the first worker to die or stall is the one
// reported, and a closed socket (the kernel closes it when a process dies) is noticed at once.
#include "vdev/runtime/peer_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

constexpr char kSocketName[] = "session.sock";
constexpr uint32_t kMagic = 0x76646576;  // "vdev"

enum class FrameKind : uint32_t { kHello = 1, kRoster, kContribution, kResult, kAbort };

struct FrameHeader {
  uint32_t magic;
  FrameKind kind;
  int32_t from;
  uint32_t tag_len;
  uint64_t seq;
  uint64_t payload_len;
};

struct Frame {
  FrameHeader header;
  std::string tag;
  std::string payload;
};

std::string ErrnoText() { return std::strerror(errno); }

int RemainingMs(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

absl::Status WriteAll(int fd, const void* data, size_t len, absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLOUT, 0};
      int ms = RemainingMs(deadline);
      if (ms == 0) return absl::DeadlineExceededError("timed out sending to a peer");
      poll(&pfd, 1, ms);
      continue;
    }
    return absl::UnavailableError(absl::StrCat("connection lost: ", ErrnoText()));
  }
  return absl::OkStatus();
}

// Reads exactly len bytes; a clean EOF is reported as NotFound so callers can name the dead peer.
absl::Status ReadAll(int fd, void* data, size_t len, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    pollfd pfd{fd, POLLIN, 0};
    int ms = RemainingMs(deadline);
    if (ms == 0) return absl::DeadlineExceededError("timed out reading from a peer");
    int r = poll(&pfd, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = recv(fd, p, len, 0);
    if (n == 0) return absl::NotFoundError("connection closed");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return absl::NotFoundError("connection reset");
      return absl::UnavailableError(absl::StrCat("read failed: ", ErrnoText()));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SendFrame(int fd, FrameKind kind, int from, uint64_t seq, absl::string_view tag, absl::string_view payload,
                       absl::Time deadline) {
  FrameHeader h{kMagic, kind, from, static_cast<uint32_t>(tag.size()), seq, payload.size()};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof(h));
  buf.append(tag.data(), tag.size());
  buf.append(payload.data(), payload.size());
  return WriteAll(fd, buf.data(), buf.size(), deadline);
}

absl::Status ReadFrame(int fd, absl::Time deadline, Frame* frame) {
  VDEV_RETURN_IF_ERROR(ReadAll(fd, &frame->header, sizeof(frame->header), deadline));
  if (frame->header.magic != kMagic || frame->header.tag_len > 4096 ||
      frame->header.payload_len > (uint64_t{1} << 32)) {
    return absl::DataLossError("malformed frame on the session channel");
  }
  frame->tag.resize(frame->header.tag_len);
  frame->payload.resize(frame->header.payload_len);
  VDEV_RETURN_IF_ERROR(ReadAll(fd, frame->tag.data(), frame->tag.size(), deadline));
  return ReadAll(fd, frame->payload.data(), frame->payload.size(), deadline);
}

void AppendU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

bool ReadU64(absl::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  std::memcpy(v, in->data(), 8);
  in->remove_prefix(8);
  return true;
}

// Packs strings as (length, bytes)*.
std::string PackStrings(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& s : parts) {
    AppendU64(&out, s.size());
    out += s;
  }
  return out;
}

bool UnpackStrings(absl::string_view in, size_t count, std::vector<std::string>* parts) {
  parts->clear();
  for (size_t i = 0; i < count; ++i) {
    uint64_t len = 0;
    if (!ReadU64(&in, &len) || in.size() < len) return false;
    parts->emplace_back(in.substr(0, len));
    in.remove_prefix(len);
  }
  return in.empty();
}

absl::Status CheckPrivateDirectory(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("rendezvous directory ", dir, ": ", ErrnoText()));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("rendezvous path ", dir, " is not a directory"));
  }
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("rendezvous directory ", dir, " must be owned by this user with mode 0700"));
  }
  return absl::OkStatus();
}

absl::StatusOr<sockaddr_un> SocketAddress(const std::string& dir) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = dir + "/" + kSocketName;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous path too long for a socket: ", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

std::string RandomSessionId() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Describe(int rank, pid_t pid) {
  return pid > 0 ? absl::StrCat("worker ", rank, " (pid ", pid, ")") : absl::StrCat("worker ", rank);
}

absl::StatusOr<int> EnvInt(const char* name) {
  const char* v = std::getenv(name);
  int out = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &out)) {
    return absl::InvalidArgumentError(absl::StrCat("environment variable ", name, " is not an integer"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PeerGroup>> PeerGroup::Create(const PeerGroupOptions& options) {
  if (options.world_size < 1 || options.world_size > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("world size ", options.world_size, " is outside 1..", kMaxWorkers));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", options.rank, " is outside 0..", options.world_size - 1));
  }
  VDEV_RETURN_IF_ERROR(CheckPrivateDirectory(options.rendezvous_dir));
  std::unique_ptr<PeerGroup> session(new PeerGroup(options));
  VDEV_RETURN_IF_ERROR(session->Join());
  return session;
}

absl::StatusOr<PeerGroupOptions> PeerGroup::OptionsFromEnvironment() {
  PeerGroupOptions options;
  if (const char* t = std::getenv(kEnvTimeoutMs)) {
    int ms = 0;
    if (!absl::SimpleAtoi(t, &ms) || ms <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(kEnvTimeoutMs, "=", t, " is not a positive integer"));
    }
    options.timeout = absl::Milliseconds(ms);
  }
  if (std::getenv(kEnvRank) != nullptr) {
    VDEV_ASSIGN_OR_RETURN(options.rank, EnvInt(kEnvRank));
    VDEV_ASSIGN_OR_RETURN(options.world_size, EnvInt(kEnvWorldSize));
    options.local_rank = std::getenv(kEnvLocalRank) ? EnvInt(kEnvLocalRank).value_or(options.rank) : options.rank;
    const char* dir = std::getenv(kEnvRendezvous);
    if (dir == nullptr) return absl::InvalidArgumentError(absl::StrCat(kEnvRendezvous, " is not set"));
    options.rendezvous_dir = dir;
    if (const char* id = std::getenv(kEnvSessionId)) options.session_id = id;
    return options;
  }
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    VDEV_ASSIGN_OR_RETURN(options.rank, EnvInt("OMPI_COMM_WORLD_RANK"));
    VDEV_ASSIGN_OR_RETURN(options.world_size, EnvInt("OMPI_COMM_WORLD_SIZE"));
    options.local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")
                             ? EnvInt("OMPI_COMM_WORLD_LOCAL_RANK").value_or(options.rank)
                             : options.rank;
    const char* job = std::getenv("PMIX_NAMESPACE");
    if (job == nullptr) job = std::getenv("OMPI_MCA_ess_base_jobid");
    if (job == nullptr) job = std::getenv("OMPI_MCA_orte_ess_jobid");
    if (job == nullptr) {
      return absl::FailedPreconditionError(
          "started by mpirun but no job id (PMIX_NAMESPACE) found; set VDEV_RENDEZVOUS");
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
    options.rendezvous_dir =
        absl::StrCat(base, "/vdev-", geteuid(), "-", std::hash<std::string>{}(job)&0xffffffffffffULL);
    // Worker 0 makes the directory (and removes it at the end); the others wait for it.
    if (options.rank == 0 && mkdir(options.rendezvous_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", options.rendezvous_dir, ": ", ErrnoText()));
    }
    options.remove_rendezvous_dir = options.rank == 0;
    absl::Time deadline = absl::Now() + options.timeout;
    while (!CheckPrivateDirectory(options.rendezvous_dir).ok() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return options;
  }
  return absl::FailedPreconditionError(
      "not started as a worker: neither VDEV_RANK (vdev launch) nor OMPI_COMM_WORLD_RANK (mpirun) is set");
}

absl::StatusOr<std::unique_ptr<PeerGroup>> PeerGroup::FromEnvironment() {
  VDEV_ASSIGN_OR_RETURN(PeerGroupOptions options, OptionsFromEnvironment());
  return Create(options);
}

PeerGroup::~PeerGroup() {
  for (int fd : peer_fds_) {
    if (fd >= 0) close(fd);
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (options_.remove_rendezvous_dir) rmdir(options_.rendezvous_dir.c_str());
}

absl::Status PeerGroup::Join() {
  pids_.assign(options_.world_size, 0);
  pids_[options_.rank] = getpid();
  if (options_.world_size == 1) {
    if (options_.session_id.empty()) options_.session_id = RandomSessionId();
    return absl::OkStatus();
  }
  return options_.rank == 0 ? JoinAsLeader() : JoinAsMember();
}

absl::Status PeerGroup::JoinAsLeader() {
  VDEV_ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(options_.rendezvous_dir));
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return absl::InternalError(absl::StrCat("socket: ", ErrnoText()));
  unlink(addr.sun_path);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listen_fd_, kMaxWorkers) != 0) {
    return absl::InternalError(absl::StrCat("listen on ", addr.sun_path, ": ", ErrnoText()));
  }
  chmod(addr.sun_path, 0600);
  if (options_.session_id.empty()) options_.session_id = RandomSessionId();
  peer_fds_.assign(options_.world_size, -1);
  int joined = 1;
  absl::Time deadline = absl::Now() + options_.timeout;
  while (joined < options_.world_size) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    int ms = RemainingMs(deadline);
    if (ms == 0) break;
    if (poll(&pfd, 1, ms) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Frame hello;
    absl::Status s = ReadFrame(fd, absl::Now() + absl::Seconds(2), &hello);
    uint64_t world = 0, pid = 0;
    absl::string_view in = hello.payload;
    int r = hello.header.from;
    if (!s.ok() || hello.header.kind != FrameKind::kHello || !ReadU64(&in, &world) || !ReadU64(&in, &pid) || r <= 0 ||
        r >= options_.world_size || world != static_cast<uint64_t>(options_.world_size) || peer_fds_[r] >= 0) {
      std::string why = s.ok() ? absl::StrCat("a worker claiming rank ", r, " of ", world,
                                              " does not fit this session of ", options_.world_size)
                               : std::string(s.message());
      close(fd);
      for (int& other : peer_fds_) {
        if (other >= 0) SendFrame(other, FrameKind::kAbort, 0, 0, "", why, deadline).IgnoreError();
      }
      return absl::FailedPreconditionError(why);
    }
    peer_fds_[r] = fd;
    pids_[r] = static_cast<pid_t>(pid);
    ++joined;
  }
  unlink(addr.sun_path);  // nobody else may join this session
  close(listen_fd_);
  listen_fd_ = -1;
  std::string roster;
  AppendU64(&roster, options_.session_id.size());
  roster += options_.session_id;
  for (pid_t p : pids_) AppendU64(&roster, static_cast<uint64_t>(p));
  if (joined < options_.world_size) {
    std::vector<std::string> missing;
    for (int r = 1; r < options_.world_size; ++r) {
      if (peer_fds_[r] < 0) missing.push_back(absl::StrCat(r));
    }
    std::string why = absl::StrCat("worker(s) ", absl::StrJoin(missing, ", "), " did not join within ",
                                   absl::FormatDuration(options_.timeout));
    for (int fd : peer_fds_) {
      if (fd >= 0) SendFrame(fd, FrameKind::kAbort, 0, 0, "", why, deadline).IgnoreError();
    }
    return absl::DeadlineExceededError(why);
  }
  for (int r = 1; r < options_.world_size; ++r) {
    VDEV_RETURN_IF_ERROR(SendFrame(peer_fds_[r], FrameKind::kRoster, 0, 0, "", roster, absl::Now() + options_.timeout));
  }
  return absl::OkStatus();
}

absl::Status PeerGroup::JoinAsMember() {
  VDEV_ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(options_.rendezvous_dir));
  absl::Time deadline = absl::Now() + options_.timeout;
  int fd = -1;
  while (true) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", ErrnoText()));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    close(fd);
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("worker 0 did not open the session at ", addr.sun_path,
                                                      " within ", absl::FormatDuration(options_.timeout)));
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  peer_fds_.assign(1, fd);
  std::string hello;
  AppendU64(&hello, options_.world_size);
  AppendU64(&hello, static_cast<uint64_t>(getpid()));
  VDEV_RETURN_IF_ERROR(SendFrame(fd, FrameKind::kHello, options_.rank, 0, "", hello, deadline));
  Frame roster;
  absl::Status s = ReadFrame(fd, deadline + options_.timeout, &roster);
  if (!s.ok()) return absl::UnavailableError(absl::StrCat("joining the session: ", s.message()));
  if (roster.header.kind == FrameKind::kAbort) return absl::FailedPreconditionError(roster.payload);
  absl::string_view in = roster.payload;
  uint64_t id_len = 0;
  if (roster.header.kind != FrameKind::kRoster || !ReadU64(&in, &id_len) || in.size() < id_len) {
    return absl::DataLossError("malformed roster from worker 0");
  }
  options_.session_id = std::string(in.substr(0, id_len));
  in.remove_prefix(id_len);
  for (int r = 0; r < options_.world_size; ++r) {
    uint64_t pid = 0;
    if (!ReadU64(&in, &pid)) return absl::DataLossError("malformed roster from worker 0");
    pids_[r] = static_cast<pid_t>(pid);
  }
  return absl::OkStatus();
}

absl::Status PeerGroup::CheckAlive(int rank) const {
  pid_t pid = pids_[rank];
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  std::getline(stat_file, stat);
  size_t paren = stat.rfind(')');
  // Gone, or a zombie nobody reaped yet: either way it will never take part again.
  if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z' || stat[paren + 2] == 'X') {
    return absl::UnavailableError(absl::StrCat(Describe(rank, pid), " is gone (exited or killed)"));
  }
  return absl::OkStatus();
}

// A member's part of AllGather: sends `mine` to worker 0 and reads everyone's parts back.
absl::Status PeerGroup::AllGatherAsMember(absl::string_view tag, absl::string_view mine, uint64_t seq,
                                          absl::Time deadline, const std::string& call, std::vector<std::string>* all) {
  const int n = options_.world_size;
  absl::Status s = SendFrame(peer_fds_[0], FrameKind::kContribution, options_.rank, seq, tag, mine, deadline);
  Frame reply;
  if (s.ok()) s = ReadFrame(peer_fds_[0], deadline + options_.timeout, &reply);
  if (!s.ok()) {
    broken_ = true;
    absl::Status alive = CheckAlive(0);
    return absl::UnavailableError(
        absl::StrCat(call, ": lost ", Describe(0, pids_[0]), ": ", alive.ok() ? s.message() : alive.message()));
  }
  if (reply.header.kind == FrameKind::kAbort) {
    broken_ = true;
    return absl::AbortedError(absl::StrCat(call, ": ", reply.payload));
  }
  if (reply.header.kind != FrameKind::kResult || !UnpackStrings(reply.payload, n, all)) {
    broken_ = true;
    return absl::DataLossError(absl::StrCat(call, ": malformed reply from worker 0"));
  }
  return absl::OkStatus();
}

// Worker 0's part of AllGather: reads every pending member's part into `all`, from everyone at
// once, so the first failure seen is a real one. Returns why the gather failed, or "".
std::string PeerGroup::GatherAtLeader(absl::string_view tag, uint64_t seq, absl::Time deadline, const std::string& call,
                                      std::vector<bool>* pending_out, std::vector<std::string>* all) {
  const int n = options_.world_size;
  std::vector<bool>& pending = *pending_out;
  int left = n - 1;
  std::string failure;
  while (left > 0 && failure.empty()) {
    std::vector<pollfd> pfds;
    std::vector<int> ranks;
    for (int r = 1; r < n; ++r) {
      if (pending[r]) {
        pfds.push_back({peer_fds_[r], POLLIN, 0});
        ranks.push_back(r);
      }
    }
    int ms = RemainingMs(deadline);
    if (ms == 0) {
      std::vector<std::string> late;
      for (int r : ranks) {
        absl::Status alive = CheckAlive(r);
        late.push_back(alive.ok() ? absl::StrCat(Describe(r, pids_[r]), " did not reach ", call, " within ",
                                                 absl::FormatDuration(options_.timeout))
                                  : std::string(alive.message()));
      }
      failure = absl::StrJoin(late, "; ");
      break;
    }
    int ready = poll(pfds.data(), pfds.size(), std::min(ms, 100));
    if (ready <= 0) continue;
    for (size_t i = 0; i < pfds.size() && failure.empty(); ++i) {
      if (pfds[i].revents == 0) continue;
      int r = ranks[i];
      Frame frame;
      absl::Status s = ReadFrame(peer_fds_[r], deadline, &frame);
      if (!s.ok()) {
        failure = absl::StrCat(Describe(r, pids_[r]), " left the session (exited or was killed) before ", call);
      } else if (frame.header.kind != FrameKind::kContribution || frame.tag != tag || frame.header.seq != seq) {
        failure = absl::StrCat("workers disagree: worker 0 called ", call, " but worker ", r, " called ", frame.tag,
                               " #", frame.header.seq);
      } else {
        (*all)[r] = std::move(frame.payload);
        pending[r] = false;
        --left;
      }
    }
  }
  return failure;
}

// Worker 0, after a failed gather: tells the members still there why, and fails the session.
absl::Status PeerGroup::AbortAllGather(absl::string_view tag, uint64_t seq, const std::string& call,
                                       const std::string& failure, const std::vector<bool>& pending) {
  const int n = options_.world_size;
  broken_ = true;
  // Take in what the live members already sent: closing a socket with unread data resets it, and
  // the reset would destroy the abort message below before they read it.
  const absl::Time drain_until = absl::Now() + absl::Milliseconds(200);
  for (int r = 1; r < n; ++r) {
    Frame ignored;
    if (pending[r]) ReadFrame(peer_fds_[r], drain_until, &ignored).IgnoreError();
  }
  for (int r = 1; r < n; ++r) {
    SendFrame(peer_fds_[r], FrameKind::kAbort, 0, seq, tag, failure, absl::Now() + absl::Seconds(1)).IgnoreError();
  }
  return absl::AbortedError(absl::StrCat(call, ": ", failure));
}

absl::Status PeerGroup::AllGather(absl::string_view tag, absl::string_view mine, std::vector<std::string>* all) {
  const int n = options_.world_size;
  if (broken_) return absl::FailedPreconditionError("the session failed earlier and cannot be used");
  const uint64_t seq = ++sequence_;
  all->assign(n, std::string());
  (*all)[options_.rank] = std::string(mine);
  if (n == 1) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + options_.timeout;
  std::string call = absl::StrCat(tag, " #", seq);
  if (options_.rank != 0) return AllGatherAsMember(tag, mine, seq, deadline, call, all);
  std::vector<bool> pending(n, true);
  pending[0] = false;
  const std::string failure = GatherAtLeader(tag, seq, deadline, call, &pending, all);
  if (!failure.empty()) return AbortAllGather(tag, seq, call, failure, pending);
  std::string packed = PackStrings(*all);
  for (int r = 1; r < n; ++r) {
    absl::Status s = SendFrame(peer_fds_[r], FrameKind::kResult, 0, seq, tag, packed, deadline);
    if (!s.ok()) {
      broken_ = true;
      return absl::UnavailableError(absl::StrCat(call, ": lost ", Describe(r, pids_[r]), ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status PeerGroup::Barrier(absl::string_view tag) {
  std::vector<std::string> ignored;
  return AllGather(tag, "", &ignored);
}

}  // namespace vdev
