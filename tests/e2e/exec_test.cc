// The real binary on the scripted provider: the exact JSONL a pipeline reads, human mode,
// -o, commands and patches under the real sandbox, resume, and stdin handling.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/agentexec_runner.h"
#include "tests/support/turn_lines.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

class ExecTest : public ::testing::Test {
 protected:
  // agentexec --json (unless human) on the scripted provider with `turns_json`.
  RunOutput Run(const std::string& turns_json, std::vector<std::string> args,
                RunOptions options = {}) {
    if (options.cwd.empty()) options.cwd = ws_.repo();
    if (options.env.empty()) options.env = ws_.Env();
    RunOutput out =
        RunAgentexec(ScriptedArgs(ws_.WriteFile("turns.json", turns_json), args), options);
    if (std::find(args.begin(), args.end(), "--json") != args.end()) {
      EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    }
    return out;
  }

  std::vector<std::string> NormalizedLines(const RunOutput& out) {
    std::vector<std::string> lines = out.lines();
    for (std::string& l : lines) l = NormalizeThreadId(l);
    return lines;
  }

  Workspace ws_;
};

constexpr const char* kHello =
    R"({"turns":[{"items":[{"type":"message","text":"Hello from the script."}],)"
    R"("usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":7}}]})";

TEST_F(ExecTest, JsonStreamForAPlainAnswer) {
  RunOutput out = Run(kHello, {"--json", "say hello"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(
      NormalizedLines(out),
      (std::vector<std::string>{
          R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
          R"({"type":"turn.started"})",
          R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello from the script."}})",
          test::TurnCompletedLine({1000, 200, 0, 50, 7}, {1000, 200, 0, 50, 7}, 1)}));
}

TEST_F(ExecTest, HumanModePrintsOnlyTheAnswerOnStdoutAndOWritesItWithoutNewline) {
  std::string last = ws_.root() + "/out/dir/last.txt";
  RunOutput out = Run(kHello, {"-o", last, "say hello"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "Hello from the script.\n");
  EXPECT_EQ(Slurp(last), "Hello from the script.");
  EXPECT_NE(out.err.find("provider: scripted\n"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("user\nsay hello\nagent\nHello from the script.\ntokens used\n850\n"),
            std::string::npos)
      << out.err;
}

TEST_F(ExecTest, CommandPatchAndPlanUnderWorkspaceWrite) {
  std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"echo one"}}]},
    {"items":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Add File: notes/hello.txt\n+hello\n*** End Patch"}]},
    {"items":[{"type":"message","text":"Done."}]}]})";
  RunOutput out = Run(turns, {"--json", "-s", "workspace-write", "go"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::string path = ws_.repo() + "/notes/hello.txt";
  EXPECT_EQ(Slurp(path), "hello\n");
  EXPECT_EQ(
      NormalizedLines(out),
      (std::vector<std::string>{
          R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
          R"({"type":"turn.started"})",
          R"({"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo one'","aggregated_output":"","exit_code":null,"status":"in_progress"}})",
          R"({"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'echo one'","aggregated_output":"one\n","exit_code":0,"status":"completed"}})",
          R"({"type":"item.started","item":{"id":"item_1","type":"file_change","changes":[{"path":")" +
              path + R"(","kind":"add"}],"status":"in_progress"}})",
          R"({"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":")" +
              path + R"(","kind":"add"}],"status":"completed"}})",
          R"({"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done."}})",
          test::TurnCompletedLine({}, {}, 3)}));
}

TEST_F(ExecTest, ReadOnlyDeniesAWriteAndTheItemSaysFailed) {
  std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"touch made.txt"}}]},
    {"items":[{"type":"message","text":"Could not write."}]}]})";
  RunOutput out = Run(turns, {"--json", "-s", "read-only", "write a file"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_FALSE(fs::exists(ws_.repo() + "/made.txt"));
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 4u);
  EXPECT_NE(lines[3].find(R"("type":"command_execution")"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(R"("exit_code":1,"status":"failed")"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("touch: cannot touch 'made.txt'"), std::string::npos) << lines[3];
}

TEST_F(ExecTest, OnFailureRetriesADeniedCommandOutsideTheSandboxAndSaysSo) {
  std::string turns = R"({"turns":[
    {"items":[{"type":"function_call","name":"exec_command","arguments":{"cmd":"touch made.txt"}}]},
    {"items":[{"type":"message","text":"Wrote it."}]}]})";
  RunOutput out = Run(turns, {"--json", "-s", "read-only", "-a", "on-failure", "write a file"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_TRUE(fs::exists(ws_.repo() + "/made.txt"));
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 9u) << out.out;
  EXPECT_NE(lines[3].find(R"("id":"item_0","type":"command_execution")"), std::string::npos);
  EXPECT_NE(lines[3].find(R"("status":"failed")"), std::string::npos);
  EXPECT_NE(lines[4].find(R"("id":"item_1","type":"error","message":")"), std::string::npos)
      << lines[4];
  EXPECT_NE(lines[4].find("touch made.txt"), std::string::npos) << lines[4];
  EXPECT_NE(lines[6].find(R"("id":"item_2","type":"command_execution")"), std::string::npos);
  EXPECT_NE(lines[6].find(R"("exit_code":0,"status":"completed")"), std::string::npos) << lines[6];
}

TEST_F(ExecTest, ResumeLastContinuesTheThreadWithCumulativeUsage) {
  std::string turns = R"({"turns":[
    {"items":[{"type":"message","text":"first"}],"usage":{"input_tokens":10,"output_tokens":1}},
    {"items":[{"type":"message","text":"second"}],"usage":{"input_tokens":20,"output_tokens":2}}]})";
  // The scripted provider restarts its script per process, so each run gets its own file.
  RunOutput first = Run(turns, {"--json", "one"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string thread = first.lines()[0];
  std::string turns2 = R"({"turns":[
    {"items":[{"type":"message","text":"second"}],"usage":{"input_tokens":20,"output_tokens":2}}]})";
  RunOutput second = Run(turns2, {"resume", "--last", "--json", "two"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.lines()[0], thread);
  EXPECT_EQ(NormalizeThreadId(second.lines().back()),
            test::TurnCompletedLine({30, 0, 0, 3, 0}, {20, 0, 0, 2, 0}, 1));
}

