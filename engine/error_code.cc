#include "engine/error_code.h"

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

ErrorCode ClassifyModelError(std::string_view message) {
  auto has = [&](std::string_view needle) {
    return message.find(needle) != std::string_view::npos;
  };
  if (has("context_length_exceeded") || has("maximum context length") || has("context window")) {
    return ErrorCode::kContextLength;
  }
  if (has("insufficient_quota") || has("429 Too Many Requests") || has("rate_limit_exceeded")) {
    return ErrorCode::kRateLimited;
  }
  if (has("401 Unauthorized") || has("403 Forbidden") || has("Missing environment variable") ||
      has("invalid_api_key")) {
    return ErrorCode::kAuth;
  }
  return ErrorCode::kModelError;
}

}  // namespace ae
