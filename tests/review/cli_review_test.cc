// `review` on the command line: its options, one target at most, and the exact usage errors.
#include <gtest/gtest.h>

#include "runner/cli.h"

namespace ae {
namespace {

Result<CliArgs> Parse(std::vector<std::string> words) {
  std::vector<const char*> argv = {"agentexec"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  return ParseCli(static_cast<int>(argv.size()), argv.data());
}

const std::string kUsageTail =
    "\n\nUsage: agentexec [exec] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
    "[PROMPT]\n"
    "\nFor more information, try '--help'.";

TEST(ReviewCli, TargetsTitleFormatAndCommonOptions) {
  Result<CliArgs> args =
      Parse({"exec", "review", "--base", "main", "--title", "Faster totals", "--json", "-o", "r.md",
             "--format", "markdown", "-m", "gpt-x", "--max-turns", "3", "Focus on errors"});
  ASSERT_TRUE(args.ok()) << args.message();
  ASSERT_TRUE(args->review.has_value());
  EXPECT_EQ(args->review->base, "main");
  EXPECT_FALSE(args->review->commit.has_value());
  EXPECT_EQ(args->review->title, "Faster totals");
  EXPECT_EQ(args->review->format, "markdown");
  EXPECT_EQ(args->prompt, "Focus on errors");
  EXPECT_TRUE(args->json);
  EXPECT_EQ(args->model, "gpt-x");
  EXPECT_EQ(args->max_turns, 3);

  Result<CliArgs> bare = Parse({"review"});
  ASSERT_TRUE(bare.ok()) << bare.message();
  ASSERT_TRUE(bare->review.has_value());
  EXPECT_FALSE(bare->review->uncommitted);  // no target: the uncommitted changes
  EXPECT_EQ(bare->review->format, "json");
  EXPECT_FALSE(bare->prompt.has_value());

  // After "--" the word is a prompt, not the keyword.
  Result<CliArgs> literal = Parse({"--", "review"});
  ASSERT_TRUE(literal.ok()) << literal.message();
  EXPECT_FALSE(literal->review.has_value());
  EXPECT_EQ(literal->prompt, "review");
}

TEST(ReviewCli, UsageErrors) {
  struct Case {
    std::vector<std::string> words;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"review", "--base", "main", "--commit", "HEAD"},
       "error: the argument '--base <BRANCH>' cannot be used with '--commit <SHA>'"},
      {{"review", "--uncommitted", "--base", "main"},
       "error: the argument '--uncommitted' cannot be used with '--base <BRANCH>'"},
      {{"--base", "main", "fix it"}, "error: '--base <BRANCH>' is only valid after 'review'"},
      {{"--title", "T", "fix it"}, "error: '--title <TITLE>' is only valid after 'review'"},
      {{"review", "--format", "html"},
       "error: invalid value 'html' for '--format <FORMAT>'\n  [possible values: json, "
       "markdown]"},
      {{"review", "--output-schema", "s.json"},
       "error: the argument '--output-schema <FILE>' cannot be used with 'review' (a review has "
       "its own output schema)"},
  };
  for (const Case& c : cases) {
    Result<CliArgs> args = Parse(c.words);
    ASSERT_FALSE(args.ok()) << c.words[0];
    EXPECT_EQ(args.message(), c.error + kUsageTail);
  }
}

}  // namespace
}  // namespace ae
