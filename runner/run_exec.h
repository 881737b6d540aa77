// `agentexec [exec] ...`: from parsed flags to an exit code. The order is the contract's:
// configuration, resume target, -o check, prompt, then the session; each failure before the
// turn exits with its own code and a message on stderr.
#pragma once

#include "runner/cli.h"

namespace ae {

int RunExec(const CliArgs& args);

}  // namespace ae
