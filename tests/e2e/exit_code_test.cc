// Every exit code of CONTRACT §2 that the runner itself decides, with its message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/agentexec_runner.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLoop = R"({"turns":[
  {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]},
  {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]},
  {"items":[{"type":"message","text":"done"}]}]})";

class ExitCodeTest : public ::testing::Test {
 protected:
  RunOutput Run(
      std::vector<std::string> args, RunOptions options = {},
      const std::string& turns = R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})") {
    std::string script = ws_.WriteFile("turns.json", turns);
    std::vector<std::string> full{"-c", "model_provider=scripted", "-c",
                                  "model_providers.scripted.script=\"" + script + "\""};
    full.insert(full.end(), args.begin(), args.end());
    if (options.cwd.empty()) options.cwd = ws_.repo();
    if (options.env.empty()) options.env = ws_.Env();
    return RunAgentexec(full, options);
  }
  Workspace ws_;
};

TEST_F(ExitCodeTest, CompletedIs0AndVersionPrints) {
  EXPECT_EQ(Run({"--json", "hi"}).exit_code, 0);
  RunOutput v = RunAgentexec({"-V"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, "agentexec " AGENTEXEC_VERSION "\n");
  RunOutput h = RunAgentexec({"exec", "--help"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--output-last-message"), std::string::npos);
}

TEST_F(ExitCodeTest, BadFlagIs2) {
  RunOutput out = Run({"--frobnicate", "hi"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_NE(out.err.find("--frobnicate"), std::string::npos) << out.err;
}

TEST_F(ExitCodeTest, BadConfigIs2WithFileAndLine) {
  ws_.WriteFile("agentexec-home/config.toml", "model = \"x\"\nmodle = \"y\"\n");
  RunOutput out = Run({"--strict-config", "hi"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("config.toml:2:1: unknown key 'modle' (did you mean 'model'?)"),
            std::string::npos)
      << out.err;
}

TEST_F(ExitCodeTest, UnknownKeyWarnsAsAnErrorItemBeforeTurnStarted) {
  ws_.WriteFile("agentexec-home/config.toml", "modle = \"y\"\n");
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[1].find(R"("type":"error","message":")"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("unknown key 'modle' (did you mean 'model'?)"), std::string::npos);
  EXPECT_EQ(lines[2], R"({"type":"turn.started"})");
  EXPECT_NE(out.err.find("warning: "), std::string::npos);
}

TEST_F(ExitCodeTest, NotAGitRepositoryIs2WithCodexMessage) {
  RunOptions options;
  options.cwd = ws_.root();
  RunOutput out = Run({"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err,
            "error: Not inside a trusted directory and --skip-git-repo-check was not specified.\n");
  EXPECT_EQ(Run({"--json", "--skip-git-repo-check", "hi"}, options).exit_code, 0);
}

TEST_F(ExitCodeTest, EmptyPromptIs2) {
  RunOptions options;
  options.stdin_data = "  \n";
  RunOutput out = Run({"--json"}, options);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
}

TEST_F(ExitCodeTest, UnwritableOutputIs5BeforeTheTurn) {
  std::string file = ws_.WriteFile("plain-file", "x");
  RunOutput out = Run({"--json", "-o", file + "/last.txt", "hi"});
  EXPECT_EQ(out.exit_code, 5);
  EXPECT_EQ(out.out, "");  // nothing ran
  EXPECT_NE(out.err.find("cannot create directory '" + file + "'"), std::string::npos) << out.err;
}

TEST_F(ExitCodeTest, UnenforceableSandboxIs3AndRunsNothing) {
  RunOptions options;
  options.env = ws_.Env({{"AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK", "1"}});
  RunOutput out = Run({"--json", "-s", "workspace-write", "hi"}, options, kLoop);
  EXPECT_EQ(out.exit_code, 3);
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 1u) << out.out;
  EXPECT_NE(
      lines[0].find(R"({"type":"error","message":"sandbox: cannot enforce workspace-write: )"),
      std::string::npos)
      << lines[0];
  EXPECT_NE(out.err.find("-s danger-full-access"), std::string::npos) << out.err;
  // The container-is-the-boundary escape hatch still works.
  EXPECT_EQ(Run({"--json", "-s", "danger-full-access", "hi"}, options).exit_code, 0);
}

TEST_F(ExitCodeTest, MaxTurnsIs4) {
  RunOutput out = Run({"--json", "--max-turns", "2", "loop"}, {}, kLoop);
  EXPECT_EQ(out.exit_code, 4);
  EXPECT_EQ(
      NormalizeThreadId(out.lines().back()),
      R"j({"type":"turn.failed","error":{"message":"max turns reached: the model asked for more work after 2 requests (--max-turns 2)",)j"
      R"("code":"max_turns"},)"
      R"("usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_input_tokens":0,)"
      R"("output_tokens":0,"reasoning_output_tokens":0},"last_usage":{"input_tokens":0,)"
      R"("cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":0,)"
      R"("reasoning_output_tokens":0},)"
      R"("requests":2,"duration_ms":<ms>})");
}

TEST_F(ExitCodeTest, ScriptRunningOutIsATurnFailure) {
  RunOutput out = Run(
      {"--json", "loop"}, {},
      R"({"turns":[{"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}]}]})");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(
      out.lines().back().find("scripted provider: no turn left for request 2 (script has 1 turns)"),
      std::string::npos)
      << out.out;
}

}  // namespace
}  // namespace ae::e2e
