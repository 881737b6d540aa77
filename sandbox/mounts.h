// The mount layer: a private mount namespace in which the whole tree is read-only except the
// writable roots, and the carve-outs (.git, .agentexec) are read-only again inside them.
// Landlock alone cannot do either: it only grants, and it does not cover chmod, chown, utimes
// or xattrs. Built in the parent (paths and map strings as C strings); applied in the child
// with system calls only.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "sandbox/policy.h"

namespace ae::sandbox {

// A carve-out that existed when the session prepared the sandbox, held by identity: the
// descriptor keeps its inode, wherever a command renames a parent directory to, and the child
// finds it there (its /proc/self/fd link names where it is now), opens that path again in the
// new mount namespace and mounts the read-only copy onto what it opened when (dev, ino) match.
struct HeldCarveout {
  Fd fd;  // O_PATH|O_NOFOLLOW|O_CLOEXEC; -1: absent at Prepare
  dev_t dev = 0;
  ino_t ino = 0;
  std::string fd_link;  // "/proc/self/fd/<fd>", made here so the child need not format
};

// The step that mounts a carve-out, "make read-only <path>": a failure there is no evidence
// that the sandbox refused the command anything (denial.cc).
inline constexpr std::string_view kCarveoutStep = "make read-only ";

// Each held carve-out costs agentexec one descriptor for the session, with no count limit:
// one that cannot be held for want of descriptors (EMFILE, ENFILE) is never left protected by
// path alone; the plan says so (MountPlan::hold_error) and the run fails closed.
struct MountPlan {
  bool enabled = false;
  // Why a carve-out that exists could not be held (the open-file limit): the sandbox cannot be
  // what the policy asks, so Prepare and UpdateCarveouts fail with this. Empty: all held.
  std::string hold_error;
  bool new_user_ns = false;  // no CAP_SYS_ADMIN here: unshare a user namespace as well
  // Also unshare a PID namespace (sandbox/containment.h); its init mounts a fresh /proc
  // (MountProc) so pids the command sees and /proc agree.
  bool new_pid_ns = false;
  std::string uid_map;  // "<uid> <uid> 1\n" (mapping ourselves needs no privilege)
  std::string gid_map;
  bool read_only_tree = true;  // false when "/" itself is a writable root
  // The roots, plus the directories between a root and a root nested in it; outer first.
  std::vector<std::string> writable_roots;
  // Under a writable root, symlinks resolved. Each is mounted read-only where its held inode
  // is now (when it was held) and, if something else exists at the path when a command
  // starts, there as well; one whose inode is gone and whose path holds nothing is skipped.
  std::vector<std::string> carveouts;
  std::vector<HeldCarveout> held;  // parallel to carveouts
  // "/" as the session saw it: after unshare the links of held descriptors name paths from
  // the old namespace's root, which under chroot(2) lies above ours; this one's link is the
  // prefix to take off. Only when some carve-out is held.
  HeldCarveout root;
  // Step names for errors, "clone mount <path>" etc., made here so the child need not format.
  std::vector<std::string> root_steps;
  std::vector<std::string> carveout_steps;
  // The run's own /tmp (Policy::private_tmp, a writable root) mounted on `tmp` ("/tmp",
  // symlinks resolved), with the entries of the host's /tmp that hold a writable root (a
  // workspace under /tmp) put back in it at their own paths (`tmp_kept`, "/tmp/NAME"):
  // nothing else of the host's /tmp is in sight. Empty: commands see the host's /tmp.
  std::string private_tmp;
  std::string tmp;
  std::vector<std::string> tmp_kept;
  std::vector<std::string> tmp_kept_steps;  // "keep /tmp/NAME in the private /tmp"
  // A fresh tmpfs mounted here ("/dev/shm", symlinks resolved) so POSIX shared memory and
  // semaphores work; private to the command's namespace, gone with it. Empty: none.
  std::string dev_shm;
  std::string dev_shm_options;  // "size=<host /dev/shm's size>,mode=1777"
  // A private devpts instance on /dev/pts (newinstance, ptmxmode=0666), with /dev/ptmx bound
  // to its ptmx when /dev/ptmx is a device node rather than a link to pts/ptmx: the host's
  // terminals (/dev/pts/N) cannot be opened by name, and ptys the command makes are its own.
  bool private_devpts = false;
  bool bind_ptmx = false;
  // Test hook (AGENTEXEC_SANDBOX_FAKE_VANISH, read by Prepare): this empty directory is
  // removed in a command's set-up after the carve-out there was found and cloned and before
  // the clone is mounted on it, as another process could at that moment. Empty: none.
  std::string fake_vanish;
};

// The child keeps one descriptor per writable root on its stack; Prepare refuses more.
constexpr size_t kMaxWritableRoots = 64;

// A plan for `policy`; `enabled` false gives an empty plan. `pid_namespace`: see new_pid_ns.
MountPlan BuildMountPlan(const Policy& policy, bool enabled, bool pid_namespace);

// Where a command gets a private /dev/shm under `policy` when the mount namespace is in use:
// "/dev/shm" with symlinks resolved, or empty when it does not exist or when the policy
// already makes it writable ("/" or "/dev" a writable root) or holds a writable root beneath
// it (a private tmpfs would hide the host's, which the user asked to write to).
std::string PrivateDevShmPath(const Policy& policy);

// In the child, single-threaded, before Landlock. Async-signal-safe. *dev_shm_mounted says
// whether the private /dev/shm is in place (Landlock may then grant writes beneath it); the
// private devpts is always in place when the plan has one (or the step fails).
// `command`: set up for a command agentexec runs (not the preflight's probe); only then does
// the plan's test hook act.
bool ApplyMountPlan(const MountPlan& plan, bool command, bool* dev_shm_mounted,
                    const char** failed_step, int* err) noexcept;

// In the PID namespace's init, after ApplyMountPlan: a fresh /proc for the namespace
// (nosuid,nodev,noexec, read-only unless "/" is a writable root). Async-signal-safe.
bool MountProc(const MountPlan& plan, const char** failed_step, int* err) noexcept;

// Whether this process holds CAP_SYS_ADMIN in its user namespace (then no user namespace is
// needed for the mount namespace).
bool HaveSysAdmin();

}  // namespace ae::sandbox
