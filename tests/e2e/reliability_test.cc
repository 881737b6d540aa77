// Reliability of the real binary under inputs that are large or malformed: a response with
// thousands of calls when the run is cancelled, a prompt that cannot fit the model's window,
// the final message on a terminal-less stdout, the first session-file write failing, and output
// items without a type.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

std::string ScriptedFlag(const std::string& script) {
  return "model_providers.scripted.script=\"" + script + "\"";
}

size_t CountLines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// SIGTERM while a response of 10,000 calls runs: the calls running are killed and the others
// never start, so the run ends at once instead of spawning (and killing) each of them.
TEST(CancelManyCallsTest, SigtermStartsNoFurtherCallOfALargeResponse) {
  Workspace ws;
  const std::string marker = ws.root() + "/spawned";
  std::string items;
  for (int i = 0; i < 10000; ++i) {
    if (!items.empty()) items += ",\n";
    items += R"({"type":"function_call","name":"exec_command","arguments":{"cmd":"echo x >> )" +
             marker + R"(; sleep 5"},"call_id":"c)" + std::to_string(i) + "\"}";
  }
  std::string script =
      ws.WriteFile("turns.json", "{\"turns\":[{\"items\":[" + items +
                                     "]},{\"items\":[{\"type\":\"message\",\"text\":\"done\"}]}]}");
  RunOptions options{ws.repo(), ws.Env()};
  options.signal = SIGTERM;
  options.signal_after_ms = 3000;
  options.timeout_s = 300;
  RunOutput out = RunAgentexec({"--json", "-s", "danger-full-access", "-c",
                                "model_provider=scripted", "-c", ScriptedFlag(script), "go"},
                               options);
  EXPECT_EQ(out.exit_code, 143) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "");
  std::vector<std::string> lines = out.lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find(R"("type":"turn.failed")"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find(R"("code":"terminated")"), std::string::npos) << lines.back();
  // At most the calls that were running (8 workers) when the signal came, give or take the
  // ones a loaded machine had not yet started; never the thousands after them.
  EXPECT_LE(CountLines(marker), 16u);
}

constexpr const char* kOkAnswer = R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})";

