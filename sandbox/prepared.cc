#include "sandbox/prepared.h"

#include <fmt/format.h>
#include <sys/prctl.h>

#include <cerrno>
#include <vector>

#include "base/fd.h"
#include "sandbox/capabilities.h"
#include "sandbox/containment.h"
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
  Result<landlock::RulesetPlan> ruleset = landlock::PlanRuleset(policy, prepared->landlock_abi);
  if (!ruleset.ok()) return ruleset.error();
  prepared->ruleset = std::move(ruleset.value());
  Result<std::vector<sock_filter>> filter = seccomp::BuildProgram(policy);
  if (!filter.ok()) return filter.error();
  prepared->filter = std::move(filter.value());
  prepared->program.len = static_cast<unsigned short>(prepared->filter.size());
  prepared->program.filter = prepared->filter.data();
  prepared->mounts = BuildMountPlan(policy, options.mount_namespace,
                                    options.mount_namespace && options.pid_namespace);
  if (prepared->mounts.writable_roots.size() > kMaxWritableRoots) {
    return MakeError(fmt::format("sandbox: {} writable mounts needed; at most {} are supported",
                                 prepared->mounts.writable_roots.size(), kMaxWritableRoots));
  }
  return prepared;
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
bool ApplyInChild(const PreparedSandbox& prepared, const char** failed_step, int* err) noexcept {
  if (!prepared.enforce) return true;
  bool dev_shm = false;
  if (!ApplyMountPlan(prepared.mounts, &dev_shm, failed_step, err)) return false;
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
  if (prepared.mounts.new_pid_ns) return ForkCommandUnderInit(failed_step, err);
  return EnterNewSession(failed_step, err);
}

}  // namespace ae::sandbox
