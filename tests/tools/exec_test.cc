// exec_command and shell end to end: real processes through the router and orchestrator,
// checking the items emitted and the exact text fed back to the model.
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "base/utf8.h"

#include "engine/exec/env_policy.h"
#include "engine/exec/model_output.h"
#include "engine/exec/shell_quote.h"
#include "engine/tools/exec.h"
#include "tool_fixture.h"

namespace ae::testing {
namespace {

class ExecTest : public ToolTest {
 protected:
  std::unique_ptr<ToolRouter> router_ = MakeDefaultRouter();
};

TEST(ShellQuote, MatchesCodexDisplay) {
  EXPECT_EQ(ShellQuote("echo hi"), "'echo hi'");
  EXPECT_EQ(ShellQuote("true"), "true");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("echo $HOME"), "'echo $HOME'");
  EXPECT_EQ(ShellQuote("env | grep -i -E 'codex|sandbox' | sort"),
            "\"env | grep -i -E 'codex|sandbox' | sort\"");
  EXPECT_EQ(ShellQuote("it's $HOME"), "\"it's \"'$HOME'");
  EXPECT_EQ(ShellQuote("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(ShellJoin({"/bin/bash", "-lc", "echo hi"}), "/bin/bash -lc 'echo hi'");
}

TEST_F(ExecTest, ExecCommandOutputAndItems) {
  ToolResult r = Call(*router_, "exec_command", Cmd("echo out1; echo err1 >&2; echo out2"));
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.call_id, "call_1");
  EXPECT_EQ(Stable(r.output),
            "Chunk ID: ID\nWall time: T seconds\nProcess exited with code 0\n"
            "Original token count: 4\nOutput:\nout1\nerr1\nout2\n");
  EXPECT_TRUE(std::regex_search(r.output, std::regex("Wall time: [0-9]+\\.[0-9]{4} seconds")));
  ASSERT_EQ(Trace(), (std::vector<std::string>{"started item_0 command_execution",
                                               "completed item_0 command_execution"}));
  auto items = Items(0);
  const auto& started = std::get<CommandExecutionItem>(items[0].details);
  EXPECT_EQ(started.command, "/bin/bash -c 'echo out1; echo err1 >&2; echo out2'");
  EXPECT_EQ(started.aggregated_output, "");
  EXPECT_FALSE(started.exit_code.has_value());
  EXPECT_EQ(started.status, ItemStatus::kInProgress);
  const auto& done = std::get<CommandExecutionItem>(items[1].details);
  EXPECT_EQ(done.aggregated_output, "out1\nerr1\nout2\n");
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_EQ(done.status, ItemStatus::kCompleted);
}

TEST_F(ExecTest, LoginShellIsTheDefault) {
  Call(*router_, "exec_command", "{\"cmd\":\"shopt -q login_shell && echo login\"}");
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.command, "/bin/bash -lc 'shopt -q login_shell && echo login'");
  EXPECT_NE(item.aggregated_output.find("login\n"), std::string::npos) << item.aggregated_output;
}

TEST_F(ExecTest, FailingCommandIsFailedItem) {
  ToolResult r = Call(*router_, "exec_command", Cmd("echo oops; exit 3"));
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.output.find("Process exited with code 3\n"), std::string::npos);
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.exit_code, 3);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_EQ(item.aggregated_output, "oops\n");
}

TEST_F(ExecTest, WorkdirResolvesAgainstCwd) {
  Write("sub/dir/marker", "");
  ToolResult r = Call(*router_, "exec_command", Cmd("pwd", ",\"workdir\":\"sub/dir\""));
  EXPECT_NE(r.output.find("Output:\n" + Path("sub/dir") + "\n"), std::string::npos) << r.output;
  r = Call(*router_, "exec_command", Cmd("pwd", ",\"workdir\":\"" + Path("sub") + "\""));
  EXPECT_NE(r.output.find("Output:\n" + Path("sub") + "\n"), std::string::npos) << r.output;
  EXPECT_EQ(ResolveWorkdir("/w", ""), "/w");
  EXPECT_EQ(ResolveWorkdir("/w", "a/../b/"), "/w/b");
  EXPECT_EQ(ResolveWorkdir("/w", "/abs"), "/abs");
}

