// Why a run failed, as a machine-readable code (turn.failed error.code). The
// names are part of the published event schema; cli/exit_code.h maps each to an exit code.
#pragma once

#include <string_view>

#include "base/result.h"

namespace ae {

enum class ErrorCode {
  kNone,                // the turn completed
  kModelError,          // the model API failed after retries, or the stream broke
  kRateLimited,         // 429 after retries, or quota exhausted
  kAuth,                // no API key, or the service refused it (401/403)
  kContextLength,       // the conversation no longer fits the model's context window
  kMcpError,            // a required MCP server did not start
  kMaxTurns,            // --max-turns
  kTimeout,             // --timeout
  kMaxTokens,           // --max-tokens (token budget)
  kInterrupted,         // SIGINT
  kTerminated,          // SIGTERM
  kSandboxUnavailable,  // the chosen sandbox cannot be enforced on this kernel
  kOutputSchema,        // the final answer does not validate against --output-schema
  kOutputUnwritable,    // -o FILE cannot be written
  kUsageError,          // bad command line
  kConfigError,         // bad configuration, --output-schema file, session id, ...
};

// The wire name, e.g. "rate_limited"; "" for kNone.
const char* ErrorCodeName(ErrorCode code);

// Every code but kNone, in declaration order (the schema test and the docs list them).
inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::kModelError,       ErrorCode::kRateLimited,        ErrorCode::kAuth,
    ErrorCode::kContextLength,    ErrorCode::kMcpError,           ErrorCode::kMaxTurns,
    ErrorCode::kTimeout,          ErrorCode::kMaxTokens,          ErrorCode::kInterrupted,
    ErrorCode::kTerminated,       ErrorCode::kSandboxUnavailable, ErrorCode::kOutputSchema,
    ErrorCode::kOutputUnwritable, ErrorCode::kUsageError,         ErrorCode::kConfigError,
};

// The code whose wire name is `name` (ErrorCodeName's inverse); kNone for "" or an unknown
// name.
ErrorCode ErrorCodeFromName(std::string_view name);

// The code of a failed model request. The model client classifies its failures where it has
// the facts (the HTTP status, the error body's `code`/`type`, response.failed's error code, a
// missing key) and puts the code's name in Error::code; the message text is never read.
// Unclassified failures (a broken stream, a 5xx, a malformed event) are kModelError.
ErrorCode ClassifyModelError(const Error& error);

// A coarse view of an ErrorCode (how a turn or a session ended), always derived from the code
// by OutcomeOf and never stored beside it: ErrorCode is the one failure taxonomy, and
// cli/exit_code.h alone maps it to the exit code.
enum class SessionOutcome {
  kCompleted,           // code kNone
  kFailed,              // every code not below
  kSandboxUnavailable,  // sandbox_unavailable
  kLimitReached,        // max_turns, timeout, max_tokens
  kOutputFailed,        // output_unwritable
  kInterrupted,         // interrupted
  kTerminated,          // terminated
};

inline SessionOutcome OutcomeOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return SessionOutcome::kCompleted;
    case ErrorCode::kSandboxUnavailable:
      return SessionOutcome::kSandboxUnavailable;
    case ErrorCode::kMaxTurns:
    case ErrorCode::kTimeout:
    case ErrorCode::kMaxTokens:
      return SessionOutcome::kLimitReached;
    case ErrorCode::kOutputUnwritable:
      return SessionOutcome::kOutputFailed;
    case ErrorCode::kInterrupted:
      return SessionOutcome::kInterrupted;
    case ErrorCode::kTerminated:
      return SessionOutcome::kTerminated;
    default:
      return SessionOutcome::kFailed;
  }
}

}  // namespace ae
