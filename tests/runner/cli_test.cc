#include "cli/cli.h"

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include <sstream>
#include <string>
#include <vector>

#include "base/duration.h"

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
    "       agentexec [exec] fork SESSION_ID [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
    "[PROMPT]\n"
    "\nFor more information, try '--help'.";

TEST(Cli, PromptAndExecKeyword) {
  for (auto words : std::vector<std::vector<std::string>>{{"fix it"}, {"exec", "fix it"}}) {
    Result<CliArgs> args = Parse(words);
    ASSERT_TRUE(args.ok()) << args.message();
    EXPECT_EQ(args->prompt, "fix it");
    EXPECT_FALSE(args->resume);
  }
}

TEST(Cli, NoPromptOrDashMeansStdin) {
  Result<CliArgs> none = Parse({"--json"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->prompt.has_value());
  Result<CliArgs> dash = Parse({"exec", "-"});
  ASSERT_TRUE(dash.ok()) << dash.message();
  EXPECT_EQ(dash->prompt, "-");
}

TEST(Cli, EveryOptionValidBeforeOrAfterResume) {
  const std::vector<std::vector<std::string>> placements = {
      {"exec", "--json", "-m", "o3", "-c", "a=1", "resume", "ID", "go"},
      {"exec", "resume", "--json", "-m", "o3", "-c", "a=1", "ID", "go"},
      {"exec", "resume", "ID", "go", "--json", "-m", "o3", "-c", "a=1"},
      {"--json", "resume", "ID", "-m", "o3", "go", "-c", "a=1"},
      {"resume", "-c", "a=1", "ID", "--json", "go", "-m", "o3"},
  };
  for (const auto& words : placements) {
    Result<CliArgs> args = Parse(words);
    ASSERT_TRUE(args.ok()) << args.message();
    EXPECT_TRUE(args->resume);
    EXPECT_FALSE(args->resume_last);
    EXPECT_EQ(args->session_id, "ID");
    EXPECT_EQ(args->prompt, "go");
    EXPECT_TRUE(args->json);
    EXPECT_EQ(args->model, "o3");
    EXPECT_EQ(args->config_overrides, std::vector<std::string>{"a=1"});
  }
}

TEST(Cli, ResumeLast) {
  for (auto words : std::vector<std::vector<std::string>>{{"exec", "resume", "--last", "go on"},
                                                          {"--last", "resume", "go on"},
                                                          {"resume", "go on", "--last"}}) {
    Result<CliArgs> args = Parse(words);
    ASSERT_TRUE(args.ok()) << args.message();
    EXPECT_TRUE(args->resume);
    EXPECT_TRUE(args->resume_last);
    EXPECT_FALSE(args->session_id.has_value());
    EXPECT_EQ(args->prompt, "go on");
  }
  Result<CliArgs> no_prompt = Parse({"resume", "--last"});
  ASSERT_TRUE(no_prompt.ok());
  EXPECT_FALSE(no_prompt->prompt.has_value());
}

// codex's own tests resume with the prompt before the keyword: `exec PROMPT resume --last|ID`.
TEST(Cli, PromptBeforeResumeAsCodexTakesIt) {
  Result<CliArgs> last = Parse({"exec", "--skip-git-repo-check", "echo two", "resume", "--last"});
  ASSERT_TRUE(last.ok()) << last.message();
  EXPECT_TRUE(last->resume);
  EXPECT_TRUE(last->resume_last);
  EXPECT_EQ(last->prompt, "echo two");
  const std::string id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
  Result<CliArgs> by_id = Parse({"exec", "echo two", "resume", id, "--json"});
  ASSERT_TRUE(by_id.ok()) << by_id.message();
  EXPECT_TRUE(by_id->resume);
  EXPECT_EQ(by_id->session_id, id);
  EXPECT_EQ(by_id->prompt, "echo two");
  EXPECT_EQ(Parse({"first", "resume", "--last", "second"}).message(),
            "error: a prompt before 'resume' ('first') and another after it ('second'): give one "
            "of them" +
                kUsageTail);
  EXPECT_EQ(Parse({"first", "resume", id, "second"}).message(),
            "error: a prompt before 'resume' ('first') and another after it ('second'): give one "
            "of them" +
                kUsageTail);
  // After `--` nothing is a keyword.
  Result<CliArgs> literal = Parse({"--", "first", "resume"});
  EXPECT_EQ(literal.message(), "error: unexpected argument 'resume' found" + kUsageTail);
}

// codex's `exec fork SESSION_ID [PROMPT]`, options anywhere; the id is required, --last is
// resume's only, and after `--` "fork" is the prompt.
TEST(Cli, ForkTakesASessionIdAndAnOptionalPrompt) {
  const std::string id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
  Result<CliArgs> with = Parse({"exec", "fork", "--json", id, "go on", "-m", "m1"});
  ASSERT_TRUE(with.ok()) << with.message();
  EXPECT_TRUE(with->fork);
  EXPECT_FALSE(with->resume);
  EXPECT_EQ(with->session_id, id);
  EXPECT_EQ(with->prompt, "go on");
  EXPECT_EQ(with->model, "m1");
  Result<CliArgs> without = Parse({"fork", id});
  ASSERT_TRUE(without.ok()) << without.message();
  EXPECT_TRUE(without->fork);
  EXPECT_EQ(without->prompt, std::nullopt);
  EXPECT_EQ(Parse({"fork"}).message(), "error: 'fork' needs a SESSION_ID" + kUsageTail);
  EXPECT_EQ(Parse({"fork", "--last", "x"}).message(),
            "error: '--last' is only valid after 'resume'" + kUsageTail);
  EXPECT_EQ(Parse({"fork", id, "a", "b"}).message(),
            "error: unexpected argument 'b' found" + kUsageTail);
  Result<CliArgs> literal = Parse({"--", "fork"});
  ASSERT_TRUE(literal.ok()) << literal.message();
  EXPECT_FALSE(literal->fork);
  EXPECT_EQ(literal->prompt, "fork");
}

// codex 0.171's exec flags: those with nothing to do here are accepted, --enable/--disable
// become codex's features.* keys, and those agentexec cannot honour say what to do instead.
TEST(Cli, CodexFlagsAreAcceptedMappedOrRefusedWithTheWayOut) {
  Result<CliArgs> ok =
      Parse({"--trust", "--ignore-rules", "--dangerously-bypass-hook-trust", "--enable", "a",
             "--disable", "b", "--local-provider", "ollama", "-c", "model=m", "go"});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->prompt, "go");
  EXPECT_EQ(ok->config_overrides,
            (std::vector<std::string>{"model=m", "features.a=true", "features.b=false"}));
  EXPECT_EQ(Parse({"--remote", "ws://x", "go"}).message(),
            "error: '--remote' connects codex to an app server; agentexec runs the agent in its "
            "own process and has no server to connect to: drop --remote and "
            "--remote-auth-token-env" +
                kUsageTail);
  EXPECT_EQ(Parse({"--worktree", "go"}).message(),
            "error: '--worktree' (a git worktree codex manages) is not supported: create one with "
            "`git worktree add DIR` and run agentexec with -C DIR" +
                kUsageTail);
  EXPECT_EQ(Parse({"--approve-for-me", "go"}).message(),
            "error: '--approve-for-me' hands approvals to codex's automatic reviewer; agentexec "
            "asks no one: choose the sandbox (-s workspace-write) and, to retry denied commands "
            "unsandboxed, -a on-failure" +
                kUsageTail);
  EXPECT_EQ(Parse({"--local-provider", "lmstudio", "go"}).message(),
            "error: invalid value 'lmstudio' for '--local-provider <OSS_PROVIDER>'\n  [agentexec "
            "has one local provider built in, ollama; add another as [model_providers.ID] with "
            "wire_api = \"chat\" and -c model_provider=ID]" +
                kUsageTail);
}

