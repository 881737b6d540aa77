#include "engine/events/error_code.h"

namespace ae {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return "";
    case ErrorCode::kModelError:
      return "model_error";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kAuth:
      return "auth";
    case ErrorCode::kContextLength:
      return "context_length";
    case ErrorCode::kMcpError:
      return "mcp_error";
    case ErrorCode::kMaxTurns:
      return "max_turns";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kMaxTokens:
      return "max_tokens";
    case ErrorCode::kInterrupted:
      return "interrupted";
    case ErrorCode::kTerminated:
      return "terminated";
    case ErrorCode::kSandboxUnavailable:
      return "sandbox_unavailable";
    case ErrorCode::kOutputSchema:
      return "output_schema";
    case ErrorCode::kOutputUnwritable:
      return "output_unwritable";
    case ErrorCode::kUsageError:
      return "usage_error";
    case ErrorCode::kConfigError:
      return "config_error";
  }
  return "model_error";
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (ErrorCode code : kAllErrorCodes) {
    if (name == ErrorCodeName(code)) return code;
  }
  return ErrorCode::kNone;
}

ErrorCode ClassifyModelError(const Error& error) {
  ErrorCode code = ErrorCodeFromName(error.code);
  return code == ErrorCode::kNone ? ErrorCode::kModelError : code;
}

}  // namespace ae
