#include "sandbox/write_watch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "base/pass_fd.h"
#include "sandbox/landlock.h"
#include "sandbox/paths.h"
#include "sandbox/prepared.h"
#include "sandbox/seccomp.h"

namespace ae::sandbox {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kNativeArch = 0;  // unknown here: every notification is read as native
#endif

bool RetryIoctl(int fd, unsigned long request, void* arg) {
  for (;;) {
    if (::ioctl(fd, request, arg) == 0) return true;
    if (errno != EINTR) return false;
  }
}

// A NUL-terminated string at `addr` in `pid`'s memory, read page by page so an unmapped page
// after the terminator does not fail the read. False when unreadable or longer than PATH_MAX
// (the kernel refuses such a path anyway).
bool ReadString(pid_t pid, uint64_t addr, std::string* out) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  out->clear();
  if (addr == 0) return false;
  char buf[PATH_MAX];
  while (out->size() < PATH_MAX) {
    size_t want = std::min(page - static_cast<size_t>(addr % page), PATH_MAX - out->size());
    iovec local = {buf, want};
    iovec remote = {reinterpret_cast<void*>(addr), want};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    if (const void* nul = std::memchr(buf, '\0', static_cast<size_t>(n))) {
      out->append(buf, static_cast<size_t>(static_cast<const char*>(nul) - buf));
      return true;
    }
    out->append(buf, static_cast<size_t>(n));
    addr += static_cast<uint64_t>(n);
  }
  return false;
}

// Where a relative path of `pid` starts: its working directory or the directory `dirfd` names,
// as the kernel names it (no symlinks), into *out. False when that is not a directory path (a
// pipe, a deleted directory) or unreadable. No allocation once *out has grown.
bool BaseDir(pid_t pid, int dirfd, std::string* out) {
  char link[64];
  if (dirfd == AT_FDCWD) {
    std::snprintf(link, sizeof link, "/proc/%d/cwd", static_cast<int>(pid));
  } else {
    std::snprintf(link, sizeof link, "/proc/%d/fd/%d", static_cast<int>(pid), dirfd);
  }
  out->resize(PATH_MAX);
  ssize_t n = ::readlink(link, out->data(), out->size());
  if (n <= 0 || static_cast<size_t>(n) >= out->size() || (*out)[0] != '/') {
    out->clear();
    return false;
  }
  out->resize(static_cast<size_t>(n));
  if (out->ends_with(" (deleted)")) {
    out->clear();
    return false;
  }
  return true;
}

// One component: a name in the directory it is relative to.
bool IsPlainName(std::string_view raw) {
  return !raw.empty() && raw != "." && raw != ".." && raw.find('/') == std::string_view::npos;
}

// Where the call lands, as the kernel resolves it: every symlink followed, except a last
// component the call acts on itself (unlink, rename, mkdir, O_NOFOLLOW): then only its parent
// is resolved. Empty when the walk passed through /proc, whose links (/proc/self, fd/N)
// resolved here would name agentexec's own files, or when the last component is "." or "..".
// `in_base`: `path` is a plain name in a directory the kernel named (BaseDir), so only the
// name itself can be a symlink: the common case of a build's writes, resolved with at most one
// lstat instead of one per component.
std::string WhereItLands(const std::string& path, bool follows, bool in_base) {
  if (in_base) {
    const size_t slash = path.rfind('/');
    if (IsUnder(std::string_view(path).substr(0, slash == 0 ? 1 : slash), "/proc")) return "";
    struct stat st {};
    if (!follows || ::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  }
  bool via_proc = false;
  std::string resolved;
  if (follows) {
    resolved = ResolvePath(path, &via_proc);
  } else {
    std::string_view p = path;
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    const size_t slash = p.rfind('/');
    const std::string_view last = p.substr(slash + 1);
    if (last.empty() || last == "." || last == "..") return "";
    resolved = ResolvePath(p.substr(0, slash == 0 ? 1 : slash), &via_proc);
    if (resolved.size() > 1) resolved += '/';
    resolved += last;
  }
  if (via_proc || IsUnder(resolved, "/proc")) return "";
  return resolved;
}

}  // namespace

