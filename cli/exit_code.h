// The one place outcomes become process exit codes.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "engine/events/error_code.h"

namespace ae {

enum class ExitCode : int {
  kOk = 0,                  // the turn completed
  kTurnFailed = 1,          // model/API error, missing key, broken stream
  kUsage = 2,               // bad flag or config, bad --output-schema, no prompt, not a repo
  kSandboxUnavailable = 3,  // the chosen sandbox cannot be enforced here
  kLimitReached = 4,        // --max-turns, --timeout
  kOutputFailed = 5,        // an output could not be written: -o FILE, stdout (EPIPE: the
                            // reader is gone, a full disk), or the session file (not saved,
                            // not --ephemeral) when the turn itself completed
  kOutputSchema = 6,        // the final answer does not validate against --output-schema
  kCannotExecute = 126,     // `agentexec sandbox`: the command exists but cannot be run
  kCommandNotFound = 127,   // `agentexec sandbox`: no such command
  kInterrupted = 130,       // SIGINT
  kTerminated = 143,        // SIGTERM
};

// The exit codes of a run (`agentexec`, `exec`, `resume`, `review`), the one list that
// `agentexec --help`, README's table, the Action, the GitLab component and scripts/ci/run.sh's
// legend show (tests/dist/exit_codes_test.py compares them). `summary` is the short form the
// one-line legends use; `meaning` is the --help line, and README's row starts with it.
// kCannotExecute / kCommandNotFound are `agentexec sandbox`'s own and are not listed here.
struct ExitCodeInfo {
  ExitCode code;
  std::string_view summary;
  std::string_view meaning;
};
inline constexpr std::array<ExitCodeInfo, 9> kExitCodes = {{
    {ExitCode::kOk, "done", "the turn completed"},
    {ExitCode::kTurnFailed, "model/API failure",
     "the turn failed: model/API error, missing API key, broken stream"},
    {ExitCode::kUsage, "usage or configuration error", "usage or configuration error"},
    {ExitCode::kSandboxUnavailable, "sandbox unavailable",
     "the chosen sandbox cannot be enforced on this kernel"},
    {ExitCode::kLimitReached, "limit reached",
     "a limit was reached: --max-turns, --timeout, --max-tokens"},
    {ExitCode::kOutputFailed, "output not writable",
     "an output could not be written: -o FILE, --events-file FILE, stdout, the session file"},
    {ExitCode::kOutputSchema, "final answer fails --output-schema",
     "the final answer does not validate against --output-schema"},
    {ExitCode::kInterrupted, "interrupted (SIGINT)", "interrupted by SIGINT"},
    {ExitCode::kTerminated, "terminated (SIGTERM)", "terminated by SIGTERM"},
}};

// How a run ends -> its exit code: the one mapping (README "Exit codes" lists the table).
// `code` is turn.failed's error.code, or output_unwritable when the turn completed and an
// output failed after it; kNone (completed) is 0.
ExitCode ExitCodeFor(ErrorCode code);
inline int ToInt(ExitCode code) {
  return static_cast<int>(code);
}
// Ends a command before any session started: prints "error: MESSAGE" on stderr (the prefix
// added unless the message has it) and returns the code as the process's exit status.
int FailWith(ExitCode code, const std::string& message);

}  // namespace ae
