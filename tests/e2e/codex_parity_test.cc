// codex's behaviours, checked on the real binary against the strict loopback server: what
// `exec fork` sends and records, where the global AGENTS.md goes, and what a resumed thread
// compacted before its new prompt sends next. The expected requests were observed from the
// real codex-cli 0.171.0 against the same server.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <rapidjson/document.h>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

class CodexParityTest : public ::testing::Test {
 protected:
  void Serve(const std::string& turns) {
    const std::string script = ws_.WriteFile("turns.json", turns);
    Result<int> port = server_.Start(script, {}, 120);
    ASSERT_TRUE(port.ok()) << port.message();
    // Top-level keys go before the provider's table.
    ws_.WriteFile("agentexec-home/config.toml", extra_config_ + MockProviderConfig(server_));
  }
  RunOutput Run(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    env["MOCK_KEY"] = "test-key";
    return RunAgentexec(args, {ws_.repo(), ws_.Env(env)});
  }
  // The text of each message of request `n`'s input, as "role: text".
  std::vector<std::string> Messages(size_t n) {
    std::vector<LoggedRequest> requests = server_.Requests();
    std::vector<std::string> out;
    if (n >= requests.size()) return out;
    rapidjson::Document d;
    d.Parse(requests[n].body_json.c_str());
    for (const auto& item : d["input"].GetArray()) {
      if (!item.HasMember("role") || !item.HasMember("content")) continue;
      std::string role = item["role"].GetString();
      if (role == "developer") continue;
      std::string text;
      for (const auto& part : item["content"].GetArray()) {
        if (part.HasMember("text")) text += part["text"].GetString();
      }
      out.push_back(role + ": " + text);
    }
    return out;
  }
  static std::string ThreadId(const RunOutput& out) {
    const std::string first = out.lines().empty() ? "" : out.lines()[0];
    const size_t at = first.find(R"("thread_id":")");
    return at == std::string::npos ? "" : first.substr(at + 13, 36);
  }
  std::vector<fs::path> SessionFiles() {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(ws_.home() + "/sessions")) {
      if (e.is_regular_file()) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  Workspace ws_;
  TestModelServer server_;
  std::string extra_config_;
};

constexpr const char* kThreeAnswers = R"({"turns":[
  {"items":[{"type":"message","text":"first"}],"usage":{"input_tokens":10,"output_tokens":2}},
  {"items":[{"type":"message","text":"forked answer"}],"usage":{"input_tokens":10,"output_tokens":2}},
  {"items":[{"type":"message","text":"third"}],"usage":{"input_tokens":10,"output_tokens":2}}]})";