TEST(Cli, AMistypedCommandIsNotSentAsThePrompt) {
  EXPECT_EQ(Parse({"reveiw"}).message(),
            "error: 'reveiw' is not a command; did you mean 'review'? To send 'reveiw' as the "
            "prompt, put it after --: agentexec -- reveiw" +
                kUsageTail);
  EXPECT_EQ(Parse({"exec", "resme", "--json"}).message(),
            "error: 'resme' is not a command; did you mean 'resume'? To send 'resme' as the "
            "prompt, put it after --: agentexec -- resme" +
                kUsageTail);
  EXPECT_EQ(Parse({"--", "reveiw"})->prompt, "reveiw");
  // Prompts that only look alike stay prompts: two edits away, capitals, spaces, short words.
  for (const char* prompt : {"hello", "Review", "review this", "exe", "tests", "fix"}) {
    Result<CliArgs> args = Parse({prompt});
    ASSERT_TRUE(args.ok()) << prompt << ": " << args.message();
    EXPECT_EQ(args->prompt, prompt);
  }
}

TEST(Cli, AnEmptyModelIsAUsageError) {
  EXPECT_EQ(Parse({"-m", "", "hi"}).message(),
            "error: invalid value '' for '--model <MODEL>'\n  [a model name cannot be empty]" +
                kUsageTail);
}