// codex's own resume tests put the prompt first: `exec PROMPT resume --last` continues the
// same thread and session file.
TEST_F(ExecTest, PromptBeforeResumeContinuesTheThread) {
  RunOutput first = Run(kHello, {"--json", "echo one"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunOutput second = Run(kHello, {"exec", "--json", "echo two", "resume", "--last"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.lines()[0], first.lines()[0]);
  int files = 0;
  std::string text;
  for (const auto& entry : fs::recursive_directory_iterator(ws_.home() + "/sessions")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path());
    text = std::string(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(files, 1);
  EXPECT_NE(text.find("echo one"), std::string::npos);
  EXPECT_NE(text.find("echo two"), std::string::npos);
}

// As codex: `resume --last` with nothing to resume in this directory starts a new thread (the
// first run of a CI job that always resumes), and says so before the turn.
TEST_F(ExecTest, ResumeLastWithNoEarlierSessionStartsANewThread) {
  RunOutput out = Run(kHello, {"resume", "--last", "--json", "go"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 2u);
  const std::string note = "resume --last: no earlier session for " + ws_.repo() + " under " +
                           ws_.home() + "/sessions, so a new thread starts";
  EXPECT_EQ(lines[1],
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":")" + note +
                R"("}})");
  EXPECT_EQ(out.err, "warning: " + note + "\n");
}

TEST_F(ExecTest, ResumeOfAnUnknownIdIsAUsageError) {
  RunOutput out = Run(kHello, {"resume", "0190aaaa-0000-7000-8000-000000000000", "--json", "x"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err, "error: no session with id '0190aaaa-0000-7000-8000-000000000000' under " +
                         ws_.home() + "/sessions\n");
}

TEST_F(ExecTest, EphemeralWritesNoSessionFile) {
  RunOutput out = Run(kHello, {"--json", "--ephemeral", "hi"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_FALSE(fs::exists(ws_.home() + "/sessions"));
  RunOutput kept = Run(kHello, {"--json", "hi"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_TRUE(fs::exists(ws_.home() + "/sessions"));
}

TEST_F(ExecTest, PromptFromStdinWhenAbsentOrDash) {
  RunOptions options;
  options.stdin_data = "from stdin\n";
  RunOutput out = Run(kHello, {"--json"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.err, "Reading prompt from stdin...\n");
  options.stdin_data = "also stdin";
  out = Run(kHello, {"--json", "-"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
}

TEST_F(ExecTest, APromptArgumentDoesNotHangOnAnOpenSilentStdin) {
  RunOptions options;
  options.stdin_left_open = true;
  options.timeout_s = 30;
  RunOutput out = Run(kHello, {"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.lines().size(), 4u);
  EXPECT_EQ(out.err,
            "note: stdin is open but sent nothing within 5 s, so only the prompt argument is used "
            "(redirect stdin from /dev/null to skip this wait)\n");
}

// `git diff | agentexec "review this"`: the piped text reaches the model after the prompt, in
// codex's <stdin> block (the session file records the user message as sent).
TEST_F(ExecTest, PipedStdinIsAppendedToThePromptArgument) {
  RunOptions options;
  options.stdin_data = "my output\n";
  RunOutput out = Run(kHello, {"--json", "Summarize this concisely"}, options);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.err, "");
  std::string sessions;
  for (const auto& entry : fs::recursive_directory_iterator(ws_.home() + "/sessions")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    sessions += std::string(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(sessions.find(R"("Summarize this concisely\n\n<stdin>\nmy output\n</stdin>")"),
            std::string::npos)
      << sessions;
}

}  // namespace
}  // namespace ae::e2e