WriteWatch::WriteWatch(const PreparedSandbox* sandbox, bool writes) {
  if (sandbox == nullptr) return;
  const WatchPlan& plan = PreparedWatch(*sandbox);
  if (plan.policy.unrestricted()) return;
  proxy_port_ = plan.policy.proxy_port;
  if (!writes && proxy_port_ == 0) return;
  sandbox_ = sandbox;
  // The write-intent calls' program carries the network's too when proxied; without it (this
  // kernel, or the watch switched off) the network's alone, which leaves writes unwatched.
  writes_ = writes && plan.program != nullptr;
  program_ = writes_ ? plan.program : plan.network_program;
  // The mount plan makes those read-only that exist when the command starts; one created
  // later by the command itself is its own, and writable.
  for (const std::string& carveout : plan.carveouts) {
    if (::access(carveout.c_str(), F_OK) == 0) carveouts_.push_back(carveout);
  }
  if (program_ == nullptr) {
    evidence_.unavailable = plan.unavailable;
    return;
  }
  seccomp_notif_sizes sizes = {};
  if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
    evidence_.unavailable = fmt::format("SECCOMP_GET_NOTIF_SIZES failed: {}", std::strerror(errno));
    return;
  }
  request_.resize(std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  response_.resize(std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    evidence_.unavailable = fmt::format("socketpair failed: {}", std::strerror(errno));
    return;
  }
  parent_.reset(fds[0]);
  child_.reset(fds[1]);
  stop_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!stop_) {
    evidence_.unavailable = fmt::format("eventfd failed: {}", std::strerror(errno));
    parent_.reset();
    child_.reset();
    return;
  }
  try {
    thread_ = std::thread([this] { Serve(); });
  } catch (const std::system_error& e) {
    // Without its thread the watch is not installed at all (child_fd() is -1): a notified
    // call nobody answers would hang the command.
    evidence_.unavailable = std::string("could not start the watch thread: ") + e.what();
    parent_.reset();
    child_.reset();
  }
}

WriteWatch::~WriteWatch() {
  Finish();
}

WriteEvidence WriteWatch::Finish() {
  if (finished_) return evidence_;
  finished_ = true;
  child_.reset();
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  return evidence_;
}

