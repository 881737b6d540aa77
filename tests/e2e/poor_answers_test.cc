// Bad input a new user tries gets an answer that says what is wrong, before tokens are
// spent: two outputs naming one file, a prompt too large to keep whole, a huge prompt in a CI
// log. Each message is pinned word for word.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

class PoorAnswersTest : public ::testing::Test {
 protected:
  // The scripted provider answering "ok" once.
  std::vector<std::string> Scripted(std::vector<std::string> args) {
    const std::string script =
        ws_.WriteFile("turns.json", R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})");
    return ScriptedArgs(script, args);
  }
  Workspace ws_;
};

// The events would be lost under the final message: refused before either file is touched.
TEST_F(PoorAnswersTest, EventsFileAndOutputLastMessageNamingOneFileAreRefused) {
  const std::string file = ws_.WriteFile("out.txt", "kept");
  RunOutput out =
      RunAgentexec(Scripted({"--events-file", file, "-o", file, "hi"}), {ws_.repo(), ws_.Env()});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err, "error: --events-file '" + file + "' and --output-last-message '" + file +
                         "' name the same file: the final message would replace the events; "
                         "give each its own file\n");
  EXPECT_EQ(Slurp(file), "kept");
  // Another spelling of the same path is the same file.
  const std::string other =
      ws_.root() + "/../" + ws_.root().substr(ws_.root().rfind('/') + 1) + "/out.txt";
  RunOutput spelled =
      RunAgentexec(Scripted({"--events-file", other, "-o", file, "hi"}), {ws_.repo(), ws_.Env()});
  EXPECT_EQ(spelled.exit_code, 2) << spelled.err;
  // Two files: the run goes on.
  RunOutput two =
      RunAgentexec(Scripted({"--events-file", ws_.root() + "/events.jsonl", "-o", file, "hi"}),
                   {ws_.repo(), ws_.Env()});
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(Slurp(file), "ok");
}

// Human mode: a 20 MB prompt is refused, and the CI log gets the refusal only: the header and
// the error, not the prompt (not even shortened). The version, the session id and the elapsed
// time vary and are normalized.
TEST_F(PoorAnswersTest, AHugePromptInHumanModeGetsTheRefusalOnly) {
  RunOptions options{ws_.repo(), ws_.Env()};
  options.stdin_data = std::string(20u << 20, 'a');
  RunOutput out = RunAgentexec(Scripted({"--color", "never", "-"}), options);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.out, "");
  std::string err =
      std::regex_replace(out.err, std::regex("session id: [0-9a-f-]+"), "session id: <id>");
  err = std::regex_replace(err, std::regex("after [0-9.]+s:"), "after <s>:");
  err = std::regex_replace(err, std::regex("agentexec v[^\n]+"), "agentexec v<version>");
  EXPECT_EQ(err,
            "Reading prompt from stdin...\n"
            "agentexec v<version>\n"
            "--------\n"
            "workdir: " +
                ws_.repo() +
                "\n"
                "model: gpt-5.5\n"
                "provider: scripted\n"
                "approval: never\n"
                "sandbox: read-only\n"
                "reasoning effort: medium\n"
                "session id: <id>\n"
                "--------\n"
                "ERROR: the prompt does not fit the model's context window: it is about 5242880 "
                "tokens (20971520 bytes at 4 bytes a token) and the window of `gpt-5.5` holds "
                "272000 (model_context_window); shorten it, or put the material in files the "
                "agent can read\n"
                "failed (context_length) after <s>: 0 requests, 0 tokens, 0 commands, 0 files "
                "changed\n");
}

// A long prompt that is accepted is still echoed shortened, with a marker saying how much.
TEST_F(PoorAnswersTest, ALongAcceptedPromptIsShortenedInTheLog) {
  std::string prompt;
  for (int i = 0; i < 30; ++i) prompt += "line " + std::to_string(i) + "\n";
  RunOutput out = RunAgentexec(Scripted({"--color", "never", prompt}), {ws_.repo(), ws_.Env()});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  std::string shown;
  for (int i = 0; i < 20; ++i) shown += "line " + std::to_string(i) + "\n";
  EXPECT_NE(out.err.find("--------\nuser\n" + shown +
                         "… [shortened for the log: the first 150 of 230 bytes]\nagent\nok\n"),
            std::string::npos)
      << out.err;
}

// A short prompt is echoed whole.
TEST_F(PoorAnswersTest, AShortPromptIsEchoedWhole) {
  RunOutput out = RunAgentexec(Scripted({"line one\nline two"}), {ws_.repo(), ws_.Env()});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.err.find("user\nline one\nline two\n"), std::string::npos) << out.err;
  EXPECT_EQ(out.err.find("shortened"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace ae::e2e
