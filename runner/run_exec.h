// `agentexec [exec] ...`: from parsed flags to an exit code. The order is the contract's:
// configuration, resume target, -o check, prompt, then the session; each failure before the
// turn exits with its own code and a message on stderr.
#pragma once

#include "cli/cli.h"
#include "engine/session.h"

namespace ae {

int RunExec(const CliArgs& args);

// RunSession behind the top-level exception boundary: an exception that escapes the session
// becomes `error` + `turn.failed` on every sink and a kFailed outcome (exit 1), never
// std::terminate.
SessionResult RunSessionGuarded(const SessionConfig& session, const std::string& prompt,
                                const std::vector<EventSink*>& sinks, CancelToken& cancel);

}  // namespace ae