bool WriteWatch::ReceiveListener(Fd* listener) {
  pollfd fds[2] = {{parent_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
  for (;;) {
    int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (fds[0].revents == 0 && fds[1].revents != 0)) {
      evidence_.unavailable = "the command ended before its sandbox was set up";
      return false;
    }
    if (fds[0].revents != 0) break;
  }
  int32_t code = 0;
  const ssize_t n = ReceiveDescriptor(parent_.get(), 0, &code, listener);
  parent_.reset();
  if (n == static_cast<ssize_t>(sizeof code) && code == 0 && *listener) return true;
  listener->reset();
  evidence_.unavailable =
      n != static_cast<ssize_t>(sizeof code)
          ? "the sandbox's setup ended before the watch was installed"
          : fmt::format("installing the watch's seccomp filter failed: {}", std::strerror(code));
  return false;
}

void WriteWatch::Serve() {
  Fd listener;
  if (!ReceiveListener(&listener)) return;
  evidence_.watched = writes_;
  // Each notification is a round trip the command waits for: on Linux 6.6 and later, make it
  // a direct switch between the two rather than two wake-ups across CPUs. Older kernels say
  // EINVAL and keep the ordinary wake-ups.
  ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  pollfd fds[2] = {{listener.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
  for (;;) {
    int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return;
    // Notifications first: a command blocked in one waits for this thread.
    if ((fds[0].revents & POLLIN) != 0) {
      HandleOne(listener.get());
      continue;
    }
    // POLLHUP: no process is left under the filter.
    if (fds[0].revents != 0 || fds[1].revents != 0) return;
  }
}

void WriteWatch::HandleOne(int listener) {
  std::memset(request_.data(), 0, request_.size());
  auto* req = reinterpret_cast<seccomp_notif*>(request_.data());
  // ENOENT: the caller was killed before we got to it; nothing to answer.
  if (!RetryIoctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req)) return;
  ++evidence_.notifications;
  if (proxy_port_ != 0 && (kNativeArch == 0 || req->data.arch == kNativeArch)) {
    if (const seccomp::NetworkCall net = seccomp::FindNetworkCall(req->data.nr);
        net != seccomp::NetworkCall::kNone) {
      HandleNetwork(listener, req, net);
      return;
    }
  }

  // The command waits from here to NOTIF_SEND: only what must be read while it is stopped
  // (its memory, its directory) is read here, into buffers reused from call to call.
  const seccomp::WatchedCall* call = kNativeArch == 0 || req->data.arch == kNativeArch
                                         ? seccomp::FindWatchedCall(req->data.nr)
                                         : nullptr;
  const pid_t pid = static_cast<pid_t>(req->pid);
  bool in_base[2] = {false, false};
  for (std::string& path : paths_) path.clear();
  for (int i = 0; call != nullptr && i < 2 && call->path[i] >= 0; ++i) {
    std::string& raw = raw_;
    if (!ReadString(pid, req->data.args[call->path[i]], &raw)) continue;
    if (!raw.empty() && raw.front() == '/') {
      paths_[i] = raw;
      continue;
    }
    // The descriptor argument is an int; the register's upper half is not part of it.
    const int dirfd = call->dirfd[i] < 0
                          ? AT_FDCWD
                          : static_cast<int>(static_cast<uint32_t>(req->data.args[call->dirfd[i]]));
    if (!BaseDir(pid, dirfd, &paths_[i])) continue;
    // Not normalised: ".." after a symlink is resolved as the kernel does (ResolvePath).
    if (raw.empty()) continue;  // AT_EMPTY_PATH: the dirfd itself
    in_base[i] = IsPlainName(raw);
    if (paths_[i].size() > 1) paths_[i] += '/';
    paths_[i] += raw;
  }
  bool follows = call != nullptr && call->follows;
  if (follows && call->flags_arg >= 0) {
    const auto flags = static_cast<uint32_t>(req->data.args[call->flags_arg]);
    // O_EXCL with O_CREAT fails on a symlink instead of following it.
    if ((flags & O_NOFOLLOW) != 0 || (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
      follows = false;
    }
  }
  bool valid = false;
  Answer(listener, req->id, &valid);

  // Checked after the answer: the command waits only for the read above.
  if (!valid || call == nullptr) return;
  for (int i = 0; i < 2; ++i) {
    if (!paths_[i].empty()) Record(paths_[i], *call, follows, in_base[i]);
  }
}

void WriteWatch::Answer(int listener, uint64_t id, bool* valid) {
  std::memset(response_.data(), 0, response_.size());
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(response_.data());
  resp->id = id;
  resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  // The answer is accepted only while the call is still pending (ENOENT once the caller was
  // killed or interrupted): the caller then stayed blocked in it from NOTIF_RECV to here, so
  // what was read above is its memory and its directory, not those of a process that reused
  // the pid. The check SECCOMP_IOCTL_NOTIF_ID_VALID makes, without a system call of its own
  // in the round trip the command waits for.
  *valid = RetryIoctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);
}

void WriteWatch::HandleNetwork(int listener, const void* request, seccomp::NetworkCall call) {
  const auto* req = static_cast<const seccomp_notif*>(request);
  const auto pid = static_cast<pid_t>(req->pid);
  DirectAttempt attempt;
  uint64_t args[6];
  std::copy(std::begin(req->data.args), std::end(req->data.args), args);
  // Read while the caller waits; /proc/PID/net is its namespace's only while it is alive.
  bool record = ReadDestination(pid, call, args, &attempt) &&
                !(attempt.loopback && ServedInside(pid, attempt, proxy_port_, &table_));
  bool valid = false;
  Answer(listener, req->id, &valid);
  if (!valid || !record) return;
  ++evidence_.direct_total;
  if (evidence_.direct.size() < kMaxDirect &&
      std::find(evidence_.direct.begin(), evidence_.direct.end(), attempt) ==
          evidence_.direct.end()) {
    evidence_.direct.push_back(attempt);
  }
}

bool WriteWatch::Refuses(const std::string& target, const seccomp::WatchedCall& call) const {
  const WatchPlan& plan = PreparedWatch(*sandbox_);
  if (landlock::GrantsDeviceWrite(target)) return false;
  if (!plan.dev_shm.empty() && IsUnder(target, plan.dev_shm)) return false;
  // Landlock alone does not refuse metadata changes, nor truncate before ABI 3.
  if (!plan.mount_namespace && (call.metadata || plan.landlock_abi < call.min_landlock_abi)) {
    return false;
  }
  if (plan.policy.mode == Mode::kReadOnly) return true;
  if (!IsUnderAny(target, plan.policy.writable_roots)) return true;
  return plan.mount_namespace && IsUnderAny(target, carveouts_);
}

void WriteWatch::Record(const std::string& path, const seccomp::WatchedCall& call, bool follows,
                        bool in_base) {
  const std::string target = WhereItLands(path, follows, in_base);
  if (target.empty() || !Refuses(target, call)) return;
  if (std::find(evidence_.refused.begin(), evidence_.refused.end(), target) !=
      evidence_.refused.end()) {
    return;
  }
  ++evidence_.refused_total;
  if (evidence_.refused.size() < kMaxRecorded) evidence_.refused.push_back(target);
}

}  // namespace ae::sandbox