TEST_F(ExecTest, LongOutputIsCutLikeCodex) {
  std::string all;
  for (int i = 1; i <= 100000; ++i) all += std::to_string(i) + "\n";
  ToolResult r =
      Call(*router_, "exec_command", Cmd("seq 1 100000", ",\"max_output_tokens\":10000"));
  uint64_t tokens = (all.size() + 3) / 4;
  std::string expected =
      "Chunk ID: ID\nWall time: T seconds\nProcess exited with code 0\n" +
      fmt::format("Original token count: {}\nOutput:\n", tokens) +
      fmt::format("Warning: truncated output (original token count: {})\n", tokens) +
      "Total output lines: 100000\n\n" + all.substr(0, 20000) +
      fmt::format("\u2026{} tokens truncated\u2026", (all.size() - 40000 + 3) / 4) +
      all.substr(all.size() - 20000);
  EXPECT_EQ(Stable(r.output), expected);
  // The item keeps everything (well under the 1 MiB capture cap).
  EXPECT_EQ(Completed<CommandExecutionItem>().aggregated_output, all);
}

TEST_F(ExecTest, CaptureCapMarksTheItemAndTheModelText) {
  turn_.command_output_max_bytes = 1000;
  turn_.model_output_max_bytes = 100;
  ToolResult r = Call(*router_, "shell", "{\"command\":[\"seq\",\"1\",\"5000\"]}");
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_NE(item.aggregated_output.find("\n[... 22893 bytes omitted ...]\n"), std::string::npos)
      << item.aggregated_output;
  EXPECT_EQ(item.aggregated_output.substr(0, 10), "1\n2\n3\n4\n5\n");
  EXPECT_EQ(item.aggregated_output.substr(item.aggregated_output.size() - 5), "5000\n");
  EXPECT_TRUE(r.output.starts_with("Exit code: 0\nWall time: "));
  EXPECT_NE(r.output.find("seconds\nTotal output lines: 5000\nOutput:\n1\n2\n"), std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("\u2026" + std::to_string((23893 - 100 + 3) / 4) + " tokens truncated\u2026"),
      std::string::npos)
      << r.output;
}

TEST_F(ExecTest, TimeoutKillsAndSaysSo) {
  ToolResult r =
      Call(*router_, "exec_command", Cmd("echo before; sleep 30", ",\"timeout_ms\":300"));
  EXPECT_FALSE(r.success);
  EXPECT_NE(r.output.find("Process exited with code 124\n"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("Output:\ncommand timed out after [0-9]+ milliseconds\nbefore\n$")))
      << r.output;
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.exit_code, 124);
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  EXPECT_TRUE(std::regex_match(item.aggregated_output,
                               std::regex("before\ncommand timed out after [0-9]+ milliseconds\n")))
      << item.aggregated_output;
}

TEST_F(ExecTest, DefaultTimeoutComesFromTheTurn) {
  turn_.command_timeout_ms = 200;
  ToolResult r = Call(*router_, "shell", "{\"command\":[\"sleep\",\"30\"]}");
  EXPECT_TRUE(r.output.starts_with("Exit code: 124\n")) << r.output;
}

TEST_F(ExecTest, InvalidUtf8AndBinaryAreSanitised) {
  ToolResult r = Call(*router_, "exec_command", Cmd("printf 'a\\377b\\000c\\342\\202'"));
  const auto& item = Completed<CommandExecutionItem>();
  EXPECT_EQ(item.aggregated_output, std::string("a\xEF\xBF\xBD"
                                                "b\0c\xEF\xBF\xBD\xEF\xBF\xBD",
                                                13));
  EXPECT_TRUE(IsValidUtf8(item.aggregated_output));
  EXPECT_TRUE(IsValidUtf8(r.output));
}

