// Host Unix sockets with the network off. seccomp allows AF_UNIX (local tools need it), and
// connecting to a pathname socket needs no Landlock right, so without this step a confined
// command could reach /var/run/docker.sock (root on the host), a tmux server's socket (type
// into an unconfined shell), an ssh-agent or the system bus. In the command's mount namespace,
// right before it starts, every such socket is covered by a read-only, nodev bind of
// /dev/null: connect() then finds a device, not a socket, and fails (ECONNREFUSED), and the
// mount cannot be removed (Landlock forbids umount, seccomp the mount API).
//
// Which sockets: those listed in /proc/net/unix with an absolute path that either existed when
// the session prepared the sandbox (their inode is in the snapshot), or live on a read-only
// mount of the command's namespace (no confined command of this run can have bound them), plus
// the well-known container runtime and bus sockets, which may belong to another network
// namespace and so be missing from /proc/net/unix. Sockets a command of this run creates (in a
// writable root, after the snapshot) stay reachable, for it and for later commands.
#pragma once

#include <string>
#include <vector>

#include "sandbox/policy.h"

namespace ae::sandbox {

struct HostSocketPlan {
  bool enabled = false;                 // network off and the mount namespace in use
  std::vector<unsigned long> snapshot;  // sorted inodes of pathname sockets at Prepare
  std::vector<std::string> well_known;  // hidden whenever they exist
};

// The plan for `policy` (empty with the network on or without the mount namespace). Reads
// /proc/net/unix now: an error means it cannot be read, and the sockets cannot be told apart.
Result<HostSocketPlan> PlanHostSockets(const Policy& policy, bool mount_namespace);

// In the child, after the mount plan is applied (the read-only tree in place) and before
// Landlock. Async-signal-safe: fixed buffers, system calls only.
bool HideHostSockets(const HostSocketPlan& plan, const char** failed_step, int* err) noexcept;

// Calls `visit(ctx, inode, path)` for each socket in /proc/net/unix-formatted text read from
// `fd` that has an absolute path. Async-signal-safe; exposed for the tests.
using SocketVisitor = void (*)(void* ctx, unsigned long inode, const char* path);
bool ForEachPathSocket(int fd, SocketVisitor visit, void* ctx) noexcept;

}  // namespace ae::sandbox