TEST(Cli, ResumeErrors) {
  EXPECT_EQ(Parse({"resume"}).message(),
            "error: 'resume' needs a SESSION_ID or --last" + kUsageTail);
  EXPECT_EQ(Parse({"--last", "hi"}).message(),
            "error: '--last' is only valid after 'resume'" + kUsageTail);
  EXPECT_EQ(Parse({"resume", "ID", "one", "two"}).message(),
            "error: unexpected argument 'two' found" + kUsageTail);
}

TEST(Cli, ResumeLastAndAnIdExcludeEachOther) {
  const std::string id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
  EXPECT_EQ(Parse({"resume", "--last", id}).message(),
            "error: the argument '--last' cannot be used with '" + id +
                "': '--last' and a SESSION_ID exclude each other" + kUsageTail);
  EXPECT_EQ(Parse({"resume", id, "--last", "go on"}).message(),
            "error: the argument '--last' cannot be used with '" + id +
                "': '--last' and a SESSION_ID exclude each other" + kUsageTail);
  // One word that is not an id is the prompt, as before.
  EXPECT_EQ(Parse({"resume", "--last", "continue"})->prompt, "continue");
}

TEST(Cli, HelpAndSchemaAreCommandsOnlyWhenAlone) {
  EXPECT_EQ(Parse({"help"})->help_text, HelpText());
  EXPECT_EQ(Parse({"exec", "help"})->help_text, HelpText());
  EXPECT_TRUE(Parse({"schema"})->print_schema);
  EXPECT_TRUE(Parse({"exec", "schema", "--json"})->print_schema);
  Result<CliArgs> literal = Parse({"--", "help"});
  EXPECT_FALSE(literal->help_text.has_value());
  EXPECT_EQ(literal->prompt, "help");
  Result<CliArgs> resumed = Parse({"resume", "ID", "schema"});
  EXPECT_FALSE(resumed->print_schema);
  EXPECT_EQ(resumed->prompt, "schema");
}

