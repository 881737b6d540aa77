// `agentexec review` end to end: the real binary on a real git repository built here (a base
// branch and a change with planted bugs), the loopback test model server playing a review.
// Checked: the exact change and prompt the model received for each target, the read-only
// sandbox (a write attempt fails even when a looser mode is configured), the `review` item and
// the JSONL stream line by line, the Markdown, and each usage error.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/review/review_output.h"
#include "engine/review/review_prompt.h"
#include "outputs/review_render.h"
#include "tests/review/sarif_golden.h"
#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kMainCalc =
    "def total(xs):\n"
    "    return sum(xs)\n"
    "\n"
    "\n"
    "def mean(xs):\n"
    "    if not xs:\n"
    "        return 0.0\n"
    "    return total(xs) / len(xs)\n";

// The change: a hand-rolled loop that skips the last element, and the empty-list guard gone.
const std::string kFeatureCalc =
    "def total(xs):\n"
    "    t = 0\n"
    "    for i in range(len(xs) - 1):\n"
    "        t += xs[i]\n"
    "    return t\n"
    "\n"
    "\n"
    "def mean(xs):\n"
    "    return total(xs) / len(xs)\n";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

class ReviewE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = ws_.repo();
    // main: calc.py; feature: the buggy change; then main moves on (the merge base is not
    // main's tip, so a review that diffed against main itself would show main's README too).
    Git("checkout -q -b main");
    ws_.WriteFile("repo/calc.py", kMainCalc);
    Git("add calc.py");
    Git("commit -q -m 'Add calc'");
    Git("checkout -q -b feature");
    ws_.WriteFile("repo/calc.py", kFeatureCalc);
    Git("commit -q -am 'Hand-rolled total'");
    Git("checkout -q main");
    ws_.WriteFile("repo/README.md", "calc\n");
    Git("add README.md");
    Git("commit -q -m 'Readme'");
    Git("checkout -q feature");
    merge_base_ = Trim(GitOut("merge-base HEAD main"));
    head_ = Trim(GitOut("rev-parse HEAD"));
  }

  static std::string Trim(std::string s) {
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  std::string GitEnv() const {
    return "GIT_AUTHOR_NAME=Dev GIT_AUTHOR_EMAIL=dev@example.invalid "
           "GIT_COMMITTER_NAME=Dev GIT_COMMITTER_EMAIL=dev@example.invalid "
           "GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' "
           "GIT_CONFIG_GLOBAL=/dev/null ";
  }
  void Git(const std::string& args, const std::string& dir = "") {
    std::string cmd = GitEnv() + "git -C '" + (dir.empty() ? repo_ : dir) + "' " + args;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string GitOut(const std::string& args) {
    std::string cmd = GitEnv() + "git -C '" + repo_ + "' " + args;
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
  }

  // The review the scripted model returns, with paths in this repository.
  std::string ReviewJson() const {
    return R"({"findings":[{"title":"Division by zero on an empty list","body":"`mean([])` now divides by `len(xs)` == 0; the guard was removed.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":")" +
           repo_ +
           R"(/calc.py","line_range":{"start":8,"end":9}}},{"title":"Loop skips the last element","body":"`range(len(xs) - 1)` stops one short, so `total([1, 2])` is 1.","confidence_score":0.95,"priority":0,"code_location":{"absolute_file_path":"calc.py","line_range":{"start":3,"end":4}}}],"overall_correctness":"patch is incorrect","overall_explanation":"Both functions now return wrong results.","overall_confidence_score":0.85})";
  }

  // A turn that inspects the change and tries to write, then the review.
  void Serve(const std::string& answer) {
    rapidjson::Document turns;
    turns.Parse(R"({"turns":[
      {"items":[
        {"type":"function_call","name":"exec_command","arguments":{"cmd":"git diff --stat HEAD~1"},"call_id":"c1"},
        {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo pwned > written.txt"},"call_id":"c2"}]},
      {"items":[{"type":"message","text":""}]}]})");
    rapidjson::Value text;
    text.SetString(answer.c_str(), static_cast<rapidjson::SizeType>(answer.size()),
                   turns.GetAllocator());
    turns["turns"][1]["items"][0]["text"] = text;
    std::string script = ws_.WriteFile("turns.json", Compact(turns));
    Result<int> port = server_.Start(script, {}, 60);
    ASSERT_TRUE(port.ok()) << port.message();
    MockProvider provider;
    provider.stream_max_retries = 0;
    ws_.WriteFile("agentexec-home/config.toml", MockProviderConfig(server_, provider));
  }

  RunOutput Run(const std::vector<std::string>& args, RunOptions options = {}) {
    if (options.cwd.empty()) options.cwd = repo_;
    options.env = ws_.Env({{"MOCK_KEY", "test-key"}, {"GIT_CONFIG_GLOBAL", "/dev/null"}});
    RunOutput out = RunAgentexec(args, options);
    if (std::find(args.begin(), args.end(), "--json") != args.end()) {
      EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    }
    return out;
  }

  // The user message and the developer message of the first request, and its text.format.
  struct Sent {
    std::string developer, user, format;
  };
  Sent FirstRequest() {
    Sent sent;
    std::vector<LoggedRequest> requests = server_.Requests();
    EXPECT_FALSE(requests.empty());
    if (requests.empty()) return sent;
    rapidjson::Document body;
    body.Parse(requests[0].body_json.c_str());
    for (const auto& item : body["input"].GetArray()) {
      if (!item.HasMember("role")) continue;
      std::string role = item["role"].GetString();
      std::string text = item["content"][0]["text"].GetString();
      if (role == "developer") sent.developer = text;
      if (role == "user") sent.user = text;  // the last one is the review request
    }
    sent.format = Compact(body["text"]["format"]);
    return sent;
  }

  std::string ExpectedFormat() const {
    return R"({"type":"json_schema","strict":true,"schema":)" + ReviewOutputSchema() +
           R"(,"name":"codex_output_schema"})";
  }

  Workspace ws_;
  TestModelServer server_;
  std::string repo_, merge_base_, head_;
};

