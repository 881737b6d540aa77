#include "runner/exit_code.h"

namespace ae {

ExitCode ExitCodeFor(SessionOutcome outcome) {
  switch (outcome) {
    case SessionOutcome::kCompleted:
      return ExitCode::kOk;
    case SessionOutcome::kFailed:
      return ExitCode::kTurnFailed;
    case SessionOutcome::kSandboxUnavailable:
      return ExitCode::kSandboxUnavailable;
    case SessionOutcome::kLimitReached:
      return ExitCode::kLimitReached;
    case SessionOutcome::kOutputFailed:
      return ExitCode::kOutputFailed;
    case SessionOutcome::kInterrupted:
      return ExitCode::kInterrupted;
    case SessionOutcome::kTerminated:
      return ExitCode::kTerminated;
  }
  return ExitCode::kTurnFailed;
}

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

}  // namespace ae
