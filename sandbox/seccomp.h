// seccomp: the system-call layer. libseccomp compiles the filter in the parent and exports
// the BPF program to memory; the child only installs it with prctl.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <vector>

#include "base/result.h"
#include "sandbox/policy.h"

// Linux 6.6: the kernel switches straight to the thread waiting on a notification listener, on
// the notifying task's CPU, and back (headers older than that lack the names).
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

namespace ae::sandbox::seccomp {

// Always (every confined mode): ptrace, process_vm_readv/writev, io_uring_*, the mount API,
// kernel modules, kexec, iopl/ioperm, open_by_handle_at, the keyring calls, and the
// TIOCSTI/TIOCLINUX/TIOCSETD/TIOCCONS ioctls fail with EPERM; so do chmod/fchmod/fchmodat(2),
// open/openat/creat and mknod(at) with S_ISUID or S_ISGID in the mode; openat2 fails with
// ENOSYS (its mode is out of the filter's reach). With the network off: socket and socketpair fail
// with EPERM for every family except AF_UNIX. Other architectures (i386 via int 0x80, x32) kill the
// process.
Result<std::vector<sock_filter>> BuildProgram(const Policy& policy);

// In the child. Async-signal-safe. Needs no_new_privs.
bool Install(const sock_fprog* program, int* err) noexcept;

// The write watch (sandbox/write_watch.h): a second filter that notifies agentexec
// (SECCOMP_RET_USER_NOTIF) of every call that could change the file system, and of nothing
// else: open/openat/creat only with a write flag in the flags argument (O_WRONLY, O_RDWR,
// O_CREAT, O_TRUNC; read-only opens are never notified), and the mkdir, mknod, unlink, rmdir,
// rename, link, symlink, truncate, chmod, chown, utime and xattr families on paths. agentexec
// answers every notification with SECCOMP_USER_NOTIF_FLAG_CONTINUE, so the kernel runs the call
// as if unfiltered and Landlock and the mounts decide it: the watch is evidence of what the
// command attempted, never enforcement (the seccomp notifier cannot be one: a thread may
// rewrite the path between agentexec's read and the kernel's). The main filter's EPERM answers
// take precedence over a notification, so a refused set-id mode is never notified.
struct WatchedCall {
  int nr = -1;
  // Up to two paths: the argument holding each, and the one holding its directory descriptor
  // (-1: relative to the working directory, as AT_FDCWD). path[1] is -1 when there is one.
  int path[2] = {-1, -1};
  int dirfd[2] = {-1, -1};
  // Whether a symlink as the last component is followed (open without O_NOFOLLOW/O_EXCL,
  // truncate, chmod, ...) or acted on itself (unlink, rename, mkdir, the *at calls here
  // taken as AT_SYMLINK_NOFOLLOW). `flags_arg`: open's flags, which can turn following off.
  bool follows = false;
  int flags_arg = -1;
  // chmod, chown, utime, xattrs: only the mount namespace's read-only tree refuses them
  // (Landlock does not cover metadata).
  bool metadata = false;
  // truncate: Landlock refuses it from ABI 3 (without the mount namespace, older ones allow it).
  int min_landlock_abi = 0;
};

// The call the watch notifies with system-call number `nr`, or null.
const WatchedCall* FindWatchedCall(int nr);

// The network watch (a network allow-list, sandbox/network.h): the same kind of filter
// notifies agentexec of the calls that could reach an address on their own: every connect, a
// sendto with an address, and socket(AF_INET or AF_INET6, SOCK_RAW). They too continue as if
// unfiltered: the command's network namespace, which has only `lo`, refuses whatever does not
// go to the proxy, and the watch records it (write_watch.h). A sendmsg/sendmmsg datagram with
// an address of its own is refused the same way but not notified: its address sits in a
// structure only a read of every send could reach, and a bulk transfer through the proxy
// would pay for it.
enum class NetworkCall : unsigned char { kNone, kConnect, kSendto, kRawSocket };
NetworkCall FindNetworkCall(int nr);

// Which calls a watch filter notifies. One filter carries both when both are wanted: a
// process can have only one notification listener.
struct WatchSet {
  bool writes = false;
  bool network = false;
};

// The watch's program, or an error saying why this kernel cannot have it (no user
// notifications, or no SECCOMP_USER_NOTIF_FLAG_CONTINUE before Linux 5.5).
Result<std::vector<sock_filter>> BuildWatchProgram(WatchSet set);

// In the child, after Install: installs the watch filter and returns its listener descriptor
// (close-on-exec) in *listener. Async-signal-safe.
bool InstallWatch(const sock_fprog* program, int* listener, int* err) noexcept;

}  // namespace ae::sandbox::seccomp
