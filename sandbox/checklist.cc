#include "sandbox/checklist.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/child.h"
#include "base/pass_fd.h"
#include "sandbox/capabilities.h"
#include "sandbox/containment.h"
#include "sandbox/prepared_sandbox.h"
#include "sandbox/seccomp.h"
#include "sandbox/step.h"

namespace ae::sandbox {
namespace {

// The child while it works through the list: its plan and what earlier steps found.
struct Child {
  const ChildPlan& plan;
  bool dev_shm = false;  // the private /dev/shm is mounted (Mounts)

  bool confined() const { return plan.sandbox != nullptr && plan.sandbox->enforce; }
  const PreparedSandbox& prepared() const { return *plan.sandbox; }
  // The command's terminal, once the spawner's Stdio step made it stdin; -1: none.
  int terminal_fd() const { return plan.spawner && plan.tty >= 0 ? 0 : -1; }
};

using StepFn = bool (*)(Child& c, const char** step, int* err) noexcept;

// --- The spawner's set-up, before the sandbox -------------------------------------------

// Default signals, and a new session tied to agentexec: the whole tree can be killed as a
// group, and no controlling terminal of the user's is reachable.
bool OwnSession(Child& c, const char** step, int* err) noexcept {
  ResetSignalsInChild();
  return EnterOwnSessionTiedToParent(c.plan.parent, 126, step, err);
}

// The terminal or the pipes become 0-2.
bool Stdio(Child& c, const char** step, int* err) noexcept {
  const ChildPlan& p = c.plan;
  if (p.tty >= 0) {
    // The controlling terminal is agentexec's fresh pty; nothing of the user's terminal is
    // ever reachable (OwnSession dropped it). Unconfined, this process is the command's and
    // takes it now. Confined, the command's process is the last the sandbox starts (under the
    // PID namespace's init, in a session of its own), and it takes the terminal there
    // (CommandSession): a terminal controls one session, and it must be the command's.
    if (p.sandbox == nullptr && !TakeControllingTerminal(p.tty, step, err)) return false;
    for (int fd = 0; fd <= 2; ++fd) {
      if (::dup2(p.tty, fd) < 0) return FailStep("dup2(terminal)", step, err);
    }
    return true;
  }
  // Nothing of agentexec's stdin reaches even the sandbox's supervisor; without a stdin pipe
  // the command's own stdin is opened again inside the confinement (StdinInside).
  if (::dup2(p.in_r >= 0 ? p.in_r : p.devnull, 0) < 0) return FailStep("dup2(stdin)", step, err);
  if (::dup2(p.out_w, 1) < 0) return FailStep("dup2(stdout)", step, err);
  if (::dup2(p.err_w2 >= 0 ? p.err_w2 : p.out_w, 2) < 0) {
    return FailStep("dup2(stderr)", step, err);
  }
  return true;
}

// Descriptors other threads opened without O_CLOEXEC must not reach the command.
bool CloseDescriptors(Child&, const char**, int*) noexcept {
  CloseOnExecFrom3();
  return true;
}

bool ChangeDirectory(Child& c, const char** step, int* err) noexcept {
  if (c.plan.cwd[0] != '\0' && ::chdir(c.plan.cwd) != 0) return FailStep("chdir", step, err);
  return true;
}

// --- The sandbox ----------------------------------------------------------------------------

// The mount namespace: the read-only tree, the carve-outs, the private /dev/shm and devpts.
bool Mounts(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  return ApplyMountPlan(c.prepared().mounts, c.plan.spawner, &c.dev_shm, step, err);
}

// With the network off, the host's Unix sockets are hidden (sandbox/host_sockets.h).
bool HostSockets(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  return HideHostSockets(c.prepared().host_sockets, step, err);
}

// With an allow-list: the command's own network namespace, its listener sent to agentexec.
bool Network(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  return EnterNetworkNamespace(c.prepared().network, c.plan.proxy_fd, step, err);
}

// With a PID namespace this process stays behind as the supervisor; the steps below run in
// the namespace's init (sandbox/containment.h).
bool NamespaceInit(Child& c, const char** step, int* err) noexcept {
  if (!c.confined() || !c.prepared().mounts.new_pid_ns) return true;
  return ForkNamespaceInit(step, err);
}

// The init mounts the namespace's own /proc, so the pids the command sees and /proc agree.
bool Proc(Child& c, const char** step, int* err) noexcept {
  if (!c.confined() || !c.prepared().mounts.new_pid_ns) return true;
  return MountProc(c.prepared().mounts, step, err);
}

bool Capabilities(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  return DropCapabilities(step, err);
}

bool NoNewPrivs(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return FailStep("prctl(PR_SET_NO_NEW_PRIVS)", step, err);
  }
  return true;
}

bool Landlock(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  // Writes beneath /dev/shm only when it is the private tmpfs just mounted, never the host's.
  const char* scratch = c.dev_shm ? c.prepared().mounts.dev_shm.c_str() : nullptr;
  return landlock::RestrictSelf(c.prepared().ruleset, scratch, step, err);
}

bool Seccomp(Child& c, const char** step, int* err) noexcept {
  if (!c.confined()) return true;
  if (!seccomp::Install(&c.prepared().program, err)) {
    *step = "prctl(PR_SET_SECCOMP)";
    return false;
  }
  return true;
}

// The write watch (sandbox/write_watch.h), for a command agentexec runs. It never fails the
// command: a watch this kernel cannot have only leaves agentexec without evidence.
bool WriteWatch(Child& c, const char**, int*) noexcept {
  const int watch_fd = c.plan.spawner ? c.plan.watch_fd : -1;
  if (!c.confined() || watch_fd < 0) return true;
  int listener = -1, install_err = ENOSYS;
  if (c.plan.watch_program != nullptr) {
    seccomp::InstallWatch(c.plan.watch_program, &listener, &install_err);
  }
  // The listener, or (none) the errno that kept it from being installed.
  SendDescriptor(watch_fd, listener, listener >= 0 ? 0 : install_err);
  if (listener >= 0) ::close(listener);
  ::close(watch_fd);
  return true;
}

// The command's process leads a session of its own (with the spawner's terminal, if any).
// With a PID namespace the init forks it and stays behind reaping.
bool CommandSession(Child& c, const char** step, int* err) noexcept {
  // Nothing to confine: the spawner's child already leads a session of its own.
  if (!c.confined()) return c.terminal_fd() < 0 || EnterNewSession(c.terminal_fd(), step, err);
  if (c.prepared().mounts.new_pid_ns) return ForkCommandUnderInit(c.terminal_fd(), step, err);
  return EnterNewSession(c.terminal_fd(), step, err);
}

// --- The spawner's last steps, inside the sandbox --------------------------------------------

// The command's only descriptors are 0-2 (the rest are close-on-exec). Without a pipe or a
// terminal its stdin is a /dev/null opened here, inside the mount namespace: one opened before
// it would still carry write access to the host's mount (fchmod, fchown, futimens through it
// reached agentexec's own /dev/null).
bool StdinInside(Child& c, const char** step, int* err) noexcept {
  if (c.plan.tty >= 0 || c.plan.in_r >= 0) return true;
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return FailStep("open /dev/null", step, err);
  if (::dup2(null_fd, 0) < 0) return FailStep("dup2(stdin)", step, err);
  ::close(null_fd);
  return true;
}

bool Exec(Child& c, const char** step, int* err) noexcept {
  ::execve(c.plan.path, c.plan.argv, c.plan.envp);
  return FailStep(kExecStep, step, err);
}

enum class Who : unsigned char {
  kSpawner,  // the spawner's child only
  kSandbox,  // the sandbox: every user, skipped when the spawner runs a command unconfined
};

struct Step {
  Who who;
  StepFn run;
};

// THE CHECKLIST, in order. Each position has its reason:
constexpr Step kSteps[] = {
    // Before anything else: a session of its own, tied to agentexec, so the group can be
    // killed; it must come before anything makes the child a group leader (setsid fails then).
    {Who::kSpawner, OwnSession},
    // Stdio before the sandbox: the supervisor and init forked below inherit it, and nothing
    // of agentexec's own stdin reaches them.
    {Who::kSpawner, Stdio},
    // After the dup2s (0-2 stay open), before any fork of the sandbox's.
    {Who::kSpawner, CloseDescriptors},
    // The working directory, entered before the sandbox as it always was.
    {Who::kSpawner, ChangeDirectory},
    // Namespaces and mounts first: they need CAP_SYS_ADMIN (gone after Capabilities) and must
    // come before Landlock, which forbids changing the mount tree.
    {Who::kSandbox, Mounts},
    // After the mounts (it reads the read-only tree they made and binds /dev/null over the
    // sockets in the same namespace), before Landlock, which forbids mounting.
    {Who::kSandbox, HostSockets},
    // The network namespace with the mount namespace's capabilities still held (a user
    // namespace's, when unprivileged), before the PID namespace's init, which inherits it.
    {Who::kSandbox, Network},
    // The PID namespace's init after the mounts (it inherits them) and before the rest of the
    // confinement, which then holds for the init and everything it forks.
    {Who::kSandbox, NamespaceInit},
    // In the init: /proc of the new namespace, still with CAP_SYS_ADMIN.
    {Who::kSandbox, Proc},
    // No mount is left to make.
    {Who::kSandbox, Capabilities},
    // Before seccomp, which needs it unprivileged; Landlock needs it too.
    {Who::kSandbox, NoNewPrivs},
    // After the mounts it forbids and before seccomp, so the filter is the last thing set.
    {Who::kSandbox, Landlock},
    // Last of the confinement: its filter refuses the mount calls made above, and it needs
    // no_new_privs.
    {Who::kSandbox, Seccomp},
    // The watch filter last of the filters, in the process every process of the command
    // inherits its filters from (the init with a PID namespace): nothing escapes it.
    {Who::kSandbox, WriteWatch},
    // The command's own session comes with the confinement complete.
    {Who::kSandbox, CommandSession},
    // Inside the mount namespace, so the descriptor reaches only its /dev/null.
    {Who::kSpawner, StdinInside},
    {Who::kSpawner, Exec},
};

}  // namespace

bool RunChecklist(const ChildPlan& plan, StepFailure* failure) noexcept {
  Child child{plan};
  for (const Step& s : kSteps) {
    if (s.who == Who::kSpawner && !plan.spawner) continue;
    if (s.who == Who::kSandbox && plan.sandbox == nullptr) continue;
    const char* step = "";
    int err = 0;
    if (!s.run(child, &step, &err)) {
      failure->step = step;
      failure->err = err;
      failure->sandbox = s.who == Who::kSandbox;
      return false;
    }
  }
  return true;
}

bool ApplyInChild(const PreparedSandbox& prepared, const char** failed_step, int* err) noexcept {
  return ApplyInChild(prepared, -1, failed_step, err);
}

bool ApplyInChild(const PreparedSandbox& prepared, int proxy_fd, const char** failed_step,
                  int* err) noexcept {
  ChildPlan plan;
  plan.sandbox = &prepared;
  plan.proxy_fd = proxy_fd;
  StepFailure failure;
  if (RunChecklist(plan, &failure)) return true;
  *failed_step = failure.step;
  *err = failure.err;
  return false;
}

}  // namespace ae::sandbox