TEST(Cli, DoubleDashMakesEverythingLiteral) {
  Result<CliArgs> args = Parse({"--json", "--", "resume"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_FALSE(args->resume);
  EXPECT_EQ(args->prompt, "resume");
  Result<CliArgs> dashes = Parse({"--", "--not-an-option"});
  ASSERT_TRUE(dashes.ok()) << dashes.message();
  EXPECT_EQ(dashes->prompt, "--not-an-option");
}

TEST(Cli, UnknownOption) {
  // As clap words it for codex, tip included.
  EXPECT_EQ(Parse({"--foo", "hi"}).message(),
            "error: unexpected argument '--foo' found\n\n"
            "  tip: to pass '--foo' as a value, use '-- --foo'" +
                kUsageTail);
  EXPECT_EQ(Parse({"--foo=1", "hi"}).message(),
            "error: unexpected argument '--foo' found\n\n"
            "  tip: to pass '--foo' as a value, use '-- --foo'" +
                kUsageTail);
  EXPECT_EQ(Parse({"hi", "-x"}).message(),
            "error: unexpected argument '-x' found\n\n  tip: to pass '-x' as a value, use '-- -x'" +
                kUsageTail);
}

TEST(Cli, MissingValue) {
  EXPECT_EQ(Parse({"-m"}).message(),
            "error: a value is required for '--model' but none was supplied" + kUsageTail);
}

TEST(Cli, RepeatableOptionsKeepOrderAndNeverSwallowThePrompt) {
  Result<CliArgs> args = Parse({"-c", "b=2", "--config", "a=1", "--add-dir", "/x", "--add-dir",
                                "/y", "-i", "p.png", "the prompt", "-c", "c=3"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->config_overrides, (std::vector<std::string>{"b=2", "a=1", "c=3"}));
  EXPECT_EQ(args->add_dirs, (std::vector<std::string>{"/x", "/y"}));
  EXPECT_EQ(args->images, std::vector<std::string>{"p.png"});
  EXPECT_EQ(args->prompt, "the prompt");
}

TEST(Cli, Aliases) {
  Result<CliArgs> args = Parse({"--experimental-json", "--yolo", "x"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_TRUE(args->json);
  EXPECT_TRUE(args->dangerously_bypass);
  Result<CliArgs> long_form = Parse({"--dangerously-bypass-approvals-and-sandbox", "x"});
  ASSERT_TRUE(long_form.ok());
  EXPECT_TRUE(long_form->dangerously_bypass);
}

TEST(Cli, AllOptions) {
  Result<CliArgs> args = Parse({"-o",
                                "out.txt",
                                "--output-schema",
                                "s.json",
                                "-m",
                                "m1",
                                "-p",
                                "ci",
                                "-s",
                                "workspace-write",
                                "-C",
                                "dir",
                                "--skip-git-repo-check",
                                "--ephemeral",
                                "--ignore-user-config",
                                "--strict-config",
                                "--color",
                                "never",
                                "--oss",
                                "-a",
                                "on-failure",
                                "--max-turns",
                                "7",
                                "--timeout",
                                "1h30m",
                                "--print-config",
                                "--events-file",
                                "ev.jsonl",
                                "p"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->output_last_message, "out.txt");
  EXPECT_EQ(args->events_file, "ev.jsonl");
  EXPECT_FALSE(args->json);
  EXPECT_EQ(args->output_schema, "s.json");
  EXPECT_EQ(args->model, "m1");
  EXPECT_EQ(args->profile, "ci");
  EXPECT_EQ(args->sandbox, sandbox::Mode::kWorkspaceWrite);
  EXPECT_EQ(args->cd, "dir");
  EXPECT_TRUE(args->skip_git_repo_check);
  EXPECT_TRUE(args->ephemeral);
  EXPECT_TRUE(args->ignore_user_config);
  EXPECT_TRUE(args->strict_config);
  EXPECT_EQ(args->color, "never");
  EXPECT_TRUE(args->oss);
  EXPECT_EQ(args->approval, ApprovalPolicy::kOnFailure);
  EXPECT_EQ(args->max_turns, 7);
  EXPECT_EQ(args->timeout_ms, 5400000);
  EXPECT_TRUE(args->print_config);
  EXPECT_EQ(args->prompt, "p");
}

TEST(Cli, LastValueOfARepeatedSingleOptionWins) {
  Result<CliArgs> args = Parse({"-m", "a", "--model", "b", "x"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->model, "b");
}

TEST(Cli, InvalidValues) {
  EXPECT_EQ(Parse({"-s", "open"}).message(),
            "error: invalid value 'open' for '--sandbox <MODE>'\n"
            "  [possible values: read-only, workspace-write, danger-full-access]" +
                kUsageTail);
  EXPECT_EQ(Parse({"--color", "pink"}).message(),
            "error: invalid value 'pink' for '--color <COLOR>'\n"
            "  [possible values: always, never, auto]" +
                kUsageTail);
  EXPECT_EQ(Parse({"--max-turns", "0"}).message(),
            "error: invalid value '0' for '--max-turns <N>'\n  [expected a positive integer]" +
                kUsageTail);
  EXPECT_EQ(Parse({"--timeout", "soon"}).message(),
            "error: invalid value 'soon' for '--timeout <DURATION>'\n"
            "  [expected e.g. 90s, 10m, 1h30m, 500ms or a number of seconds]" +
                kUsageTail);
  EXPECT_EQ(Parse({"-a", "always"}).message(),
            "error: invalid value 'always' for '--ask-for-approval <POLICY>'\n"
            "  [possible values: never, on-failure]" +
                kUsageTail);
}

TEST(Cli, InteractiveApprovalValuesAreErrors) {
  for (std::string value : {"untrusted", "on-request"}) {
    EXPECT_EQ(Parse({"-a", value, "x"}).message(),
              "error: '--ask-for-approval " + value +
                  "' needs someone to answer prompts, and agentexec is headless; use never or "
                  "on-failure" +
                  kUsageTail);
  }
}

TEST(Cli, Conflicts) {
  EXPECT_EQ(Parse({"--yolo", "-s", "read-only"}).message(),
            "error: the argument '--dangerously-bypass-approvals-and-sandbox' cannot be used "
            "with '--sandbox <MODE>'" +
                kUsageTail);
  EXPECT_EQ(
      Parse({"--full-auto", "-s", "read-only"}).message(),
      "error: the argument '--full-auto' cannot be used with '--sandbox <MODE>'" + kUsageTail);
}

TEST(Cli, HelpAndVersionWinAndAreDistinct) {
  Result<CliArgs> help = Parse({"--bogus", "-h"});
  ASSERT_TRUE(help.ok());
  ASSERT_TRUE(help->help_text.has_value());
  EXPECT_EQ(*help->help_text, HelpText());
  EXPECT_FALSE(help->version_text.has_value());
  Result<CliArgs> version = Parse({"exec", "-V"});
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->version_text,
            std::string("agentexec ") + AGENTEXEC_VERSION + " (" + AGENTEXEC_COMMIT + ")\n");
  EXPECT_FALSE(version->help_text.has_value());
  // After "--" they are the prompt.
  Result<CliArgs> literal = Parse({"--", "-h"});
  ASSERT_TRUE(literal.ok());
  EXPECT_FALSE(literal->help_text.has_value());
  EXPECT_EQ(literal->prompt, "-h");
}

TEST(Cli, HelpListsEveryOptionOnePerLineAndTheExitCodes) {
  const std::string help = HelpText();
  for (const char* option : {"--json",
                             "--output-last-message",
                             "--events-file",
                             "--output-schema",
                             "--model",
                             "--profile",
                             "--config",
                             "--sandbox",
                             "--dangerously-bypass-approvals-and-sandbox",
                             "--yolo",
                             "--full-auto",
                             "--cd",
                             "--add-dir",
                             "--skip-git-repo-check",
                             "--ephemeral",
                             "--ignore-user-config",
                             "--strict-config",
                             "--color",
                             "--image",
                             "--oss",
                             "--help",
                             "--version",
                             "--ask-for-approval",
                             "--max-turns",
                             "--timeout",
                             "--print-config",
                             "--last"}) {
    EXPECT_NE(help.find(std::string(option) + " "), std::string::npos) << option;
  }
  EXPECT_NE(help.find("Exit codes:\n  0 "), std::string::npos);
  for (const char* code :
       {"\n  1 ", "\n  2 ", "\n  3 ", "\n  4 ", "\n  5 ", "\n  6 ", "\n  130 ", "\n  143 "}) {
    EXPECT_NE(help.find(code), std::string::npos) << code;
  }
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 100u) << line;
  }
}

TEST(Duration, Parses) {
  const std::pair<const char*, int64_t> cases[] = {
      {"90s", 90000}, {"10m", 600000},  {"1h30m", 5400000}, {"500ms", 500},
      {"90", 90000},  {"1m30s", 90000}, {"2h", 7200000},    {"1h2m3s4ms", 3723004},
  };
  for (const auto& [text, ms] : cases) {
    Result<int64_t> parsed = ParseDurationMs(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.message();
    EXPECT_EQ(*parsed, ms) << text;
    EXPECT_EQ(*ParseDurationMs(FormatDurationMs(ms)), ms) << text;
  }
  EXPECT_EQ(FormatDurationMs(5400000), "1h30m");
  EXPECT_EQ(FormatDurationMs(1500), "1s500ms");
}

TEST(Duration, Rejects) {
  for (const char* text : {"", "abc", "10x", "30s1m", "1h1h", "-5", "1.5s", "m", "10 m"}) {
    Result<int64_t> parsed = ParseDurationMs(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.message(), std::string("invalid duration '") + text +
                                    "': expected e.g. 90s, 10m, 1h30m, 500ms or a number of "
                                    "seconds");
  }
  EXPECT_EQ(ParseDurationMs("0s").message(), "invalid duration '0s': must be greater than zero");
  EXPECT_FALSE(ParseDurationMs("99999999999999999999h").ok());
}

namespace ae {
namespace {

TEST(CliSdkFlagsTest, FlagsNewerCodexSdksPassAreAcceptedAndIgnored) {
  const char* argv[] = {"agentexec",
                        "exec",
                        "--experimental-json",
                        "--thread-source",
                        "user",
                        "--cyber-access-program",
                        "x",
                        "hi"};
  Result<CliArgs> args = ParseCli(8, argv);
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_TRUE(args->json);
  EXPECT_EQ(args->prompt, "hi");
}

// `review`: its options, one target at most, and the exact usage errors.
TEST(ReviewCli, TargetsTitleFormatAndCommonOptions) {
  Result<CliArgs> args =
      Parse({"exec", "review", "--base", "main", "--title", "Faster totals", "--json", "-o", "r.md",
             "--format", "markdown", "-m", "gpt-x", "--max-turns", "3", "Focus on errors"});
  ASSERT_TRUE(args.ok()) << args.message();
  ASSERT_TRUE(args->review.has_value());
  EXPECT_EQ(args->review->base, "main");
  EXPECT_FALSE(args->review->commit.has_value());
  EXPECT_EQ(args->review->title, "Faster totals");
  EXPECT_EQ(args->review->format, ReviewFormat::kMarkdown);
  EXPECT_EQ(args->prompt, "Focus on errors");
  EXPECT_TRUE(args->json);
  EXPECT_EQ(args->model, "gpt-x");
  EXPECT_EQ(args->max_turns, 3);

  Result<CliArgs> bare = Parse({"review"});
  ASSERT_TRUE(bare.ok()) << bare.message();
  ASSERT_TRUE(bare->review.has_value());
  EXPECT_FALSE(bare->review->uncommitted);  // no target: the uncommitted changes
  EXPECT_EQ(bare->review->format, ReviewFormat::kJson);
  for (const auto& [word, format] : {std::pair{"sarif", ReviewFormat::kSarif},
                                     std::pair{"codequality", ReviewFormat::kCodeQuality}}) {
    Result<CliArgs> ci = Parse({"review", "--format", word});
    ASSERT_TRUE(ci.ok()) << ci.message();
    EXPECT_EQ(ci->review->format, format) << word;
  }
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
       "markdown, sarif, codequality]"},
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

TEST(Cli, MaxTokensIsAPositiveTokenCount) {
  Result<CliArgs> args = Parse({"--max-tokens", "5000000000", "p"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->max_tokens, 5000000000);
  for (const char* bad : {"0", "-5", "lots"}) {
    EXPECT_EQ(Parse({"--max-tokens", bad}).message(),
              std::string("error: invalid value '") + bad +
                  "' for '--max-tokens <N>'\n  [expected a positive integer]" + kUsageTail);
  }
}

// ---- agentexec sandbox: the same parser, options and messages ----

const std::string kSandboxUsageTail =
    "\n\nUsage: agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND "
    "[ARGS]...\n\nFor more information, try '--help'.";

TEST(CliSandbox, OptionsThenTheCommand) {
  Result<CliArgs> args =
      Parse({"exec", "sandbox", "-s", "workspace-write", "--add-dir", "/d", "-c", "k=v", "-p", "ci",
             "--strict-config", "--ignore-user-config", "make", "-j2", "--json", "-h"});
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->sandbox_command, (std::vector<std::string>{"make", "-j2", "--json", "-h"}));
  EXPECT_EQ(args->sandbox, sandbox::Mode::kWorkspaceWrite);
  EXPECT_EQ(args->add_dirs, (std::vector<std::string>{"/d"}));
  EXPECT_EQ(args->config_overrides, (std::vector<std::string>{"k=v"}));
  EXPECT_EQ(args->profile, "ci");
  EXPECT_TRUE(args->strict_config);
  EXPECT_TRUE(args->ignore_user_config);
  EXPECT_FALSE(args->help_text.has_value());

  Result<CliArgs> dashed = Parse({"sandbox", "--", "-weird-name", "x"});
  ASSERT_TRUE(dashed.ok()) << dashed.message();
  EXPECT_EQ(dashed->sandbox_command, (std::vector<std::string>{"-weird-name", "x"}));
  EXPECT_FALSE(dashed->sandbox.has_value());

  // A run's command line never sets it.
  Result<CliArgs> run = Parse({"sandbox it"});
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(run->sandbox_command.has_value());
}

TEST(CliSandbox, ErrorsAreWordedAsExecs) {
  EXPECT_EQ(Parse({"sandbox", "-s", "open", "--", "true"}).message(),
            "error: invalid value 'open' for '--sandbox <MODE>'\n"
            "  [possible values: read-only, workspace-write, danger-full-access]" +
                kSandboxUsageTail);
  EXPECT_EQ(Parse({"sandbox", "-s", "read-only"}).message(),
            "error: 'sandbox' needs a COMMAND to run" + kSandboxUsageTail);
  EXPECT_EQ(Parse({"sandbox", "--"}).message(),
            "error: 'sandbox' needs a COMMAND to run" + kSandboxUsageTail);
  // An option exec has but sandbox does not is refused, not run as the command.
  EXPECT_EQ(Parse({"sandbox", "--json", "true"}).message(),
            "error: unexpected argument '--json' found\n\n  tip: to pass '--json' as a value, "
            "use '-- --json'" +
                kSandboxUsageTail);
  EXPECT_EQ(Parse({"sandbox", "-c"}).message(),
            "error: a value is required for '--config' but none was supplied" + kSandboxUsageTail);
}

TEST(CliSandbox, HelpIsTheSandboxsOwn) {
  Result<CliArgs> help = Parse({"sandbox", "--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_EQ(help->help_text, SandboxHelpText());
  EXPECT_TRUE(SandboxHelpText().starts_with("agentexec sandbox - run one command"));
  EXPECT_NE(HelpText().find("agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... "
                            "[--] COMMAND [ARGS]..."),
            std::string::npos);
}

// batch run passes on exactly the exec options that configure a task, as exec's table says;
// the ones batch sets itself (-o, --events-file, -C) and the run-only ones are refused.
TEST(CliBatchPassOn, FollowsExecsOptionTable) {
  for (const char* value : {"-m", "--model", "-p", "--profile", "-c", "--config", "-s", "--sandbox",
                            "--add-dir", "--color", "-i", "--image", "-a", "--ask-for-approval",
                            "--max-turns", "--max-tokens", "--timeout", "--output-schema"}) {
    EXPECT_EQ(BatchPassOn(value), PassOn::kValue) << value;
  }
  for (const char* flag :
       {"--skip-git-repo-check", "--ephemeral", "--ignore-user-config", "--strict-config",
        "--full-auto", "--dangerously-bypass-approvals-and-sandbox", "--yolo", "--oss",
        "--progress", "--json", "--experimental-json"}) {
    EXPECT_EQ(BatchPassOn(flag), PassOn::kFlag) << flag;
  }
  for (const char* other :
       {"-o", "--output-last-message", "--events-file", "-C", "--cd", "--print-config", "--last",
        "--base", "--format", "-h", "-V", "--thread-source", "model", "-"}) {
    EXPECT_EQ(BatchPassOn(other), PassOn::kNo) << other;
  }
  // No table has it: batch then says what exec says of it.
  for (const char* unknown : {"--nope", "-x", "--foo=bar"}) {
    EXPECT_EQ(BatchPassOn(unknown), PassOn::kUnknown) << unknown;
  }
  EXPECT_EQ(
      UnexpectedArgumentText("--foo=bar"),
      "unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, use '-- --foo'");
}

}  // namespace
}  // namespace ae

// batch run reads the options it passes on with exec's own table and parser: what each task
// gets is the options given, by their long names in table order, every value of a repeatable
// one in order, and --json (implied) dropped.
TEST(CliBatchPassOn, PassedOnOptionsGiveBackExecWords) {
  CLI::App app{"batch run"};
  PassedOnOptions passed(app);
  std::vector<std::string> words = {"-c",     "a=1",          "--json", "-m",       "gpt-x",
                                    "--yolo", "--config=b=2", "-s",     "read-only"};
  std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
  app.parse(std::move(words));
  EXPECT_EQ(passed.Words(),
            (std::vector<std::string>{"--model", "gpt-x", "--sandbox", "read-only", "--yolo",
                                      "--config", "a=1", "--config", "b=2"}));
}

}  // namespace
}  // namespace ae
