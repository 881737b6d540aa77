// Landlock: the file-system layer. The parent opens every path and allocates (PlanRuleset); the
// child only makes the system calls that build the ruleset from the inherited descriptors and
// restrict itself.
#pragma once

#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "sandbox/policy.h"

namespace ae::sandbox::landlock {

// The highest ABI this kernel supports (>= 1), or -1 with errno set (ENOSYS: not built in,
// EOPNOTSUPP: built in but disabled at boot).
int Abi();

// The file-system rights the ABI knows: 1 adds the basic rights, 2 REFER, 3 TRUNCATE,
// 5 IOCTL_DEV. Exposed for tests and the documentation.
unsigned long long HandledFsRights(int abi);

// The ruleset as data: its attribute and one O_PATH descriptor per rule, opened here in the
// parent, so the rules hold the inodes as they are when the session prepares the sandbox. The
// child builds the ruleset from it (RestrictSelf) rather than sharing one built here, because
// it adds a rule the parent cannot: the private /dev/shm the child mounts in its own
// namespace (a rule on the directory underneath does not reach a mount stacked on it, as
// Landlock skips hidden mount points), and a ruleset fd would be shared with every command.
struct RulesetPlan {
  struct Rule {
    Fd path;
    unsigned long long access = 0;
  };
  int abi = 0;
  unsigned long long handled_access_fs = 0;
  unsigned long long scoped = 0;
  std::vector<Rule> rules;
  unsigned long long scratch_access = 0;  // granted beneath the private /dev/shm
  bool private_devpts = false;            // the child grants its own /dev/pts and /dev/ptmx
};

// Devices a confined command may open for writing whatever the roots: /dev/null, /dev/zero,
// /dev/full, /dev/random, /dev/urandom, and the terminals /dev/tty, /dev/ptmx and /dev/pts/*.
bool GrantsDeviceWrite(std::string_view path);

// The plan for `policy`: read and execute everywhere (but the host's terminals), every write right
// (except creating device nodes) under the writable roots, read+write on the harmless devices, and
// from ABI 6 the signal scope (plus the abstract Unix socket scope when the network is off). The
// rules are tried once here, so an error names its path. `private_devpts`: the command gets its own
// devpts instance (mounts.h), granted in the child; without one, the host's /dev/pts is left out of
// the read grant (so read is granted on each entry of "/" and of /dev but /dev/pts, rather than on
// "/").
Result<RulesetPlan> PlanRuleset(const Policy& policy, int abi, bool private_devpts);

// In the child: builds the ruleset from `plan`, adds write rights beneath `scratch_dir` when
// it is not null (opened now: the child's own tmpfs), and restricts itself. Async-signal-safe.
// Needs no_new_privs (or CAP_SYS_ADMIN). On failure sets a static *failed_step and *err.
bool RestrictSelf(const RulesetPlan& plan, const char* scratch_dir, const char** failed_step,
                  int* err) noexcept;

}  // namespace ae::sandbox::landlock
