#include "sandbox/prepared.h"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/fd.h"
#include "sandbox/capabilities.h"
#include "sandbox/containment.h"
#include "sandbox/host_sockets.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/preflight.h"
#include "sandbox/seccomp.h"

namespace ae::sandbox {

struct PreparedSandbox {
  bool enforce = false;  // false under danger-full-access: nothing to apply
  int landlock_abi = 0;
  landlock::RulesetPlan ruleset;
  std::vector<sock_filter> filter;
  sock_fprog program = {};
  MountPlan mounts;
  HostSocketPlan host_sockets;  // with the network off: the host's Unix sockets, hidden
  std::vector<sock_filter> watch_filter;
  sock_fprog watch_program = {};
  WatchPlan watch;
};

void PreparedDeleter::operator()(PreparedSandbox* p) const {
  delete p;
}

Result<PreparedPtr> Prepare(const Policy& policy) {
  PrepareOptions options;
  if (!policy.unrestricted()) {
    Isolation isolation = UsableIsolation(policy);
    options.mount_namespace = isolation.mount_namespace;
    options.pid_namespace = isolation.pid_namespace;
    options.write_watch = isolation.write_watch;
  }
  return Prepare(policy, options);
}

Result<PreparedPtr> Prepare(const Policy& policy, const PrepareOptions& options) {
  PreparedPtr prepared(new PreparedSandbox);
  if (policy.unrestricted()) return prepared;
  prepared->enforce = true;
  if (policy.writable_roots.size() > kMaxWritableRoots) {
    return MakeError(fmt::format("sandbox: {} writable roots given; at most {} are supported",
                                 policy.writable_roots.size(), kMaxWritableRoots));
  }
  prepared->landlock_abi = landlock::Abi();
  if (prepared->landlock_abi < 1) {
    return MakeError(LandlockUnavailableMessage(policy.mode, errno));
  }
  prepared->mounts = BuildMountPlan(policy, options.mount_namespace,
                                    options.mount_namespace && options.pid_namespace);
  // Test hook (docs/SANDBOX.md "Test hooks"); acts only in commands' set-up (ApplyMountPlan).
  if (const char* vanish = std::getenv("AGENTEXEC_SANDBOX_FAKE_VANISH")) {
    prepared->mounts.fake_vanish = vanish;
  }
  Result<HostSocketPlan> host_sockets = PlanHostSockets(policy, prepared->mounts.enabled);
  if (!host_sockets.ok()) return host_sockets.error();
  prepared->host_sockets = std::move(host_sockets.value());
  Result<landlock::RulesetPlan> ruleset =
      landlock::PlanRuleset(policy, prepared->landlock_abi, prepared->mounts.private_devpts);
  if (!ruleset.ok()) return ruleset.error();
  prepared->ruleset = std::move(ruleset.value());
  Result<std::vector<sock_filter>> filter = seccomp::BuildProgram(policy);
  if (!filter.ok()) return filter.error();
  prepared->filter = std::move(filter.value());
  prepared->program.len = static_cast<unsigned short>(prepared->filter.size());
  prepared->program.filter = prepared->filter.data();
  prepared->watch.policy = policy;
  prepared->watch.landlock_abi = prepared->landlock_abi;
  prepared->watch.mount_namespace = prepared->mounts.enabled;
  prepared->watch.carveouts = prepared->mounts.carveouts;
  prepared->watch.dev_shm = prepared->mounts.dev_shm;
  if (!options.write_watch) {
    prepared->watch.unavailable = "the write watch is switched off";
  } else if (Result<std::vector<sock_filter>> watch = seccomp::BuildWatchProgram(); watch.ok()) {
    prepared->watch_filter = std::move(watch.value());
    prepared->watch_program.len = static_cast<unsigned short>(prepared->watch_filter.size());
    prepared->watch_program.filter = prepared->watch_filter.data();
    prepared->watch.program = &prepared->watch_program;
  } else {
    prepared->watch.unavailable = watch.message();
  }
  if (prepared->mounts.writable_roots.size() > kMaxWritableRoots) {
    return MakeError(fmt::format("sandbox: {} writable mounts needed; at most {} are supported",
                                 prepared->mounts.writable_roots.size(), kMaxWritableRoots));
  }
  return prepared;
}

void UpdateCarveouts(PreparedSandbox& prepared, const Policy& policy) {
  if (!prepared.enforce) return;
  // Only the mount plan and the watch's view of the policy hold carve-outs; the plan's other
  // findings are made again from the same policy and host.
  MountPlan mounts = BuildMountPlan(policy, prepared.mounts.enabled, prepared.mounts.new_pid_ns);
  mounts.fake_vanish = std::move(prepared.mounts.fake_vanish);
  prepared.mounts = std::move(mounts);
  prepared.watch.policy = policy;
  prepared.watch.carveouts = prepared.mounts.carveouts;
}

std::string DescribePrepared(const PreparedSandbox& prepared) {
  if (!prepared.enforce) return "none";
  std::string text = fmt::format("landlock abi {} + seccomp", prepared.landlock_abi);
  if (prepared.mounts.enabled) text += " + mount namespace";
  if (prepared.mounts.new_pid_ns) text += " + pid namespace";
  return text;
}

// The order matters: mounts need CAP_SYS_ADMIN (gone after the capability drop) and must
// happen before Landlock, which forbids changing the mount tree; seccomp comes last because
// it refuses the mount calls and needs no_new_privs. With a PID namespace the calling process
// stays behind as the supervisor after the mounts, the namespace's init (pid 1) mounts /proc
// and confines itself, and only the command's process, forked by the init, returns true
// (sandbox/containment.h). A failure returns false in whichever of them hit it.
const WatchPlan& PreparedWatch(const PreparedSandbox& prepared) {
  return prepared.watch;
}

namespace {

// The watch's listener (or, with `listener` < 0, the errno that kept it from being installed)
// goes to agentexec over its socket. Async-signal-safe.
void SendWatch(int watch_fd, int listener, int install_err) noexcept {
  int32_t code = listener >= 0 ? 0 : install_err;
  iovec iov = {&code, sizeof code};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (listener >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &listener, sizeof(int));
  }
  while (::sendmsg(watch_fd, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// `command`: the spawner's (a command agentexec runs), not a probe's or `agentexec sandbox`'s.
bool Apply(const PreparedSandbox& prepared, bool command, int watch_fd, int terminal_fd,
           const char** failed_step, int* err) noexcept {
  // Nothing to confine: the spawner's child already leads a session of its own.
  if (!prepared.enforce) return terminal_fd < 0 || EnterNewSession(terminal_fd, failed_step, err);
  bool dev_shm = false;
  if (!ApplyMountPlan(prepared.mounts, command, &dev_shm, failed_step, err)) return false;
  if (!HideHostSockets(prepared.host_sockets, failed_step, err)) return false;
  if (prepared.mounts.new_pid_ns) {
    if (!ForkNamespaceInit(failed_step, err)) return false;
    if (!MountProc(prepared.mounts, failed_step, err)) return false;
  }
  if (!DropCapabilities(failed_step, err)) return false;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *failed_step = "prctl(PR_SET_NO_NEW_PRIVS)";
    *err = errno;
    return false;
  }
  // Writes beneath /dev/shm only when it is the private tmpfs just mounted, never the host's.
  const char* scratch = dev_shm ? prepared.mounts.dev_shm.c_str() : nullptr;
  if (!landlock::RestrictSelf(prepared.ruleset, scratch, failed_step, err)) return false;
  if (!seccomp::Install(&prepared.program, err)) {
    *failed_step = "prctl(PR_SET_SECCOMP)";
    return false;
  }
  // Here, in the process whose filters every process of the command inherits (the init with
  // a PID namespace): nothing below and nothing the command runs escapes the watch.
  if (watch_fd >= 0) {
    int listener = -1, install_err = ENOSYS;
    if (prepared.watch.program != nullptr) {
      seccomp::InstallWatch(prepared.watch.program, &listener, &install_err);
    }
    SendWatch(watch_fd, listener, install_err);
    if (listener >= 0) ::close(listener);
    ::close(watch_fd);
  }
  if (prepared.mounts.new_pid_ns) return ForkCommandUnderInit(terminal_fd, failed_step, err);
  return EnterNewSession(terminal_fd, failed_step, err);
}

}  // namespace

bool ApplyInChild(const PreparedSandbox& prepared, const char** failed_step, int* err) noexcept {
  return Apply(prepared, false, -1, -1, failed_step, err);
}

bool ApplyInChild(const PreparedSandbox& prepared, int watch_fd, int terminal_fd,
                  const char** failed_step, int* err) noexcept {
  return Apply(prepared, true, watch_fd, terminal_fd, failed_step, err);
}

}  // namespace ae::sandbox