#define SKIP_WITHOUT_SANDBOX(out)                                                             \
  if ((out).exit_code == 3) {                                                                 \
    GTEST_SKIP() << "the read-only sandbox cannot be enforced on this kernel: " << (out).err; \
  }

const std::string kBaseDiffBody =
    "--- a/calc.py\n"
    "+++ b/calc.py\n"
    "@@ -1,8 +1,9 @@\n"
    " def total(xs):\n"
    "-    return sum(xs)\n"
    "+    t = 0\n"
    "+    for i in range(len(xs) - 1):\n"
    "+        t += xs[i]\n"
    "+    return t\n"
    " \n"
    " \n"
    " def mean(xs):\n"
    "-    if not xs:\n"
    "-        return 0.0\n"
    "     return total(xs) / len(xs)\n";

TEST_F(ReviewE2e, BaseBranchReviewJsonlPromptSandboxAndResult) {
  Serve(ReviewJson());
  // A looser sandbox on the command line changes nothing: a review never writes.
  RunOutput out =
      Run({"exec", "review", "--json", "-s", "workspace-write", "--base", "main", "--title",
           "Hand-rolled total", "--ephemeral", "-o", ws_.root() + "/review.json"});
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err << out.out;

  // The change the model was given: the merge base against the working tree, not main's tip.
  Sent sent = FirstRequest();
  const std::string index = Trim(GitOut("diff " + merge_base_ + " | sed -n 2p"));
  EXPECT_EQ(sent.user,
            "Review this change. Its title: \"Hand-rolled total\".\n\n"
            "The change to review is everything that differs between the merge base of HEAD "
            "with the base branch 'main' (commit " +
                merge_base_ +
                ") and the working tree: the commits on this branch and any uncommitted edits "
                "to tracked files.\n"
                "The repository root is " +
                repo_ + ". To see the change again: `git diff " + merge_base_ +
                "`.\n\n<diff>\ndiff --git a/calc.py b/calc.py\n" + index + "\n" + kBaseDiffBody +
                "</diff>\n");
  EXPECT_TRUE(sent.developer.ends_with(ReviewGuidelines())) << sent.developer;
  EXPECT_NE(sent.developer.find("The sandbox is `read-only`"), std::string::npos) << sent.developer;
  EXPECT_EQ(sent.format, ExpectedFormat());

  // The stream, line by line.
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 10u) << out.out;
  std::vector<rapidjson::Document> events(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    events[i].Parse(lines[i].c_str());
    ASSERT_FALSE(events[i].HasParseError()) << lines[i];
  }
  EXPECT_EQ(std::string(events[0]["type"].GetString()), "thread.started");
  EXPECT_EQ(
      lines[1],
      R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":"agentexec review runs in the read-only sandbox; sandbox mode workspace-write is ignored"}})");
  EXPECT_EQ(lines[2], R"({"type":"turn.started"})");
  // The two commands ran in parallel; find the write attempt and the git command by command.
  int write_failed = 0, git_ran = 0;
  for (size_t i = 3; i < 7; ++i) {
    const auto& item = events[i]["item"];
    ASSERT_EQ(std::string(item["type"].GetString()), "command_execution") << lines[i];
    if (std::string(events[i]["type"].GetString()) != "item.completed") continue;
    std::string command = item["command"].GetString();
    if (command == "/bin/bash -lc 'echo pwned > written.txt'") {
      EXPECT_EQ(std::string(item["status"].GetString()), "failed") << lines[i];
      ++write_failed;
    } else if (command == "/bin/bash -lc 'git diff --stat HEAD~1'") {
      EXPECT_EQ(std::string(item["status"].GetString()), "completed") << lines[i];
      EXPECT_NE(std::string(item["aggregated_output"].GetString()).find("calc.py"),
                std::string::npos)
          << lines[i];
      ++git_ran;
    }
  }
  EXPECT_EQ(write_failed, 1);
  EXPECT_EQ(git_ran, 1);
  EXPECT_FALSE(fs::exists(repo_ + "/written.txt"));

  rapidjson::Document message;
  message.Parse(lines[7].c_str());
  EXPECT_EQ(std::string(message["item"]["type"].GetString()), "agent_message");
  EXPECT_EQ(std::string(message["item"]["text"].GetString()), ReviewJson());

  const std::string result =
      R"({"findings":[{"title":"Division by zero on an empty list","body":"`mean([])` now divides by `len(xs)` == 0; the guard was removed.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":")" +
      repo_ +
      R"(/calc.py","line_range":{"start":8,"end":9}}},{"title":"Loop skips the last element","body":"`range(len(xs) - 1)` stops one short, so `total([1, 2])` is 1.","confidence_score":0.95,"priority":0,"code_location":{"absolute_file_path":")" +
      repo_ +
      R"(/calc.py","line_range":{"start":3,"end":4}}}],"overall_correctness":"patch is incorrect","overall_explanation":"Both functions now return wrong results.","overall_confidence_score":0.85})";
  EXPECT_EQ(lines[8], R"({"type":"item.completed","item":{"id":"item_4","type":"review",)" +
                          result.substr(1) + "}");
  EXPECT_EQ(std::string(events[9]["type"].GetString()), "turn.completed");
  // -o gets the same result (the default --format json), without a trailing newline.
  EXPECT_EQ(ReadFile(ws_.root() + "/review.json"), result);
}

