// turn.failed's error.code -> exit code: each code has exactly one exit code (README table).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runner/exit_code.h"

namespace ae {
namespace {

TEST(ExitCodeMap, EveryErrorCodeHasItsExitCode) {
  const std::map<std::string, int> expected = {
      {"model_error", 1},       {"rate_limited", 1},        {"auth", 1},
      {"context_length", 1},    {"mcp_error", 1},           {"max_turns", 4},
      {"timeout", 4},           {"max_tokens", 4},          {"interrupted", 130},
      {"terminated", 143},      {"sandbox_unavailable", 3}, {"output_schema", 6},
      {"output_unwritable", 5}, {"usage_error", 2},         {"config_error", 2},
  };
  std::map<std::string, int> actual;
  for (ErrorCode code : kAllErrorCodes) actual[ErrorCodeName(code)] = ToInt(ExitCodeFor(code));
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(ToInt(ExitCodeFor(ErrorCode::kNone)), 0);
}

}  // namespace
}  // namespace ae
