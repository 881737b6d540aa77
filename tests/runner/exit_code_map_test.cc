// turn.failed's error.code -> exit code: each code has exactly one exit code (README table).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/exit_code.h"

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

// The one table --help, README, the Action, the component and run.sh's legend are checked
// against (tests/dist/exit_codes_test.py): every code a run can end with, in order, and the
// codes turn.failed maps to are all in it.
TEST(ExitCodeMap, TheTableListsEveryRunExitCode) {
  std::vector<int> codes;
  for (const ExitCodeInfo& e : kExitCodes) codes.push_back(ToInt(e.code));
  EXPECT_EQ(codes, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 130, 143}));
  for (ErrorCode code : kAllErrorCodes) {
    const int exit = ToInt(ExitCodeFor(code));
    EXPECT_NE(std::find(codes.begin(), codes.end(), exit), codes.end()) << exit;
  }
  const std::string help = HelpText();
  std::string lines = "Exit codes:\n";
  for (const ExitCodeInfo& e : kExitCodes) {
    lines += fmt::format("  {:<8} {}\n", ToInt(e.code), e.meaning);
  }
  EXPECT_NE(help.find(lines + "\n"), std::string::npos) << help;
}

}  // namespace
}  // namespace ae
