#include "cli/exit_code.h"

#include <cstdio>

namespace ae {

ExitCode ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return ExitCode::kOk;
    case ErrorCode::kModelError:
    case ErrorCode::kRateLimited:
    case ErrorCode::kAuth:
    case ErrorCode::kContextLength:
    case ErrorCode::kMcpError:
      return ExitCode::kTurnFailed;
    case ErrorCode::kUsageError:
    case ErrorCode::kConfigError:
      return ExitCode::kUsage;
    case ErrorCode::kSandboxUnavailable:
      return ExitCode::kSandboxUnavailable;
    case ErrorCode::kMaxTurns:
    case ErrorCode::kTimeout:
    case ErrorCode::kMaxTokens:
      return ExitCode::kLimitReached;
    case ErrorCode::kOutputUnwritable:
      return ExitCode::kOutputFailed;
    case ErrorCode::kOutputSchema:
      return ExitCode::kOutputSchema;
    case ErrorCode::kInterrupted:
      return ExitCode::kInterrupted;
    case ErrorCode::kTerminated:
      return ExitCode::kTerminated;
  }
  return ExitCode::kTurnFailed;
}

int FailWith(ExitCode code, const std::string& message) {
  std::string line = message;
  if (line.rfind("error: ", 0) != 0) line = "error: " + line;
  std::fprintf(stderr, "%s\n", line.c_str());
  return ToInt(code);
}

}  // namespace ae