TEST_F(ExecTest, ShellToolRunsArgvAsGiven) {
  ToolResult r = Call(*router_, "shell", "{\"command\":[\"printf\",\"%s|\",\"a b\",\"it's\"]}");
  EXPECT_TRUE(r.success);
  EXPECT_TRUE(std::regex_match(
      r.output,
      std::regex("Exit code: 0\nWall time: [0-9]+\\.[0-9] seconds\nOutput:\na b\\|it's\\|")))
      << r.output;
  EXPECT_EQ(Completed<CommandExecutionItem>().command, "printf '%s|' 'a b' \"it's\"");
}

TEST_F(ExecTest, CommandNotFound) {
  ToolResult r = Call(*router_, "shell", "{\"command\":[\"no-such-program-ae\"]}");
  EXPECT_FALSE(r.success);
  EXPECT_TRUE(r.output.starts_with("Exit code: 127\n")) << r.output;
  EXPECT_NE(r.output.find("execve: no-such-program-ae: No such file or directory\n"),
            std::string::npos);
}

TEST_F(ExecTest, InvalidArgumentsAreReportedWithoutAnItem) {
  struct Case {
    const char* tool;
    const char* args;
    const char* message;
  } cases[] = {
      {"exec_command", "{}", "failed to parse function arguments: missing field `cmd`"},
      {"exec_command", "{\"cmd\":5}", "failed to parse function arguments: `cmd` must be a string"},
      {"exec_command", "[1]", "failed to parse function arguments: expected a JSON object"},
      {"exec_command", "{\"cmd\":\"ls\",\"timeout_ms\":\"x\"}",
       "failed to parse function arguments: `timeout_ms` must be a number"},
      {"exec_command", "{\"cmd\":\"ls\",\"login\":1}",
       "failed to parse function arguments: `login` must be a boolean"},
      {"shell", "{}", "failed to parse function arguments: missing field `command`"},
      {"shell", "{\"command\":[]}",
       "failed to parse function arguments: `command` must be a non-empty array of strings"},
      {"shell", "{\"command\":\"ls\"}",
       "failed to parse function arguments: `command` must be a non-empty array of strings"},
  };
  for (const Case& c : cases) {
    ToolResult r = Call(*router_, c.tool, c.args);
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.output, c.message) << c.tool << " " << c.args;
  }
  ToolResult bad = Call(*router_, "exec_command", "{");
  EXPECT_TRUE(bad.output.starts_with("failed to parse function arguments: ")) << bad.output;
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(ExecTest, RefusesToRunUnconfinedOutsideDangerFullAccess) {
  turn_.sandbox.mode = sandbox::Mode::kWorkspaceWrite;
  ToolResult r = Call(*router_, "exec_command", Cmd("touch should-not-exist"));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output,
            "command not run: the workspace-write sandbox is not in effect, and commands never run "
            "unconfined outside danger-full-access");
  EXPECT_FALSE(Exists("should-not-exist"));
  EXPECT_TRUE(sink_.events.empty());
}

class EnvTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    ::setenv("OPENAI_API_KEY", "sk-test", 1);
    ::setenv("GITHUB_TOKEN", "ghp", 1);
    ::setenv("MY_SECRET", "s", 1);
    ::setenv("my_lower_token", "t", 1);
    ::setenv("AE_VISIBLE", "1", 1);
    ::setenv("AE_OTHER", "2", 1);
  }
  void TearDown() override {
    for (const char* n : {"OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET", "my_lower_token",
                          "AE_VISIBLE", "AE_OTHER"}) {
      ::unsetenv(n);
    }
    ExecTest::TearDown();
  }
  std::string Env() {
    Call(*router_, "shell", "{\"command\":[\"/usr/bin/env\"]}");
    std::string out = Completed<CommandExecutionItem>(runs_++).aggregated_output;
    return "\n" + out;
  }
  int runs_ = 0;
};