TEST_F(ReviewE2e, CommitReviewGetsGitShowAndMarkdownGoesToStdoutAndFile) {
  Serve(ReviewJson());
  RunOutput out = Run({"review", "--commit", "HEAD", "--format", "markdown", "-o",
                       ws_.root() + "/out/review.md", "--ephemeral"});
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err;

  const std::string index = Trim(GitOut("show --format= HEAD | sed -n 2p"));
  EXPECT_EQ(FirstRequest().user,
            "Review this change.\n\nThe change to review is what commit " + head_ +
                " introduced, compared with its parent.\n"
                "The repository root is " +
                repo_ + ". To see the change again: `git show " + head_ + "`.\n\n<diff>\ncommit " +
                head_ +
                "\nAuthor: Dev <dev@example.invalid>\n\nHand-rolled total\n\n\n"
                "diff --git a/calc.py b/calc.py\n" +
                index + "\n" + kBaseDiffBody + "</diff>\n");

  const std::string markdown =
      "## Code review\n"
      "\n"
      "**Verdict: patch is incorrect** (confidence 0.85)\n"
      "\n"
      "Both functions now return wrong results.\n"
      "\n"
      "### Findings (2)\n"
      "\n"
      "1. **[P0] Loop skips the last element** — `calc.py:3-4` (confidence 0.95)\n"
      "\n"
      "   `range(len(xs) - 1)` stops one short, so `total([1, 2])` is 1.\n"
      "\n"
      "2. **[P1] Division by zero on an empty list** — `calc.py:8-9` (confidence 0.90)\n"
      "\n"
      "   `mean([])` now divides by `len(xs)` == 0; the guard was removed.";
  EXPECT_EQ(out.out, markdown + "\n");
  EXPECT_EQ(ReadFile(ws_.root() + "/out/review.md"), markdown);
  // Human mode shows the review on stderr too.
  EXPECT_NE(out.err.find("review\n## Code review\n"), std::string::npos) << out.err;
}

