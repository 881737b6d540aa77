// The command line has no traps: `help` and `schema` are commands, `resume
// --last ID` is refused, --output-schema is checked before any token is spent and the answer
// after, and errors before the thread starts leave --json stdout valid.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

class CliTrapsTest : public ::testing::Test {
 protected:
  RunOutput Run(std::vector<std::string> args, const std::string& answer = R"({"answer":"42"})") {
    std::string turns =
        std::string(R"({"turns":[{"items":[{"type":"message","text":)") + Quote(answer) + "}]}]}";
    std::string script = ws_.WriteFile("turns.json", turns);
    return RunAgentexec(ScriptedArgs(script, args), {ws_.repo(), ws_.Env()});
  }
  static std::string Quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out + "\"";
  }
  Workspace ws_;
};

constexpr const char* kStrict =
    R"({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],)"
    R"("additionalProperties":false})";

TEST_F(CliTrapsTest, HelpIsACommandAndDashDashHelpIsAPrompt) {
  RunOutput help = RunAgentexec({"help"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("agentexec " AGENTEXEC_VERSION " - run an AI coding agent", 0), 0u);
  RunOutput exec_help = RunAgentexec({"exec", "help"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(exec_help.out, help.out);
  RunOutput prompt = Run({"--json", "--", "help"}, "sure");
  EXPECT_EQ(prompt.exit_code, 0) << prompt.err;
  EXPECT_NE(prompt.out.find(R"("text":"sure")"), std::string::npos) << prompt.out;
}

TEST_F(CliTrapsTest, SchemaPrintsThePublishedFile) {
  RunOutput out = RunAgentexec({"schema"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.out, Slurp(AE_SOURCE_DIR "/schema/events.schema.json"));
}

TEST_F(CliTrapsTest, ResumeLastWithAnIdIsRefused) {
  RunOutput out = Run({"resume", "--last", "0199a213-81c0-7800-8aa1-bbab2a035a53"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err.substr(0, out.err.find('\n')),
            "error: the argument '--last' cannot be used with "
            "'0199a213-81c0-7800-8aa1-bbab2a035a53': '--last' and a SESSION_ID exclude each "
            "other");
  RunOutput two = Run({"resume", "--last", "some-id", "and a prompt"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("'--last' and a SESSION_ID exclude each other"), std::string::npos);
}

TEST_F(CliTrapsTest, ResumeKeepsTheSessionsModelUnlessTheCommandLineNamesAnother) {
  RunOutput first = Run({"-m", "first-model", "--json", "one"}, "ok");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunOutput kept = Run({"resume", "--last", "two"}, "ok");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.err.find("resume: model first-model (from the session), provider scripted (from "),
            std::string::npos)
      << kept.err;
  EXPECT_NE(kept.err.find("\nmodel: first-model\n"), std::string::npos) << kept.err;
  RunOutput named = Run({"resume", "--last", "-m", "second-model", "three"}, "ok");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.err.find("resume: model second-model (from "), std::string::npos) << named.err;
  EXPECT_EQ(named.err.find("second-model (from the session)"), std::string::npos) << named.err;
}

TEST_F(CliTrapsTest, InvalidOutputSchemaIsExit2WithPointerAndRuleBeforeTheThread) {
  std::string bad = ws_.WriteFile("bad.json", R"({"type":"objekt"})");
  RunOutput out = Run({"--json", "--output-schema", bad, "answer"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err, "error: --output-schema " + bad +
                         ": #/type: unknown type \"objekt\" (expected one of: string, number, "
                         "integer, boolean, object, array, null)\n");
}

TEST_F(CliTrapsTest, NonStrictOutputSchemaIsExit2) {
  std::string loose =
      ws_.WriteFile("loose.json", R"({"type":"object","properties":{"answer":{"type":"string"}}})");
  RunOutput out = Run({"--output-schema", loose, "answer"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err, "error: --output-schema " + loose +
                         ": #: every object needs \"additionalProperties\": false\n");
}

TEST_F(CliTrapsTest, AnswerMatchingTheSchemaIsWrittenToO) {
  std::string schema = ws_.WriteFile("s.json", kStrict);
  std::string last = ws_.root() + "/last.txt";
  RunOutput out = Run({"--json", "--output-schema", schema, "-o", last, "answer"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Slurp(last), R"({"answer":"42"})");
}

TEST_F(CliTrapsTest, AnswerNotMatchingTheSchemaIsExit6AndNothingIsWrittenToO) {
  std::string schema = ws_.WriteFile("s.json", kStrict);
  std::string last = ws_.root() + "/last.txt";
  RunOutput out = Run({"--json", "--output-schema", schema, "-o", last, "answer"}, "42");
  EXPECT_EQ(out.exit_code, 6) << out.err;
  EXPECT_EQ(out.err,
            "error: the final answer does not match --output-schema: #: \"type\" failed (schema "
            "#)\n");
  EXPECT_EQ(Slurp(last), "");
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2],
            R"({"type":"error","message":"the final answer does not match --output-schema: )"
            R"j(#: \"type\" failed (schema #)"})j");
  EXPECT_NE(lines.back().find(R"("code":"output_schema"},)"), std::string::npos);
  // Human mode: nothing on stdout, the summary line names the code.
  RunOutput human = Run({"--output-schema", schema, "answer"}, "not json");
  EXPECT_EQ(human.exit_code, 6);
  EXPECT_EQ(human.out, "");
  EXPECT_NE(human.err.find("failed (output_schema) after "), std::string::npos) << human.err;
}

TEST_F(CliTrapsTest, HumanModeEndsWithTheSummaryLine) {
  RunOutput out = Run({"say hi"}, "hi");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  size_t at = out.err.rfind("done in ");
  ASSERT_NE(at, std::string::npos) << out.err;
  std::string line = out.err.substr(at);
  EXPECT_EQ(line.substr(line.find(':')), ": 1 request, 0 tokens, 0 commands, 0 files changed\n");
}

TEST_F(CliTrapsTest, MissingApiKeyNamesEveryVariableReadAndPrintsNoHeader) {
  RunOutput out = RunAgentexec({"hi"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err.find("session id:"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("Missing environment variable: set one of `AGENTEXEC_API_KEY`, "
                         "`CODEX_API_KEY`, `OPENAI_API_KEY`."),
            std::string::npos)
      << out.err;
  RunOutput json = RunAgentexec({"--json", "hi"}, {ws_.repo(), ws_.Env()});
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_EQ(json.out,
            "{\"type\":\"error\",\"message\":\"Missing environment variable: set one of "
            "`AGENTEXEC_API_KEY`, `CODEX_API_KEY`, `OPENAI_API_KEY`.\"}\n");
}

TEST_F(CliTrapsTest, UsageAndConfigErrorsInJsonModeLeaveStdoutEmpty) {
  RunOutput usage = Run({"--json", "--frobnicate", "hi"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_EQ(usage.out, "");
  RunOutput config = Run({"--json", "-C", "/nonexistent/dir", "hi"});
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_EQ(config.out, "");
}

// --progress: a running command's output so far arrives as item.updated (off by default).
TEST_F(CliTrapsTest, ProgressEmitsItemUpdatedWithTheOutputSoFar) {
  std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"echo start; sleep 4; echo end"}}]},
    {"items":[{"type":"message","text":"done"}]}]})";
  std::string script = ws_.WriteFile("turns.json", turns);
  std::vector<std::string> base = ScriptedArgs(script, {"--json"});
  std::vector<std::string> with = base;
  with.insert(with.end(), {"--progress", "go"});
  RunOutput out = RunAgentexec(with, {ws_.repo(), ws_.Env()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[3],
            R"({"type":"item.updated","item":{"id":"item_0","type":"command_execution",)"
            R"("command":"/bin/bash -lc 'echo start; sleep 4; echo end'",)"
            R"("aggregated_output":"start\nend\n","exit_code":null,"status":"in_progress"}})");
  EXPECT_NE(lines[4].find(R"("type":"item.completed","item":{"id":"item_0")"), std::string::npos);
  base.push_back("go");
  RunOutput quiet = RunAgentexec(base, {ws_.repo(), ws_.Env()});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find("item.updated"), std::string::npos) << quiet.out;
}

}  // namespace
}  // namespace ae::e2e
