// Bad input a new user tries gets an answer that says what is wrong, before tokens are
// spent: two outputs naming one file, a prompt too large to keep whole, a huge prompt in a CI
// log. Each message is pinned word for word.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

class PoorAnswersTest : public ::testing::Test {
 protected:
  // The scripted provider answering "ok" once.
  std::vector<std::string> Scripted(std::vector<std::string> args) {
    const std::string script =
        ws_.WriteFile("turns.json", R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})");
    std::vector<std::string> full{"-c", "model_provider=scripted", "-c",
                                  "model_providers.scripted.script=\"" + script + "\""};
    full.insert(full.end(), args.begin(), args.end());
    return full;
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

// Human mode: a 20 MB prompt is refused, and the CI log gets the refusal and a shortened echo,
// not 20 MB of prompt.
TEST_F(PoorAnswersTest, AHugePromptInHumanModeIsShortenedInTheLog) {
  RunOptions options{ws_.repo(), ws_.Env()};
  options.stdin_data = std::string(20u << 20, 'a');
  RunOutput out = RunAgentexec(Scripted({"-"}), options);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.out, "");
  EXPECT_LT(out.err.size(), 8192u);
  const std::string user = "user\n" + std::string(4096, 'a') +
                           "\n… [shortened for the log: the first 4,096 of 20,971,520 bytes]\n";
  EXPECT_NE(out.err.find(user), std::string::npos) << out.err.substr(0, 2000);
  EXPECT_NE(out.err.find("ERROR: the prompt does not fit the model's context window: it is about "
                         "5242880 tokens (20971520 bytes at 4 bytes a token)"),
            std::string::npos)
      << out.err.substr(0, 2000);
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