// The review's findings plus one the model placed outside the repository (a CI system cannot
// show it: it is left out, with a warning on stderr and, in SARIF, a notification in the log).
std::string WithFindingOutside(const std::string& review) {
  const std::string extra =
      R"({"title":"Reads passwd","body":"b","confidence_score":0.5,"priority":2,"code_location":{"absolute_file_path":"../../../../../../../../etc/passwd","line_range":{"start":1,"end":1}}},)";
  std::string out = review;
  out.insert(out.find('[') + 1, extra);
  return out;
}

TEST_F(ReviewE2e, SarifGoesToStdoutAndFile) {
  Serve(WithFindingOutside(ReviewJson()));
  RunOutput out = Run({"review", "--commit", "HEAD", "--format", "sarif", "-o",
                       ws_.root() + "/out/review.sarif", "--ephemeral"});
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string note =
      "finding 1 (\"Reads passwd\"): its path /etc/passwd is not a file "
      "inside the repository " +
      repo_ + "; left out";
  const std::string sarif =
      SarifHead(AGENTEXEC_VERSION) +
      SarifResult(1, "error",
                  "Division by zero on an empty list\\n\\n`mean([])` now divides by `len(xs)` == "
                  "0; the guard was removed.",
                  "calc.py", 8, 9, "1e6405320f625ec0", "0.9") +
      "," +
      SarifResult(0, "error",
                  "Loop skips the last element\\n\\n`range(len(xs) - 1)` stops one short, so "
                  "`total([1, 2])` is 1.",
                  "calc.py", 3, 4, "09ebaa2d10849256", "0.95") +
      R"(],"invocations":[{"executionSuccessful":true,"toolExecutionNotifications":[{"level":"warning","message":{"text":"finding 1 (\"Reads passwd\"): its path /etc/passwd is not a file inside the repository )" +
      repo_ + "; left out" +
      R"("}}]}],"properties":{"overall_correctness":"patch is incorrect","overall_explanation":"Both functions now return wrong results.","overall_confidence_score":0.85}}]})";
  EXPECT_EQ(out.out, sarif + "\n");
  EXPECT_EQ(ReadFile(ws_.root() + "/out/review.sarif"), sarif);
  EXPECT_NE(out.err.find("warning: " + note + "\n"), std::string::npos) << out.err;
}

TEST_F(ReviewE2e, CodeQualityGoesToStdoutAndFile) {
  Serve(WithFindingOutside(ReviewJson()));
  RunOutput out = Run({"review", "--commit", "HEAD", "--format", "codequality", "-o",
                       ws_.root() + "/out/codequality.json", "--ephemeral"});
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string report =
      R"([{"description":"Division by zero on an empty list","check_name":"agentexec/review/p1","fingerprint":"e7a7f76d6ed00470","severity":"critical","location":{"path":"calc.py","lines":{"begin":8,"end":9}}},)"
      R"({"description":"Loop skips the last element","check_name":"agentexec/review/p0","fingerprint":"6c84fbe657d7e456","severity":"blocker","location":{"path":"calc.py","lines":{"begin":3,"end":4}}}])";
  EXPECT_EQ(out.out, report + "\n");
  EXPECT_EQ(ReadFile(ws_.root() + "/out/codequality.json"), report);
  EXPECT_NE(out.err.find("warning: finding 1 (\"Reads passwd\"): its path /etc/passwd is not a "
                         "file inside the repository " +
                         repo_ + "; left out\n"),
            std::string::npos)
      << out.err;
}

