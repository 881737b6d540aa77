#include "sandbox/mounts.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandbox/paths.h"
#include "sandbox/step.h"

namespace ae::sandbox {
namespace {

int OpenTree(const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, path, flags));
}

int MoveMountTo(int from_fd, const char* to) {
  return static_cast<int>(
      ::syscall(SYS_move_mount, from_fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH));
}

int SetAttr(int dirfd, const char* path, unsigned flags, unsigned long long set) {
  struct mount_attr attr = {};
  attr.attr_set = set;
  return static_cast<int>(
      ::syscall(SYS_mount_setattr, dirfd, path, flags | AT_RECURSIVE, &attr, sizeof attr));
}

int SetReadOnly(int dirfd, const char* path, unsigned flags) {
  return SetAttr(dirfd, path, flags, MOUNT_ATTR_RDONLY);
}

// Onto the very directory (or file) `to_fd` was opened on: no path is looked up again.
int MoveMountOnto(int from_fd, int to_fd) {
  return static_cast<int>(::syscall(SYS_move_mount, from_fd, "", to_fd, "",
                                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
}

// O_PATH, the last component not followed, and no symlink on the way either (the path comes
// from a /proc/self/fd link, so a symlink in it was planted since): where openat2 is missing,
// O_NOFOLLOW alone (the identity check below still holds).
int OpenNoFollow(const char* path) noexcept {
  struct open_how how = {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
  if (fd < 0 && errno == ENOSYS) fd = ::open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  return fd;
}

bool Gone(int fd) noexcept {
  struct stat st;
  return ::fstat(fd, &st) == 0 && st.st_nlink == 0;
}

// How often a held carve-out may move between reading its link and opening the path before
// the command's set-up fails closed.
constexpr int kLocateTries = 8;

// The link of a held descriptor into `buf` (NUL-terminated); its length, or -1 with errno.
ssize_t ReadLink(const HeldCarveout& held, char* buf, size_t size) noexcept {
  ssize_t n = ::readlink(held.fd_link.c_str(), buf, size - 1);
  if (n == static_cast<ssize_t>(size - 1)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (n >= 0) buf[n] = '\0';
  return n;
}

// Whether the mount `mnt_id` is in the namespace `mountinfo` (an open /proc/self/mountinfo)
// was opened in: a line starts with that id. Reads from the start; false on a read error, so
// a caller that cannot tell treats the mount as attached and fails closed.
bool MountListed(int mountinfo, unsigned long long mnt_id, bool* listed) noexcept {
  *listed = false;
  if (::lseek(mountinfo, 0, SEEK_SET) != 0) return false;
  char buf[4096];
  bool line_start = true;
  bool in_id = false;
  unsigned long long id = 0;
  for (;;) {
    ssize_t n = ::read(mountinfo, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (line_start) {
        line_start = false;
        in_id = true;
        id = 0;
      }
      if (in_id && c >= '0' && c <= '9') {
        id = id * 10 + static_cast<unsigned long long>(c - '0');
      } else if (in_id) {
        in_id = false;
        if (c == ' ' && id == mnt_id) {
          *listed = true;
          return true;
        }
      }
      if (c == '\n') line_start = true;
    }
  }
}

// Whether `held`'s mount has been detached from the session's namespace (umount -l; dockerd
// does it to a container's mounts when the container stops): no command can reach its inode
// then, since each command's namespace is copied from the session's. `mountinfo` is that
// namespace's list, opened before unshare; -1 when it could not be: then nothing is assumed.
bool Detached(const HeldCarveout& held, int mountinfo) noexcept {
  if (mountinfo < 0) return false;
  struct statx stx {};
  if (::statx(held.fd.get(), "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0 ||
      (stx.stx_mask & STATX_MNT_ID) == 0) {
    return false;
  }
  bool listed = true;
  return MountListed(mountinfo, stx.stx_mnt_id, &listed) && !listed;
}

// Where `held` is now, opened in this mount namespace: *found its descriptor, or -1 when its
// inode is gone (nothing left to protect), lies outside our root (`root`, the link of "/",
// empty when that is the namespace's root) or on a detached mount, where no command can reach
// it. False with errno when it cannot be found.
bool LocateHeld(const HeldCarveout& held, const char* root, size_t root_len, int mountinfo,
                int* found) noexcept {
  *found = -1;
  char link[4096];
  for (int attempt = 0; attempt < kLocateTries; ++attempt) {
    if (Gone(held.fd.get())) return true;
    if (ReadLink(held, link, sizeof link) < 0) return false;
    if (std::strncmp(link, root, root_len) != 0 || link[root_len] != '/') return true;
    int fd = OpenNoFollow(link + root_len);
    if (fd < 0) continue;  // moved (or removed) since the link was read: look again
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_dev == held.dev && st.st_ino == held.ino) {
      *found = fd;
      return true;
    }
    ::close(fd);
  }
  if (Gone(held.fd.get()) || Detached(held, mountinfo)) return true;
  errno = EAGAIN;  // it keeps moving: fail closed rather than leave it writable
  return false;
}

// A read-only copy of what `target` (a descriptor of this namespace) is, mounted onto it. A
// target removed meanwhile is skipped: true, nothing mounted.
bool MountReadOnlyOnto(int target, const char* fake_vanish) noexcept {
  int fd = static_cast<int>(
      ::syscall(SYS_open_tree, target, "",
                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH));
  if (fd < 0) return Gone(target);
  if (fake_vanish != nullptr) ::rmdir(fake_vanish);
  bool ok = SetReadOnly(fd, "", AT_EMPTY_PATH) == 0 && MoveMountOnto(fd, target) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok && Gone(target)) return true;
  errno = saved;
  return ok;
}

bool WriteFile(const char* path, const std::string& text) noexcept {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::write(fd, text.data(), text.size());
  int saved = errno;
  ::close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(text.size());
}

// A descriptor the child still finds by number: never 0-2, which the spawner's child replaces
// with its stdio before the mounts (agentexec may have been started with them closed).
Fd HoldPath(const char* path, int flags) {
  Fd fd(::open(path, flags));
  if (fd.valid() && fd.get() <= 2) fd = Fd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3));
  return fd;
}

void AddUniquePath(std::vector<std::string>& list, const std::string& path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

}  // namespace

bool HaveSysAdmin() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

std::string PrivateDevShmPath(const Policy& policy) {
  if (policy.unrestricted()) return "";
  std::string path = ResolvePath("/dev/shm");
  if (::access(path.c_str(), F_OK) != 0) return "";
  if (IsUnderAny(path, policy.writable_roots)) return "";
  for (const std::string& root : policy.writable_roots) {
    if (IsUnder(root, path)) return "";
  }
  return path;
}

namespace {

// The run's own /tmp on /tmp (MountPlan::private_tmp), unless /tmp is a writable root or lies
// below one (the user gave it to commands) or the whole tree is writable.
void AddPrivateTmp(const Policy& policy, MountPlan* plan) {
  if (policy.private_tmp.empty() || !plan->read_only_tree) return;
  const std::string tmp = ResolvePath("/tmp");
  struct stat st {};
  if (::stat(tmp.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  for (const std::string& root : policy.writable_roots) {
    if (root != policy.private_tmp && IsUnder(tmp, root)) return;
  }
  std::vector<std::string> kept;
  for (const std::string& root : policy.writable_roots) {
    if (root == policy.private_tmp || root == tmp || !IsUnder(root, tmp)) continue;
    const size_t end = root.find('/', tmp.size() + 1);
    AddUniquePath(kept, root.substr(0, end));
  }
  if (kept.size() > kMaxWritableRoots) return;
  plan->private_tmp = policy.private_tmp;
  plan->tmp = tmp;
  plan->tmp_kept = std::move(kept);
  for (const std::string& path : plan->tmp_kept) {
    plan->tmp_kept_steps.push_back("keep " + path + " in the run's private /tmp");
  }
}

// In the child: the run's own /tmp on /tmp, and the kept entries of the host's back in it.
bool MountPrivateTmp(const MountPlan& plan, const char** failed_step, int* err) noexcept {
  if (plan.private_tmp.empty()) return true;
  // Copies of the kept entries first (with the writable roots already in place inside them),
  // while the host's /tmp is still in sight.
  int kept_fds[kMaxWritableRoots];
  for (size_t i = 0; i < plan.tmp_kept.size(); ++i) {
    kept_fds[i] =
        OpenTree(plan.tmp_kept[i].c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (kept_fds[i] < 0 && errno != ENOENT) {
      return FailStep(plan.tmp_kept_steps[i].c_str(), failed_step, err);
    }
  }
  const int own = OpenTree(plan.private_tmp.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (own < 0 || MoveMountTo(own, plan.tmp.c_str()) != 0) {
    return FailStep("mount the run's private /tmp on /tmp", failed_step, err);
  }
  ::close(own);
  for (size_t i = 0; i < plan.tmp_kept.size(); ++i) {
    if (kept_fds[i] < 0) continue;
    // The mount point is made in the run's own /tmp; whatever an earlier command of the run
    // left at that name (a file, a symlink) makes way, a directory is mounted over.
    const char* path = plan.tmp_kept[i].c_str();
    struct stat st {};
    if (::lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) ::unlink(path);
    if ((::mkdir(path, 0700) != 0 && errno != EEXIST) || MoveMountTo(kept_fds[i], path) != 0) {
      return FailStep(plan.tmp_kept_steps[i].c_str(), failed_step, err);
    }
    ::close(kept_fds[i]);
  }
  return true;
}

// Every root is its own mount in the child, and so is every directory between a root and a
// root nested in it (a workspace under /tmp): a mount point cannot be renamed or removed, so a
// command cannot move the workspace away and plant a fresh `.git` at its path. The price, as
// with codex's bubblewrap: renaming a file from /tmp into such a workspace gives EXDEV, as
// between two file systems.
void AddWritableRoots(const Policy& policy, MountPlan* plan) {
  for (const std::string& root : policy.writable_roots) {
    AddUniquePath(plan->writable_roots, root);
    std::string outer;
    for (const std::string& other : policy.writable_roots) {
      if (other != root && IsUnder(root, other) && other.size() > outer.size()) outer = other;
    }
    if (outer.empty()) continue;
    for (size_t slash = root.find('/', outer.size() + 1); slash != std::string::npos;
         slash = root.find('/', slash + 1)) {
      AddUniquePath(plan->writable_roots, root.substr(0, slash));
    }
  }
  // The directories between a root and a protected path (Policy::pinned), pinned the same
  // way: a command cannot rename one to take the protected path along and make a new one.
  for (const std::string& dir : policy.pinned) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      AddUniquePath(plan->writable_roots, dir);
  }
  std::stable_sort(plan->writable_roots.begin(), plan->writable_roots.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
}

// Only the carve-outs under a writable root: elsewhere they are read-only already.
void AddCarveouts(const Policy& policy, MountPlan* plan) {
  for (const std::string& carveout : policy.read_only_carveouts) {
    std::string target = ResolvePath(carveout);
    if (!IsUnderAny(target, policy.writable_roots)) continue;
    if (std::find(plan->carveouts.begin(), plan->carveouts.end(), target) !=
        plan->carveouts.end()) {
      continue;
    }
    plan->carveouts.push_back(target);
  }
}

void AddPrivateDevShm(const Policy& policy, MountPlan* plan) {
  plan->dev_shm = PrivateDevShmPath(policy);
  if (plan->dev_shm.empty()) return;
  // As large as the host's /dev/shm, so nothing that fits outside fails inside; pages are
  // only used when written, and charged to the command's memory cgroup.
  unsigned long long size = 64ULL << 20;
  struct statvfs st;
  if (::statvfs(plan->dev_shm.c_str(), &st) == 0 && st.f_blocks > 0) {
    size = static_cast<unsigned long long>(st.f_blocks) * st.f_frsize;
  }
  plan->dev_shm_options = "size=" + std::to_string(size) + ",mode=1777";
}

// The host's terminals stay out of reach unless the policy hands the user /dev itself.
void AddPrivateDevpts(const Policy& policy, MountPlan* plan) {
  struct stat pts {
  }, ptmx{};
  if (::stat("/dev/pts", &pts) == 0 && S_ISDIR(pts.st_mode) &&
      !IsUnderAny("/dev/pts", policy.writable_roots) && ::lstat("/dev/ptmx", &ptmx) == 0) {
    plan->private_devpts = true;
    plan->bind_ptmx = !S_ISLNK(ptmx.st_mode);
  }
}

void NameSteps(MountPlan* plan) {
  for (const std::string& root : plan->writable_roots) {
    plan->root_steps.push_back("keep writable root " + root);
  }
  for (const std::string& carveout : plan->carveouts) {
    plan->carveout_steps.push_back(std::string(kCarveoutStep) + carveout);
  }
}

std::string HoldError(const Policy& policy, const std::string& carveout, int hold_errno) {
  struct rlimit limit {};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return fmt::format(
      "sandbox: {} read-only paths are held open, one descriptor each, and {} ({}): {} "
      "cannot be held; raise the open-file limit (ulimit -n, now {}) and run again",
      policy.read_only_carveouts.size(),
      hold_errno == EMFILE ? "the open-file limit is reached" : "the system's file table is full",
      std::strerror(hold_errno), carveout, static_cast<unsigned long long>(limit.rlim_cur));
}

// Each carve-out that exists now, held by identity (HeldCarveout), and "/" with the first.
void HoldCarveouts(const Policy& policy, MountPlan* plan) {
  for (const std::string& carveout : plan->carveouts) {
    HeldCarveout& held = plan->held.emplace_back();
    held.fd = HoldPath(carveout.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    const int hold_errno = errno;
    if (!held.fd.valid() && (hold_errno == EMFILE || hold_errno == ENFILE) &&
        plan->hold_error.empty()) {
      plan->hold_error = HoldError(policy, carveout, hold_errno);
    }
    struct stat st;
    if (!held.fd.valid() || ::fstat(held.fd.get(), &st) != 0) {
      held.fd.reset();  // absent now: protected by path when it appears
      continue;
    }
    held.dev = st.st_dev;
    held.ino = st.st_ino;
    held.fd_link = "/proc/self/fd/" + std::to_string(held.fd.get());
    if (!plan->root.fd.valid()) {
      plan->root.fd = HoldPath("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (plan->root.fd.valid()) {
        plan->root.fd_link = "/proc/self/fd/" + std::to_string(plan->root.fd.get());
      }
    }
  }
}

}  // namespace

MountPlan BuildMountPlan(const Policy& policy, bool enabled, bool pid_namespace) {
  MountPlan plan;
  if (!enabled || policy.unrestricted()) return plan;
  plan.enabled = true;
  plan.new_user_ns = !HaveSysAdmin();
  plan.new_pid_ns = pid_namespace;
  plan.uid_map = std::to_string(::geteuid()) + " " + std::to_string(::geteuid()) + " 1\n";
  plan.gid_map = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1\n";
  // A writable "/" would be stacked over the process's own root directory, which keeps
  // pointing at the read-only copy: then only the carve-outs are made read-only.
  plan.read_only_tree = std::find(policy.writable_roots.begin(), policy.writable_roots.end(),
                                  "/") == policy.writable_roots.end();
  if (plan.read_only_tree) AddWritableRoots(policy, &plan);
  AddCarveouts(policy, &plan);
  AddPrivateTmp(policy, &plan);
  AddPrivateDevShm(policy, &plan);
  AddPrivateDevpts(policy, &plan);
  NameSteps(&plan);
  HoldCarveouts(policy, &plan);
  return plan;
}

namespace {

// --- In the child: system calls only ----------------------------------------------------

// A new mount namespace (and PID namespace when asked), in a user namespace of its own when
// agentexec lacks CAP_SYS_ADMIN.
bool EnterNamespaces(const MountPlan& plan, const char** failed_step, int* err) noexcept {
  const int pid_ns = plan.new_pid_ns ? CLONE_NEWPID : 0;
  if (!plan.new_user_ns) {
    if (::unshare(CLONE_NEWNS | pid_ns) != 0) return FailStep("unshare", failed_step, err);
    return true;
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | pid_ns) != 0) {
    return FailStep("unshare", failed_step, err);
  }
  // An unprivileged process may map only itself, and only once setgroups is denied.
  if (!WriteFile("/proc/self/setgroups", "deny")) {
    return FailStep("write /proc/self/setgroups", failed_step, err);
  }
  if (!WriteFile("/proc/self/uid_map", plan.uid_map)) {
    return FailStep("write /proc/self/uid_map", failed_step, err);
  }
  if (!WriteFile("/proc/self/gid_map", plan.gid_map)) {
    return FailStep("write /proc/self/gid_map", failed_step, err);
  }
  return true;
}

// Detached copies of the writable roots, taken while they still have their own flags (a
// read-only volume inside a root stays read-only); -1 for a root that is gone.
bool CloneWritableRoots(const MountPlan& plan, int* root_fds, const char** failed_step,
                        int* err) noexcept {
  if (plan.writable_roots.size() > kMaxWritableRoots) {
    errno = E2BIG;
    return FailStep("too many writable roots", failed_step, err);
  }
  for (size_t i = 0; i < plan.writable_roots.size(); ++i) {
    root_fds[i] = OpenTree(plan.writable_roots[i].c_str(),
                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    // A root removed since the session started (an --add-dir a command deleted) has
    // nothing left to keep writable; failing every later command would be worse.
    if (root_fds[i] < 0 && errno != ENOENT) {
      return FailStep(plan.root_steps[i].c_str(), failed_step, err);
    }
    // Set-id bits and file capabilities grant nothing when executed from a writable root
    // (seccomp refuses setting the bits; see seccomp.h).
    if (root_fds[i] >= 0 && SetAttr(root_fds[i], "", AT_EMPTY_PATH, MOUNT_ATTR_NOSUID) != 0) {
      return FailStep(plan.root_steps[i].c_str(), failed_step, err);
    }
  }
  return true;
}

// The copies CloneWritableRoots took, mounted back at their paths over the read-only tree.
bool PutBackWritableRoots(const MountPlan& plan, const int* root_fds, const char** failed_step,
                          int* err) noexcept {
  for (size_t i = 0; i < plan.writable_roots.size(); ++i) {
    if (root_fds[i] < 0) continue;
    if (MoveMountTo(root_fds[i], plan.writable_roots[i].c_str()) != 0) {
      return FailStep(plan.root_steps[i].c_str(), failed_step, err);
    }
    ::close(root_fds[i]);
  }
  return true;
}

// POSIX shared memory and semaphores (Python's multiprocessing locks, pytest-xdist, pools)
// need a writable /dev/shm; a fresh tmpfs keeps them off the host's. No exec, as Docker's.
bool MountDevShm(const MountPlan& plan, bool* dev_shm_mounted, const char** failed_step,
                 int* err) noexcept {
  if (plan.dev_shm.empty()) return true;
  if (::mount("tmpfs", plan.dev_shm.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              plan.dev_shm_options.c_str()) == 0) {
    *dev_shm_mounted = true;
  } else if (errno != ENOENT) {  // gone since the plan was made: stays absent
    return FailStep("mount a private tmpfs on /dev/shm", failed_step, err);
  }
  return true;
}

bool MountDevpts(const MountPlan& plan, const char** failed_step, int* err) noexcept {
  if (!plan.private_devpts) return true;
  // mode=0620 as the host's; no gid= option: the tty group may not be mapped in a user
  // namespace, and the default (the mounter's group) always is.
  if (::mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") == 0) {
    if (plan.bind_ptmx && ::mount("/dev/pts/ptmx", "/dev/ptmx", nullptr, MS_BIND, nullptr) != 0) {
      return FailStep("bind /dev/ptmx to the private devpts", failed_step, err);
    }
  } else if (::mount("tmpfs", "/dev/pts", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                     "size=4k,mode=0755") != 0) {
    // No devpts instance of our own here (some container runtimes): an empty read-only
    // directory still hides the host's terminals. The command's ptys (via /dev/ptmx) then
    // live in the host's instance, reachable only through TIOCGPTPEER, as glibc's openpty
    // opens them.
    return FailStep("mount a private devpts on /dev/pts", failed_step, err);
  }
  return true;
}

// The session's root as a path prefix to take off held links (MountPlan::root): its length
// in *root_len, 0 for "/", -1 when unknown. Without /proc (a bare chroot) held carve-outs
// cannot be found: they are then protected by path, as those that did not exist when the
// session started.
bool FindRoot(const MountPlan& plan, char* root, size_t size, ssize_t* root_len,
              const char** failed_step, int* err) noexcept {
  *root_len = plan.root.fd.valid() ? ReadLink(plan.root, root, size) : -1;
  if (*root_len < 0 && errno != ENOENT && plan.root.fd.valid()) {
    return FailStep("find the root directory's path", failed_step, err);
  }
  if (*root_len == 1) *root_len = 0;  // "/": nothing to take off
  return true;
}

// Carve-out i mounted read-only where its held inode is now and at its path. `root` and
// `root_len` as FindRoot gave them.
bool ProtectCarveout(const MountPlan& plan, size_t i, bool command, const char* root,
                     ssize_t root_len, int mountinfo, const char** failed_step, int* err) noexcept {
  const HeldCarveout& held = plan.held[i];
  const char* fake_vanish =
      command && plan.fake_vanish == plan.carveouts[i] ? plan.fake_vanish.c_str() : nullptr;
  // Where the carve-out is now: a command may have renamed a parent directory (only the
  // carve-out itself is a mount point in its namespace).
  if (held.fd.valid() && root_len >= 0) {
    int here = -1;
    if (!LocateHeld(held, root, static_cast<size_t>(root_len), mountinfo, &here)) {
      return FailStep(plan.carveout_steps[i].c_str(), failed_step, err);
    }
    if (here >= 0) {
      bool ok = MountReadOnlyOnto(here, fake_vanish);
      int saved = errno;
      ::close(here);
      errno = saved;
      if (!ok) return FailStep(plan.carveout_steps[i].c_str(), failed_step, err);
    }
  }
  // And whatever is at its path now (one that did not exist at Prepare, or something put in
  // the place of the one that moved); symlinks followed, as for any path git would use.
  int at_path = ::open(plan.carveouts[i].c_str(), O_PATH | O_CLOEXEC);
  if (at_path < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return true;  // nothing there (yet)
    return FailStep(plan.carveout_steps[i].c_str(), failed_step, err);
  }
  struct stat st;
  bool same = held.fd.valid() && ::fstat(at_path, &st) == 0 && st.st_dev == held.dev &&
              st.st_ino == held.ino;
  bool ok = same || MountReadOnlyOnto(at_path, fake_vanish);
  int saved = errno;
  ::close(at_path);
  errno = saved;
  if (!ok) return FailStep(plan.carveout_steps[i].c_str(), failed_step, err);
  return true;
}

}  // namespace

bool ApplyMountPlan(const MountPlan& plan, bool command, bool* dev_shm_mounted,
                    const char** failed_step, int* err) noexcept {
  *dev_shm_mounted = false;
  if (!plan.enabled) return true;
  // The working directory still refers to the mount it was entered on, which is about to
  // become read-only underneath the writable copy: re-enter it by name at the end.
  char cwd[4096];
  if (::syscall(SYS_getcwd, cwd, sizeof cwd) < 0) return FailStep("getcwd", failed_step, err);
  // The session's list of mounts, opened before unshare so it keeps listing the session's
  // namespace: a held carve-out that cannot be found is looked up there (Detached).
  Fd mountinfo;
  if (plan.root.fd.valid()) mountinfo.reset(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!EnterNamespaces(plan, failed_step, err)) return false;
  // Nothing done below may propagate back to the parent's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return FailStep("make / private", failed_step, err);
  }
  int root_fds[kMaxWritableRoots];
  if (!CloneWritableRoots(plan, root_fds, failed_step, err)) return false;
  if (plan.read_only_tree && SetReadOnly(AT_FDCWD, "/", 0) != 0) {
    return FailStep("make / read-only", failed_step, err);
  }
  if (!PutBackWritableRoots(plan, root_fds, failed_step, err)) return false;
  if (!MountPrivateTmp(plan, failed_step, err)) return false;
  if (!MountDevShm(plan, dev_shm_mounted, failed_step, err)) return false;
  if (!MountDevpts(plan, failed_step, err)) return false;
  char root[4096];
  ssize_t root_len = -1;
  if (!FindRoot(plan, root, sizeof root, &root_len, failed_step, err)) return false;
  for (size_t i = 0; i < plan.carveouts.size(); ++i) {
    if (!ProtectCarveout(plan, i, command, root, root_len, mountinfo.get(), failed_step, err)) {
      return false;
    }
  }
  if (::chdir(cwd) != 0) return FailStep("re-enter the working directory", failed_step, err);
  return true;
}

bool MountProc(const MountPlan& plan, const char** failed_step, int* err) noexcept {
  if (!plan.enabled || !plan.new_pid_ns) return true;
  unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (plan.read_only_tree ? MS_RDONLY : 0);
  if (::mount("proc", "/proc", "proc", flags, nullptr) != 0) {
    return FailStep("mount /proc for the PID namespace", failed_step, err);
  }
  return true;
}

}  // namespace ae::sandbox