constexpr const char* kEscapingAnswer =
    R"({"turns":[{"items":[{"type":"message","text":"say \u001b]0;pwned\u0007 done\u001b[2J"}]}]})";

// Runs agentexec in human mode with stdout on a fresh pseudo-terminal (raw mode, so the bytes
// read are the bytes written) and stderr on /dev/null; returns what the terminal received.
std::string StdoutOnATerminal(const Workspace& ws, const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  termios raw{};
  cfmakeraw(&raw);
  if (::openpty(&master, &slave, nullptr, &raw, nullptr) != 0) return "openpty failed";
  std::vector<std::string> env;
  for (const auto& [k, v] : ws.Env()) env.push_back(k + "=" + v);
  std::vector<char*> argv{const_cast<char*>(AGENTEXEC_BIN)}, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string repo = ws.repo();
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(slave, 1);
    ::dup2(null, 2);
    if (::chdir(repo.c_str()) != 0) ::_exit(127);
    ::execve(AGENTEXEC_BIN, argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(slave);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    out += "[exit status " + std::to_string(status) + "]";
  return out;
}

// README: in human mode control and escape sequences in model text never reach the terminal;
// the final message on stdout is model text too. Redirected, it is data and stays exact.
TEST(FinalMessageTest, OnATerminalItIsEscapedInAPipeItIsByteForByte) {
  Workspace ws;
  std::string script = ws.WriteFile("turns.json", kEscapingAnswer);
  std::vector<std::string> args{"-c", "model_provider=scripted", "-c", ScriptedFlag(script), "hi"};
  EXPECT_EQ(StdoutOnATerminal(ws, args), "say \\x1b]0;pwned\\x07 done\\x1b[2J\n");
  RunOutput piped = RunAgentexec(args, {ws.repo(), ws.Env()});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "say \x1b]0;pwned\x07 done\x1b[2J\n");
}

// The very first write of a new session file (its session_meta line) fails: here every write
// to a regular file does (RLIMIT_FSIZE 0, SIGXFSZ ignored, so write(2) answers EFBIG). The
// README's promise holds for that first failure too: one `error` item, exit 5.
TEST(SessionFileTest, TheFirstFailedWriteIsReportedAsAnErrorItem) {
  Workspace ws;
  std::string script = ws.WriteFile("turns.json", kOkAnswer);
  RunOptions options{ws.repo(), ws.Env()};
  options.wrapper = {"/bin/bash", "-c", "trap '' XFSZ; ulimit -f 0; exec \"$@\"", "bash"};
  RunOutput out = RunAgentexec(
      // No sandbox to prepare: its seccomp export is a file write too.
      {"--json", "-s", "danger-full-access", "-c", "model_provider=scripted", "-c",
       ScriptedFlag(script), "hi"},
      options);
  EXPECT_EQ(out.exit_code, 5) << out.err;
  EXPECT_EQ(CheckJsonLines(out.out), "");
  std::vector<std::string> errors;
  for (const std::string& line : out.lines()) {
    if (line.find(R"("type":"error")") != std::string::npos) errors.push_back(line);
  }
  ASSERT_EQ(errors.size(), 1u) << out.out;
  const std::string prefix = ws.home() + "/sessions/";
  EXPECT_NE(errors[0].find(R"("message":"cannot write session file ')" + prefix), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find(".jsonl': File too large; this run cannot be resumed\"}"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(out.lines().back().find(R"("type":"turn.completed")"), std::string::npos);
}

// One output item without a "type" in a Responses stream: skipped with a warning item, the rest
// of the response (a command) runs, the turn goes on, and the item is never sent back.
TEST(UntypedItemTest, IsSkippedWithAWarningAndTheTurnGoesOn) {
  Workspace ws;
  std::string script = ws.WriteFile("turns.json", R"({"turns":[
    {"items":[{"untyped":{"id":"x_1","status":"completed","content":[]}},
              {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo hi"},"call_id":"c1"}]},
    {"items":[{"type":"message","text":"done"}]}]})");
  TestModelServer server;
  Result<int> port = server.Start(script, {}, 60);
  ASSERT_TRUE(port.ok()) << port.message();
  ws.WriteFile("agentexec-home/config.toml", MockProviderConfig(server));
  RunOptions options{ws.repo(), ws.Env({{"MOCK_KEY", "test-key"}})};
  RunOutput out = RunAgentexec({"--json", "go"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err << out.out;
  EXPECT_EQ(CheckJsonLines(out.out), "");
  std::vector<std::string> lines = out.lines();
  size_t warnings = 0;
  for (const std::string& line : lines) {
    if (line.find(
            R"("type":"error","message":"the model sent an output item without a \"type\"; it was skipped"})") !=
        std::string::npos) {
      ++warnings;
    }
  }
  EXPECT_EQ(warnings, 1u) << out.out;
  ASSERT_GE(lines.size(), 2u);
  EXPECT_NE(lines[lines.size() - 2].find(R"("type":"agent_message","text":"done")"),
            std::string::npos)
      << out.out;
  std::vector<LoggedRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].body_json.find("x_1"), std::string::npos) << requests[1].body_json;
  EXPECT_NE(requests[1].body_json.find("hi\\n"), std::string::npos) << requests[1].body_json;
}

// A prompt of `bytes` on stdin, refused before any request: the framed failure with
// `message`, code context_length, exit 1; returns the run.
RunOutput ExpectPromptRefused(size_t bytes, const std::string& message) {
  Workspace ws;
  std::string script = ws.WriteFile("turns.json", kOkAnswer);
  RunOptions options{ws.repo(), ws.Env()};
  options.stdin_data = std::string(bytes, 'a');
  RunOutput out = RunAgentexec(
      {"--json", "-c", "model_provider=scripted", "-c", ScriptedFlag(script), "-"}, options);
  EXPECT_EQ(out.exit_code, 1) << out.err;
  std::vector<std::string> lines = out.lines();
  EXPECT_EQ(lines.size(), 4u) << out.out;
  if (lines.size() == 4) {
    EXPECT_EQ(lines[2], R"({"type":"error","message":")" + message + "\"}");
    EXPECT_NE(lines[3].find(R"({"type":"turn.failed","error":{"message":")" + message +
                            R"(","code":"context_length"})"),
              std::string::npos)
        << lines[3];
  }
  return out;
}

// A 20 MB prompt cannot fit any window: compaction would keep its last few KB and run a
// different task. The run fails before any request, framed like every failure, exit 1.
TEST(PromptSizeTest, APromptLargerThanTheContextWindowFailsBeforeTheFirstRequest) {
  const std::string message =
      "the prompt does not fit the model's context window: it is about 5242880 tokens (20971520 "
      "bytes at 4 bytes a token) and the window of `gpt-5.5` holds 272000 "
      "(model_context_window); shorten it, or put the material in files the agent can read";
  RunOutput out = ExpectPromptRefused(20u << 20, message);
  EXPECT_EQ(out.err, "Reading prompt from stdin...\nerror: " + message + "\n");
}

// A 1 MB prompt fits the window of gpt-5.5 (272000 tokens) but not under its auto-compact
// limit (90%): the first request would compact the task itself and the model would see a
// fraction of it. Refused before any request, with the sizes, as the 20 MB one.
TEST(PromptSizeTest, APromptAtTheAutoCompactLimitIsRefusedWithItsSizes) {
  ExpectPromptRefused(
      1u << 20,
      "the prompt is too large to keep whole: it is about 262144 tokens (1048576 bytes at 4 "
      "bytes a token) and the history of `gpt-5.5` is compacted at 244800 "
      "(model_auto_compact_token_limit), which would cut the task itself; shorten it, or put the "
      "material in files the agent can read");
}

}  // namespace
}  // namespace ae::e2e