// --report FORMAT=FILE: one review, several renderings (the GitLab component publishes the
// Code Quality report and the SARIF log of one run); each file is what --format would print.
TEST_F(ReviewE2e, ReportsWriteFurtherFormatsOfTheSameReview) {
  Serve(ReviewJson());
  const std::string dir = ws_.root() + "/reports";
  RunOutput out = Run({"review", "--commit", "HEAD", "--format", "markdown", "--report",
                       "codequality=" + dir + "/gl-code-quality-report.json", "--report",
                       "sarif=" + dir + "/gl-sarif-report.sarif", "--ephemeral"});
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out.rfind("## Code review\n", 0), 0u) << out.out;
  const std::string codequality = ReadFile(dir + "/gl-code-quality-report.json");
  EXPECT_EQ(codequality.rfind(R"([{"description":"Division by zero on an empty list",)", 0), 0u)
      << codequality;
  const std::string sarif = ReadFile(dir + "/gl-sarif-report.sarif");
  EXPECT_EQ(sarif.rfind(SarifHead(AGENTEXEC_VERSION), 0), 0u) << sarif;
  // Only after review, and only a known format with a file.
  RunOutput plain = Run({"--report", "sarif=x.sarif", "hi"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.err.rfind("error: '--report <FORMAT=FILE>' is only valid after 'review'\n", 0),
            0u)
      << plain.err;
  RunOutput bad = Run({"review", "--report", "pdf=x.pdf"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.rfind("error: invalid value 'pdf=x.pdf' for '--report <FORMAT=FILE>'\n  "
                          "[FORMAT=FILE, FORMAT one of: json, markdown, sarif, codequality]\n",
                          0),
            0u)
      << bad.err;
}

TEST_F(ReviewE2e, UncommittedIsTheDefaultWithStdinInstructions) {
  Serve(ReviewJson());
  ws_.WriteFile("repo/calc.py", kFeatureCalc + "\n\ndef half(x):\n    return x / 2\n");
  ws_.WriteFile("repo/docs/notes.txt", "todo\n");
  // Started in a subdirectory (-C): the change is still the whole repository's.
  RunOptions options;
  options.cwd = ws_.root();
  options.stdin_data = "Check error handling only.";
  RunOutput out = Run({"review", "-C", "repo/docs", "--json", "--ephemeral", "-"}, options);
  SKIP_WITHOUT_SANDBOX(out);
  ASSERT_EQ(out.exit_code, 0) << out.err;

  const std::string tracked_index = Trim(GitOut("diff HEAD | sed -n 2p"));
  const std::string added_index =
      Trim(GitOut("diff --no-index -- /dev/null docs/notes.txt | sed -n 3p"));
  EXPECT_EQ(FirstRequest().user,
            "Review this change.\n\nThe change to review is the uncommitted work in this "
            "repository: staged and unstaged edits to tracked files and new untracked files "
            "(ignored files are left out).\n"
            "The repository root is " +
                repo_ +
                ". To see the change again: `git diff HEAD && git status --porcelain`.\n\n"
                "<diff>\ndiff --git a/calc.py b/calc.py\n" +
                tracked_index +
                "\n--- a/calc.py\n+++ b/calc.py\n@@ -7,3 +7,7 @@ def total(xs):\n \n"
                " def mean(xs):\n     return total(xs) / len(xs)\n+\n+\n+def half(x):\n"
                "+    return x / 2\n"
                "diff --git a/docs/notes.txt b/docs/notes.txt\nnew file mode 100644\n" +
                added_index +
                "\n--- /dev/null\n+++ b/docs/notes.txt\n@@ -0,0 +1 @@\n+todo\n</diff>\n\n"
                "The user's review instructions (they take precedence over the general "
                "guidelines):\nCheck error handling only.\n");
  // Reviewing wrote nothing: the working tree is as the user left it.
  EXPECT_EQ(Trim(GitOut("status --porcelain")), " M calc.py\n?? docs/");
}

TEST_F(ReviewE2e, AnAnswerThatIsNotAReviewFailsTheTurn) {
  Serve(
      R"({"findings":[],"overall_correctness":"looks fine","overall_explanation":"","overall_confidence_score":1})");
  RunOutput out =
      Run({"review", "--json", "--base", "main", "-o", ws_.root() + "/r.json", "--ephemeral"});
  SKIP_WITHOUT_SANDBOX(out);
  // The review's own format, named as such (the user gave no --output-schema): exit 1, as
  // documented, code model_error.
  EXPECT_EQ(out.exit_code, 1) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 2u);
  const std::string why =
      "the model's answer does not follow the review format: #/overall_correctness: \"enum\" "
      "failed (schema #/properties/overall_correctness)";
  const std::string escaped =
      "the model's answer does not follow the review format: #/overall_correctness: "
      "\\\"enum\\\" failed (schema #/properties/overall_correctness)";
  EXPECT_EQ(lines[lines.size() - 2], R"({"type":"error","message":")" + escaped + "\"}");
  EXPECT_EQ(NormalizeThreadId(lines.back()),
            R"({"type":"turn.failed","error":{"message":")" + escaped +
                R"(","code":"model_error"},"usage":{"input_tokens":0,"cached_input_tokens":0,)"
                R"("cache_write_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0},)"
                R"("last_usage":{"input_tokens":0,"cached_input_tokens":0,)"
                R"("cache_write_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0},)"
                R"("requests":2,"duration_ms":<ms>})");
  EXPECT_EQ(out.err, "error: " + why + "\n");
  EXPECT_EQ(ReadFile(ws_.root() + "/r.json"), "");
}

