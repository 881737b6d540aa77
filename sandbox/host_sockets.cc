#include "sandbox/host_sockets.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/fd.h"
#include "sandbox/step.h"

namespace ae::sandbox {
namespace {

// Container runtimes and the system bus: root on the host, or close to it. Their server may
// live in another network namespace (a socket bind-mounted into a container), where
// /proc/net/unix does not list it.
constexpr const char* kWellKnown[] = {
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/var/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
};

// Parses one line of /proc/net/unix: "Num: RefCount Protocol Flags Type St Inode[ Path]".
void VisitLine(char* line, SocketVisitor visit, void* ctx) noexcept {
  char* p = line;
  unsigned long inode = 0;
  for (int field = 0; field < 7; ++field) {
    while (*p == ' ') ++p;
    if (*p == '\0') return;
    char* start = p;
    while (*p != ' ' && *p != '\0') ++p;
    if (field == 0 && p[-1] != ':') return;  // the header ("Num ...")
    if (field == 6) {
      for (char* d = start; d < p; ++d) {
        if (*d < '0' || *d > '9') return;
        inode = inode * 10 + static_cast<unsigned long>(*d - '0');
      }
    }
  }
  if (*p != ' ' || p[1] != '/') return;  // unbound, abstract ("@...") or relative
  visit(ctx, inode, p + 1);
}

struct HideContext {
  const HostSocketPlan* plan;
  const char* failed_step = nullptr;
  int err = 0;
};

// A read-only, nodev, noexec /dev/null over `path` (a symlink to the socket is followed).
// False with errno on failure; a path gone meanwhile is not one.
bool Cover(const char* path) noexcept {
  int fd = static_cast<int>(
      ::syscall(SYS_open_tree, AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (fd < 0) return false;
  struct mount_attr attr = {};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  bool ok = ::syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr) == 0 &&
            ::syscall(SYS_move_mount, fd, "", AT_FDCWD, path,
                      MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS) == 0;
  int saved = errno;
  ::close(fd);
  errno = saved;
  return ok || saved == ENOENT;
}

// Only a socket is covered: what the line names may have been replaced by anything since.
void HideIfSocket(HideContext* c, const char* path, bool always) noexcept {
  if (c->failed_step != nullptr) return;
  struct stat st;
  if (::stat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  if (!always) {
    struct statfs fs;
    const bool read_only = ::statfs(path, &fs) == 0 && (fs.f_flags & ST_RDONLY) != 0;
    if (!read_only) return;
  }
  if (!Cover(path)) {
    c->failed_step = "hide a host Unix socket";
    c->err = errno;
  }
}

void HideVisitor(void* ctx, unsigned long inode, const char* path) {
  auto* c = static_cast<HideContext*>(ctx);
  const std::vector<unsigned long>& snapshot = c->plan->snapshot;
  HideIfSocket(c, path, std::binary_search(snapshot.begin(), snapshot.end(), inode));
}

void SnapshotVisitor(void* ctx, unsigned long inode, const char*) {
  static_cast<std::vector<unsigned long>*>(ctx)->push_back(inode);
}

}  // namespace

// Its own read loop rather than base/read_file: the child may not allocate, so lines are
// parsed from a fixed buffer as they arrive, in the parent and in the child alike.
bool ForEachPathSocket(int fd, SocketVisitor visit, void* ctx) noexcept {
  char buf[8192];
  size_t len = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf + len, sizeof buf - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    len += static_cast<size_t>(n);
    buf[len] = '\0';
    size_t start = 0;
    for (char* nl; (nl = static_cast<char*>(std::memchr(buf + start, '\n', len - start)));) {
      *nl = '\0';
      VisitLine(buf + start, visit, ctx);
      start = static_cast<size_t>(nl - buf) + 1;
    }
    if (n == 0) {
      if (start < len) VisitLine(buf + start, visit, ctx);
      return true;
    }
    // A line longer than the buffer (the kernel's are under 200 bytes) is dropped.
    if (start == 0 && len == sizeof buf - 1) len = 0;
    std::memmove(buf, buf + start, len - start);
    len -= start;
  }
}

Result<HostSocketPlan> PlanHostSockets(const Policy& policy, bool mount_namespace) {
  HostSocketPlan plan;
  if (!mount_namespace || policy.network_access || policy.unrestricted()) return plan;
  plan.enabled = true;
  Fd fd(::open("/proc/net/unix", O_RDONLY | O_CLOEXEC));
  if (!fd || !ForEachPathSocket(fd.get(), SnapshotVisitor, &plan.snapshot)) {
    return MakeError(fmt::format(
        "sandbox: cannot list the host's Unix sockets (/proc/net/unix: {})", std::strerror(errno)));
  }
  std::sort(plan.snapshot.begin(), plan.snapshot.end());
  plan.snapshot.erase(std::unique(plan.snapshot.begin(), plan.snapshot.end()), plan.snapshot.end());
  for (const char* path : kWellKnown) plan.well_known.push_back(path);
  return plan;
}

bool HideHostSockets(const HostSocketPlan& plan, const char** failed_step, int* err) noexcept {
  if (!plan.enabled) return true;
  HideContext ctx{&plan};
  for (const std::string& path : plan.well_known) HideIfSocket(&ctx, path.c_str(), true);
  int fd = ::open("/proc/net/unix", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FailStep("open /proc/net/unix", failed_step, err);
  bool read_ok = ForEachPathSocket(fd, HideVisitor, &ctx);
  int saved = errno;
  ::close(fd);
  if (!read_ok) {
    errno = saved;
    return FailStep("read /proc/net/unix", failed_step, err);
  }
  if (ctx.failed_step != nullptr) {
    *failed_step = ctx.failed_step;
    *err = ctx.err;
    return false;
  }
  return true;
}

}  // namespace ae::sandbox
