// PreparedSandbox: everything a child needs to confine itself, built in the parent so the
// child (between fork and exec) makes only async-signal-safe system calls.
#pragma once

#include <linux/filter.h>

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/policy.h"

namespace ae::sandbox {

struct PreparedSandbox;  // defined in prepared.cc; owns fds and the BPF program

struct PreparedDeleter {
  void operator()(PreparedSandbox* p) const;
};
using PreparedPtr = std::unique_ptr<PreparedSandbox, PreparedDeleter>;

// Builds the Landlock ruleset, seccomp program and mount plan for `policy`. An error means
// the policy cannot be enforced here (the caller fails closed). Under danger-full-access the
// result is empty and ApplyInChild does nothing. Without a preflight's report to follow
// (Prepare(policy, report) in sandbox/preflight.h), this one probes the kernel's namespaces
// now, as the preflight does, and prepares as it finds.
Result<PreparedPtr> Prepare(const Policy& policy);

struct PrepareOptions {
  bool mount_namespace = true;  // false: Landlock + seccomp only, carve-outs not enforced
  bool pid_namespace = true;    // with the mount namespace: contain the process tree
  bool write_watch = true;      // false: no evidence of refused writes (write_watch.h)
};
Result<PreparedPtr> Prepare(const Policy& policy, const PrepareOptions& options);

// Gives `prepared` the carve-outs of `policy`: the policy it was prepared from, completed
// since with the nested repositories a NestedScan found (policy.h). Every later command gets
// them; not while a command is being set up from `prepared`. An error when one cannot be held
// open (the open-file limit): `prepared` is then unchanged and must confine nothing more.
Status UpdateCarveouts(PreparedSandbox& prepared, const Policy& policy);

// What a command confined by `prepared` gets as $TMPDIR when the policy gives the run its own
// /tmp: "/tmp" where the mount namespace puts it there, else its path on the host; "" when
// the run has none.
std::string CommandTmpdir(const PreparedSandbox& prepared);

// What the prepared sandbox will do, for headers and logs, e.g.
// "landlock abi 7 + seccomp + mount namespace + pid namespace".
std::string DescribePrepared(const PreparedSandbox& prepared);

// The sandbox's steps of the child's checklist (sandbox/checklist.h), for a process that
// confines itself and then execs on its own (`agentexec sandbox`, the preflight's probe); the
// spawner runs the whole list. After fork, before execve; async-signal-safe. On failure
// returns false with *failed_step naming the step (static, or owned by `prepared`, e.g.
// "make read-only /ws/.git") and *err its errno. With a PID namespace the caller's process
// does not return: it supervises (sandbox/containment.h), and true is returned in a
// grandchild, the command's process. Descriptors >= 3 must already be close-on-exec; the
// supervisor and init close theirs.
bool ApplyInChild(const PreparedSandbox& prepared, const char** failed_step, int* err) noexcept;
// The same, the network namespace's listener (a network allow-list) sent over `proxy_fd`
// (sandbox/network.h), or none with -1.
bool ApplyInChild(const PreparedSandbox& prepared, int proxy_fd, const char** failed_step,
                  int* err) noexcept;

// What the write watch checks attempts against: what the sandbox really refuses (not
// ConfinedFs's stricter rule for agentexec's own writes, which refuses any nested .git), and
// the watch's seccomp program (null when this kernel cannot have it; `unavailable` says why).
struct WatchPlan {
  Policy policy;
  int landlock_abi = 0;
  bool mount_namespace = false;        // read-only tree, carve-outs, metadata refused
  std::vector<std::string> carveouts;  // mounted read-only when they exist at spawn
  std::string dev_shm;                 // the private /dev/shm, writable inside; "" when none
  // The watch's programs: `program` notifies the write-intent calls, and with a network
  // allow-list the network's calls too; `network_program` (proxied only) those alone. Null
  // when this kernel cannot have them (`unavailable` says why).
  const sock_fprog* program = nullptr;
  const sock_fprog* network_program = nullptr;
  std::string unavailable;
};
const WatchPlan& PreparedWatch(const PreparedSandbox& prepared);

}  // namespace ae::sandbox