// Usage errors: exit 2, one clear line on stderr, nothing on stdout, no model request.
TEST_F(ReviewE2e, UsageErrors) {
  Serve(ReviewJson());
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"review", "--json", "--base", "nosuch"},
       "error: base branch 'nosuch' not found: neither 'nosuch' nor 'origin/nosuch' names a "
       "commit in this repository. Fetch it first (`git fetch origin nosuch`; GitHub "
       "actions/checkout: `fetch-depth: 0`), or check the name\n"},
      {{"review", "--json", "--commit", "deadbeef"},
       "error: commit 'deadbeef' not found in this repository: check the SHA, or fetch it first "
       "(`git fetch origin <ref>`)\n"},
      {{"review", "--json"},
       "error: nothing to review: there are no uncommitted changes (staged, unstaged or "
       "untracked); pass --base BRANCH to review a branch or --commit SHA to review a commit\n"},
      {{"review", "--json", "--base", "main", "--commit", "HEAD"},
       "error: the argument '--base <BRANCH>' cannot be used with '--commit <SHA>'\n\n"
       "Usage: agentexec [exec] [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] fork SESSION_ID [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
       "[PROMPT]\n\nFor more information, try '--help'.\n"},
      {{"review", "--json", "--format", "SARIF"},
       "error: invalid value 'SARIF' for '--format <FORMAT>'\n"
       "  [possible values: json, markdown, sarif, codequality]\n\n"
       "Usage: agentexec [exec] [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] fork SESSION_ID [OPTIONS] [PROMPT]\n"
       "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
       "[PROMPT]\n\nFor more information, try '--help'.\n"},
  };
  for (const Case& c : cases) {
    RunOutput out = Run(c.args);
    EXPECT_EQ(out.exit_code, 2) << c.args[2];
    EXPECT_EQ(out.err, c.err);
    EXPECT_EQ(out.out, "");
  }
  EXPECT_EQ(server_.RequestCount(), 0);
}

TEST_F(ReviewE2e, ShallowCloneWithoutTheMergeBaseSaysToFetchHistory) {
  Serve(ReviewJson());
  const std::string clone = ws_.root() + "/clone";
  // Both branch tips, one commit deep each: their merge base is not in the clone.
  Git("clone -q --depth 1 --no-single-branch --branch feature 'file://" + repo_ + "' '" + clone +
          "'",
      ws_.root());
  RunOptions options;
  options.cwd = clone;
  RunOutput out = Run({"review", "--json", "--base", "main"}, options);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.err,
            "error: cannot find the merge base of HEAD and 'origin/main': this is a shallow "
            "clone and the common history is not in it; fetch the full history: `git fetch "
            "--unshallow` (GitHub actions/checkout: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: "
            "0`)\n");
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(server_.RequestCount(), 0);
}

}  // namespace
}  // namespace ae::e2e
