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

}  // namespace ae
