// Landlock: the file-system layer. The ruleset is built in the parent (it opens paths and
// allocates); the child only calls landlock_restrict_self on the inherited descriptor.
#pragma once

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

// A ruleset for `policy`: read and execute everywhere, every write right (except creating
// device nodes) under the writable roots, read+write on the harmless devices, and from ABI 6
// the signal scope (plus the abstract Unix socket scope when the network is off).
Result<Fd> BuildRuleset(const Policy& policy, int abi);

// In the child. Async-signal-safe. Needs no_new_privs (or CAP_SYS_ADMIN).
bool RestrictSelf(int ruleset_fd, int* err) noexcept;

}  // namespace ae::sandbox::landlock