TEST_F(EnvTest, SecretsNeverReachCommands) {
  std::string env = Env();
  EXPECT_EQ(env.find("\nOPENAI_API_KEY="), std::string::npos);
  EXPECT_EQ(env.find("\nGITHUB_TOKEN="), std::string::npos);
  EXPECT_EQ(env.find("\nMY_SECRET="), std::string::npos);
  EXPECT_EQ(env.find("\nmy_lower_token="), std::string::npos);
  EXPECT_NE(env.find("\nAE_VISIBLE=1\n"), std::string::npos);
  EXPECT_NE(env.find("\nPATH="), std::string::npos);
  EXPECT_EQ(env.find("CODEX_SANDBOX_NETWORK_DISABLED"), std::string::npos);  // full access

  turn_.shell_env.ignore_default_excludes = true;
  turn_.shell_env.exclude = {"ae_oth*"};
  turn_.shell_env.set = {{"AE_SET", "x y"}};
  env = Env();
  EXPECT_NE(env.find("\nGITHUB_TOKEN="), std::string::npos);
  // A credential agentexec reads stays out even with the default excludes off.
  EXPECT_EQ(env.find("\nOPENAI_API_KEY="), std::string::npos);
  EXPECT_EQ(env.find("\nAE_OTHER="), std::string::npos);
  EXPECT_NE(env.find("\nAE_SET=x y\n"), std::string::npos);

  turn_.shell_env = {};
  turn_.shell_env.include_only = {"AE_*", "PATH"};
  env = Env();
  EXPECT_EQ(env, "\nAE_OTHER=2\nAE_VISIBLE=1\nPATH=" + std::string(std::getenv("PATH")) + "\n");
}

TEST(EnvPolicy, InheritCoreNoneAndNetworkFlag) {
  std::vector<std::string> parent = {"HOME=/h",  "PATH=/bin", "LANG=C.UTF-8",
                                     "LC_ALL=C", "FOO=1",     "AWS_SECRET_ACCESS_KEY=x",
                                     "NOEQUALS"};
  ShellEnvPolicy p;
  p.inherit = ShellEnvPolicy::Inherit::kCore;
  EXPECT_EQ(BuildCommandEnv(p, parent, false),
            (std::vector<std::string>{"HOME=/h", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/bin"}));
  p.inherit = ShellEnvPolicy::Inherit::kNone;
  p.set = {{"A", "1"}};
  EXPECT_EQ(BuildCommandEnv(p, parent, true),
            (std::vector<std::string>{"A=1", "CODEX_SANDBOX_NETWORK_DISABLED=1"}));
  p = {};
  EXPECT_EQ(
      BuildCommandEnv(p, parent, false),
      (std::vector<std::string>{"FOO=1", "HOME=/h", "LANG=C.UTF-8", "LC_ALL=C", "PATH=/bin"}));
}

// A key whose name says nothing (LLM_CRED) and the header variables never reach
// commands, not even with the default excludes off; an explicit `set` still applies.
TEST(EnvPolicy, CredentialVariablesNeverReachCommands) {
  std::vector<std::string> parent = {"LLM_CRED=k1",       "HDR_VALUE=k2",
                                     "OPENAI_API_KEY=k3", "AGENTEXEC_API_KEY=k4",
                                     "CODEX_API_KEY=k5",  "FOO=1"};
  ShellEnvPolicy p;
  p.ignore_default_excludes = true;
  p.credential_vars = {"LLM_CRED", "HDR_VALUE"};
  EXPECT_EQ(BuildCommandEnv(p, parent, false), (std::vector<std::string>{"FOO=1"}));
  p.include_only = {"*"};
  EXPECT_EQ(BuildCommandEnv(p, parent, false), (std::vector<std::string>{"FOO=1"}));
  p.set = {{"LLM_CRED", "chosen"}};
  EXPECT_EQ(BuildCommandEnv(p, parent, false),
            (std::vector<std::string>{"FOO=1", "LLM_CRED=chosen"}));
}

// codex's exec_command environment goes over whatever the policy built, `set` included.
TEST(EnvPolicy, ExecCommandSessionsGetCodexsTerminalVariables) {
  EXPECT_EQ(
      WithUnifiedExecEnv({"A=1", "LC_ALL=C", "PAGER=less", "TERM=xterm-256color", "Z=2"}),
      (std::vector<std::string>{"A=1", "CODEX_CI=1", "COLORTERM=", "GH_PAGER=cat", "GIT_PAGER=cat",
                                "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "LC_CTYPE=C.UTF-8", "NO_COLOR=1",
                                "PAGER=cat", "TERM=dumb", "Z=2"}));
}

}  // namespace
}  // namespace ae::testing
