// Was that failure the sandbox's doing? Heuristic on the exit status and output of a
// command that ran confined: a confinement step that failed (setup_error "sandbox: ..."),
// SIGSYS, or a non-zero exit with EPERM/EACCES/EROFS wording.
#pragma once

#include "sandbox/spawn.h"

namespace ae::sandbox {

bool LooksSandboxDenied(const RunResult& result);

}  // namespace ae::sandbox
