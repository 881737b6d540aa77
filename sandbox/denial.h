// Was that failure the sandbox's doing? Decided from what agentexec saw itself, never from
// the command's word: a command can print "Permission denied" and any path it likes, and
// under on-failure a denial reruns it unconfined.
//
// Evidence, strongest first:
//  - a confinement step failed in the child before execve (setup_error "sandbox: ..."): seen
//    by agentexec on its own channel before the command ran;
//  - the write watch (write_watch.h) saw the command attempt a write the sandbox refuses
//    (outside the writable roots, under a read-only carve-out), to a path agentexec itself
//    could write (so the sandbox, not the file's mode or a read-only disk, is what refused
//    it), and the command failed saying so (EACCES/EPERM/EROFS wording anywhere in its output:
//    a refused cache write followed by an unrelated test failure is not a denial).
// Both are `verified`: they may escalate under on-failure. Weaker, only `likely` (the note to
// the model, never a rerun): a refused write attempt without the wording, and a socket call
// failing with EPERM while the network is off. Exit 0, a timeout, a cancellation, SIGSYS (any
// process can send itself one), paths named in the output and wording alone are no evidence.
//
// Where the watch was not in force (approval never: nothing escalates, so the command does
// not pay for it), AdvisoryDenial reads the command's own output for the note alone: what it
// finds is never `verified`.
#pragma once

#include <optional>
#include <string>

#include "sandbox/policy.h"
#include "sandbox/spawn.h"

namespace ae::sandbox {

struct Denial {
  bool verified = false;  // seen by agentexec: may justify an escalation
  std::string evidence;   // for the escalation item, e.g. "the sandbox refused a write to /x"
  // Nothing but the wording to go on: the note says the sandbox may be the cause.
  bool only_wording = false;
};

std::optional<Denial> FindDenial(const RunResult& result, const Policy& policy);

// For the note when the watch did not run (result.writes.watched false): the command failed
// with EACCES/EPERM/EROFS wording and, on those lines of its output, names a path (absolute,
// or relative to `workdir`) the policy does not let it write while agentexec could; or names
// no path at all (only_wording). None when a path it names is one the sandbox allows or
// agentexec could not write either (the file's mode, a read-only disk: not the sandbox).
// Never verified: the output is the command's to forge.
std::optional<Denial> AdvisoryDenial(const RunResult& result, const Policy& policy,
                                     const std::string& workdir);

// When the command failed saying a permission was refused, but the write watch was not in
// force (so agentexec could not have seen a refusal): why, for the stream. on-failure then
// does not rerun it (no evidence), and the user should know that is why.
std::optional<std::string> UnobservedDenial(const RunResult& result, const Policy& policy);

}  // namespace ae::sandbox
