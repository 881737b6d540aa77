// Preflight: before the turn, find out what this kernel can enforce for the policy, by
// applying the prepared sandbox in a throw-away child exactly as a command would get it.
//
// Test hooks, read here only (never by the code that confines commands):
//   AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK=1  behave as if landlock_create_ruleset gave ENOSYS
//   AGENTEXEC_SANDBOX_FAKE_NO_SECCOMP=1   behave as if installing the filter gave EINVAL
//   AGENTEXEC_SANDBOX_FAKE_NO_USERNS=1    behave as if unshare gave EPERM (no carve-outs)
//   AGENTEXEC_SANDBOX_FAKE_NO_PIDNS=1     behave as if unshare(CLONE_NEWPID) gave EPERM
//   AGENTEXEC_SANDBOX_FAKE_NO_WATCH=1     prepare commands without the write watch
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"

namespace ae::sandbox {

struct PreflightReport {
  // e.g. "landlock abi 7 + seccomp + mount namespace + pid namespace"
  std::string description;
  // Policy::warnings first (skipped roots), then e.g. carve-outs not enforceable in this run.
  std::vector<std::string> warnings;
  int landlock_abi = 0;          // 0 under danger-full-access
  bool mount_namespace = false;  // the read-only tree and carve-outs are enforced
  bool pid_namespace = false;    // every command's process tree ends with it
  bool write_watch = true;       // false: AGENTEXEC_SANDBOX_FAKE_NO_WATCH (the test hook)
  // What the run lacks against the full sandbox, one reason each (also among `warnings`).
  // Policy::require_full_isolation turns a non-empty list into an error (exit 3).
  std::vector<std::string> degradations;
};

// An error means the mode cannot be enforced here; its message says why and what to do.
Result<PreflightReport> Preflight(const Policy& policy);

// The sandbox for commands as `report` found this kernel: the namespaces it can have (mount
// and PID namespace, then the mount namespace alone, then neither), and the write watch unless
// a test switched it off. The session passes its preflight's report here; nothing is kept
// between calls.
Result<PreparedPtr> Prepare(const Policy& policy, const PreflightReport& report);

// "sandbox: cannot enforce MODE: Landlock is not supported by this kernel (...). Run with ..."
std::string LandlockUnavailableMessage(Mode mode, int err);

}  // namespace ae::sandbox
