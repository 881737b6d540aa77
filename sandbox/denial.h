// Was that failure the sandbox's doing? Decided from what agentexec can check itself, never
// from the command's word alone: a command can print "Permission denied" whenever it likes,
// and under on-failure a denial reruns it unconfined.
//
// Evidence, strongest first:
//  - a confinement step failed in the child before execve (setup_error "sandbox: ..."): seen
//    by agentexec on its own channel before the command ran;
//  - a path named next to EACCES/EPERM/EROFS wording that the policy really refuses (outside
//    the writable roots, or under a read-only carve-out) and that agentexec itself could write
//    (so the sandbox, not the file's mode or a read-only disk, is what refused it).
// Both are `verified`: they may escalate under on-failure. A socket call failing with EPERM
// while the network is off is only `likely`: enough for the note to the model, not to rerun
// anything. Exit 0, a timeout, a cancellation, SIGSYS (any process can send itself one) and
// bare wording with no checkable path are no evidence.
#pragma once

#include <optional>
#include <string>

#include "sandbox/policy.h"
#include "sandbox/spawn.h"

namespace ae::sandbox {

struct Denial {
  bool verified = false;  // checked by agentexec: may justify an escalation
  std::string evidence;   // for the escalation item, e.g. "writing /etc/x: outside the ..."
};

// `workdir` is where the command ran (relative paths in its output are taken against it).
std::optional<Denial> FindDenial(const RunResult& result, const Policy& policy,
                                 const std::string& workdir);

}  // namespace ae::sandbox