// `exec fork ID PROMPT`: a new thread id and session file (forked_from_id names the source),
// the source's history then the new prompt sent, usage carried over; the source is unchanged.
TEST_F(CodexParityTest, ForkStartsANewThreadFromTheSessionsHistory) {
  Serve(kThreeAnswers);
  RunOutput first = Run({"--json", "original prompt"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string source = ThreadId(first);
  ASSERT_EQ(source.size(), 36u) << first.out;
  RunOutput forked = Run({"exec", "fork", "--json", source, "fork prompt"});
  ASSERT_EQ(forked.exit_code, 0) << forked.err;
  const std::string fork = ThreadId(forked);
  EXPECT_EQ(fork.size(), 36u);
  EXPECT_NE(fork, source);
  ASSERT_EQ(forked.lines().size(), 4u) << forked.out;
  EXPECT_NE(forked.lines()[2].find(R"("text":"forked answer")"), std::string::npos);
  EXPECT_NE(forked.lines()[3].find(R"("usage":{"input_tokens":20,)"), std::string::npos)
      << forked.lines()[3];
  std::vector<std::string> sent = Messages(1);
  ASSERT_GE(sent.size(), 3u);
  EXPECT_EQ(sent[sent.size() - 3], "user: original prompt");
  EXPECT_EQ(sent[sent.size() - 2], "assistant: first");
  EXPECT_EQ(sent.back(), "user: fork prompt");
  std::vector<LoggedRequest> requests = server_.Requests();
  EXPECT_NE(requests[1].body_json.find(R"("prompt_cache_key":")" + fork), std::string::npos);
  std::vector<fs::path> files = SessionFiles();
  ASSERT_EQ(files.size(), 2u);
  const std::string forked_file =
      Slurp((files[0].string().find(fork) != std::string::npos ? files[0] : files[1]).string());
  EXPECT_NE(forked_file.find(R"("forked_from_id":")" + source + "\""), std::string::npos);
  const std::string source_file =
      Slurp((files[0].string().find(source) != std::string::npos ? files[0] : files[1]).string());
  EXPECT_EQ(source_file.find("fork prompt"), std::string::npos);
  // The fork resumes as a thread of its own, with the whole history.
  RunOutput resumed = Run({"resume", fork, "--json", "and on"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  sent = Messages(2);
  ASSERT_GE(sent.size(), 5u);
  EXPECT_EQ(sent[sent.size() - 5], "user: original prompt");
  EXPECT_EQ(sent[sent.size() - 3], "user: fork prompt");
  EXPECT_EQ(sent.back(), "user: and on");
  EXPECT_NE(resumed.lines().back().find(R"("usage":{"input_tokens":30,)"), std::string::npos);
}

// Without a prompt codex forks and stops: thread.started, the session file, exit 0, no request.
// An unknown id is a usage error, as for resume.
TEST_F(CodexParityTest, ForkWithoutAPromptOnlyForksAndAnUnknownIdIsRefused) {
  Serve(kThreeAnswers);
  RunOutput first = Run({"--json", "original prompt"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunOutput forked = Run({"fork", ThreadId(first), "--json"});
  EXPECT_EQ(forked.exit_code, 0) << forked.err;
  ASSERT_EQ(forked.lines().size(), 1u) << forked.out;
  EXPECT_EQ(forked.lines()[0].find(R"({"type":"thread.started","thread_id":")"), 0u);
  EXPECT_EQ(server_.RequestCount(), 1);
  EXPECT_EQ(SessionFiles().size(), 2u);
  RunOutput unknown = Run({"fork", "0190aaaa-0000-7000-8000-000000000000", "--json", "x"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "error: no session with id '0190aaaa-0000-7000-8000-000000000000' under " +
                             ws_.home() + "/sessions\n");
  RunOutput no_id = Run({"fork"});
  EXPECT_EQ(no_id.exit_code, 2);
  EXPECT_EQ(no_id.err.rfind("error: 'fork' needs a SESSION_ID\n", 0), 0u) << no_id.err;
}

// codex's `resume --last --all`: the newest session of any directory, not only this one's.
TEST_F(CodexParityTest, ResumeLastAllTakesTheNewestSessionOfAnyDirectory) {
  Serve(kThreeAnswers);
  const std::string other = ws_.root() + "/other";
  fs::create_directories(other);
  RunOutput first = RunAgentexec({"--json", "--skip-git-repo-check", "elsewhere"},
                                 {other, ws_.Env({{"MOCK_KEY", "test-key"}})});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunOutput here = Run({"resume", "--last", "--json", "here"});
  ASSERT_EQ(here.exit_code, 0) << here.err;
  EXPECT_NE(ThreadId(here), ThreadId(first));  // nothing of this directory's: a new thread
  RunOutput all = Run({"resume", "--last", "--all", "--json", "any"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(ThreadId(all), ThreadId(here));  // the newest of all: the one just made here
  EXPECT_EQ(Run({"--all", "x"}).err.rfind("error: '--all' is only valid after 'resume'\n", 0), 0u);
}

// $AGENTEXEC_HOME/AGENTS.md, else $CODEX_HOME/AGENTS.md, goes before the project's documents
// in one message, as codex 0.171 sends it.
TEST_F(CodexParityTest, GlobalAgentsMdIsSentBeforeTheProjectsAsCodexSendsIt) {
  Serve(kThreeAnswers);
  const std::string codex_home = ws_.root() + "/codex-home";
  fs::create_directories(codex_home);
  std::ofstream(codex_home + "/AGENTS.md") << "GLOBAL DOC\n";
  std::ofstream(ws_.repo() + "/AGENTS.md") << "PROJECT DOC\n";
  RunOutput out = Run({"--json", "hello"}, {{"CODEX_HOME", codex_home}});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> sent = Messages(0);
  ASSERT_GE(sent.size(), 1u);
  EXPECT_EQ(sent[0], "user: # AGENTS.md instructions for " + ws_.repo() +
                         "\n\n<INSTRUCTIONS>\nGLOBAL DOC\n\n--- project-doc ---\n\nPROJECT "
                         "DOC\n\n</INSTRUCTIONS>");
  // Ours wins over codex's home.
  std::ofstream(ws_.home() + "/AGENTS.md") << "OUR GLOBAL\n";
  fs::remove(ws_.repo() + "/AGENTS.md");
  RunOutput ours = Run({"--json", "hello"}, {{"CODEX_HOME", codex_home}});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  sent = Messages(1);
  ASSERT_GE(sent.size(), 1u);
  EXPECT_EQ(sent[0],
            "user: # AGENTS.md instructions\n\n<INSTRUCTIONS>\nOUR GLOBAL\n</INSTRUCTIONS>");
}

// A resumed thread past the auto-compact limit is compacted before its new prompt is added: the
// next request ends with that prompt, not with the summary.
TEST_F(CodexParityTest, AResumedThreadCompactedFirstEndsItsNextRequestWithTheNewPrompt) {
  extra_config_ = "model_auto_compact_token_limit = 500\n";
  Serve(R"({"turns":[
    {"items":[{"type":"message","text":"first answer"}],"usage":{"input_tokens":900,"output_tokens":20}},
    {"items":[{"type":"message","text":"second answer"}],"usage":{"input_tokens":100,"output_tokens":5}}]})");
  RunOutput first = Run({"--json", "first prompt"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  RunOutput second = Run({"resume", "--last", "--json", "the newest prompt"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_NE(requests[1].path.find("/responses/compact"), std::string::npos) << requests[1].path;
  EXPECT_EQ(requests[1].body_json.find("the newest prompt"), std::string::npos);
  std::vector<std::string> sent = Messages(2);
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent.back(), "user: the newest prompt");
}

}  // namespace
}  // namespace ae::e2e
