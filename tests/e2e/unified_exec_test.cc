// Unified exec through the real binary, the scripted provider and the real sandbox: a
// background server polled and then killed at the turn's end, python -i fed through
// write_stdin, a real terminal, require_escalated refused with nothing run, the exact JSONL
// of a backgrounded command, and no process left behind on SIGTERM, --timeout or when
// agentexec itself is SIGKILLed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/json.h"
#include "tests/support/agentexec_runner.h"
#include "tests/support/processes.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::AllGone;
using test::RealPython;

// A JSON string literal.
std::string Quoted(const std::string& s) {
  return ToJson(rapidjson::Value(rapidjson::StringRef(s.data(), s.size())));
}

bool PortAnswers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

class UnifiedExecE2e : public ::testing::Test {
 protected:
  // `calls` are {"name", "arguments JSON"}; one per model turn, then a final message.
  RunOutput Run(const std::vector<std::pair<std::string, std::string>>& calls,
                std::vector<std::string> args, RunOptions options = {}) {
    std::string turns = R"({"turns":[)";
    for (const auto& [name, arguments] : calls) {
      turns += R"({"items":[{"type":"function_call","name":")" + name + R"(","arguments":)" +
               arguments + "}]},";
    }
    turns += R"({"items":[{"type":"message","text":"done"}]}]})";
    std::string script = ws_.WriteFile("turns.json", turns);
    std::vector<std::string> full = ScriptedArgs(script, {"--json"});
    full.insert(full.end(), args.begin(), args.end());
    full.push_back("go");
    options.cwd = ws_.repo();
    options.env = ws_.Env();
    RunOutput out = RunAgentexec(full, options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }

  std::vector<std::string> ModelOutputs() const { return FunctionCallOutputs(ws_.home()); }

  static std::vector<std::string> Matching(const RunOutput& out, const std::string& what) {
    std::vector<std::string> found;
    for (const std::string& l : out.lines()) {
      if (l.find(what) != std::string::npos) found.push_back(l);
    }
    return found;
  }

  Workspace ws_;
};

TEST_F(UnifiedExecE2e, TheJsonlOfABackgroundedCommandIsStartedUpdatedCompleted) {
  RunOutput out =
      Run({{"exec_command",
            R"({"cmd":"echo one; sleep 3; echo two","login":false,"yield_time_ms":1500})"},
           {"write_stdin", R"({"session_id":1000,"chars":"","yield_time_ms":10000})"}},
          {"-s", "workspace-write"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string cmd = R"("command":"/bin/bash -c 'echo one; sleep 3; echo two'")";
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 7u) << out.out;
  EXPECT_EQ(lines[2],
            R"({"type":"item.started","item":{"id":"item_0","type":"command_execution",)" + cmd +
                R"(,"aggregated_output":"","exit_code":null,"status":"in_progress"}})");
  EXPECT_EQ(lines[3],
            R"({"type":"item.updated","item":{"id":"item_0","type":"command_execution",)" + cmd +
                R"(,"aggregated_output":"one\n","exit_code":null,"status":"in_progress"}})");
  EXPECT_EQ(lines[4],
            R"({"type":"item.completed","item":{"id":"item_0","type":"command_execution",)" + cmd +
                R"(,"aggregated_output":"one\ntwo\n","exit_code":0,"status":"completed"}})");
  EXPECT_EQ(
      lines[5],
      R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}})");

  std::vector<std::string> outputs = ModelOutputs();
  ASSERT_EQ(outputs.size(), 2u);
  std::regex running(
      R"(Chunk ID: [0-9a-f]{6}\\nWall time: [0-9.]+ seconds\\nProcess running with session ID 1000\\nOriginal token count: 1\\nOutput:\\none\\n")");
  EXPECT_TRUE(std::regex_search(outputs[0], running)) << outputs[0];
  std::regex exited(
      R"(Chunk ID: [0-9a-f]{6}\\nWall time: [0-9.]+ seconds\\nProcess exited with code 0\\nOriginal token count: 1\\nOutput:\\ntwo\\n")");
  EXPECT_TRUE(std::regex_search(outputs[1], exited)) << outputs[1];
}

TEST_F(UnifiedExecE2e, ABackgroundHttpServerIsPolledThenKilledAtTheTurnsEnd) {
  const std::string python = RealPython();
  if (python.empty()) GTEST_SKIP() << "no python3";
  const int port = 20000 + ::getpid() % 20000;
  const std::string server = "-m http.server " + std::to_string(port);
  const std::string fetch = python +
                            " -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:" +
                            std::to_string(port) + "/').status)\"";
  RunOutput out =
      Run({{"exec_command", R"({"cmd":)" + Quoted(python + " -u " + server + " --bind 127.0.0.1") +
                                R"(,"login":false,"yield_time_ms":2000})"},
           {"exec_command", R"({"cmd":)" + Quoted(fetch) + R"(,"login":false})"},
           {"write_stdin", R"({"session_id":1000,"yield_time_ms":5000})"}},
          {"-s", "workspace-write", "-c", "sandbox_workspace_write.network_access=true"});
  ASSERT_EQ(out.exit_code, 0) << out.err << out.out;
  EXPECT_TRUE(AllGone(server)) << "the server outlived the turn";
  EXPECT_FALSE(PortAnswers(port));

  std::vector<std::string> server_events = Matching(out, "http.server");
  ASSERT_EQ(server_events.size(), 4u) << out.out;
  EXPECT_NE(server_events[0].find(R"("type":"item.started")"), std::string::npos);
  EXPECT_NE(server_events[1].find(R"("type":"item.updated")"), std::string::npos);
  EXPECT_NE(server_events[1].find("Serving HTTP on 127.0.0.1 port " + std::to_string(port)),
            std::string::npos)
      << server_events[1];
  EXPECT_NE(server_events[2].find(R"("type":"item.updated")"), std::string::npos);
  EXPECT_NE(server_events[2].find(R"(\"GET / HTTP/1.1\" 200)"), std::string::npos)
      << server_events[2];
  // Killed at the turn's end, reported before turn.completed.
  EXPECT_NE(server_events[3].find(R"("type":"item.completed")"), std::string::npos);
  EXPECT_NE(server_events[3].find(R"("exit_code":137,"status":"failed")"), std::string::npos)
      << server_events[3];
  std::vector<std::string> lines = out.lines();
  EXPECT_EQ(lines[lines.size() - 2], server_events[3]);

  std::vector<std::string> outputs = ModelOutputs();
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_NE(outputs[0].find("Process running with session ID 1000"), std::string::npos);
  EXPECT_NE(
      outputs[1].find("Process exited with code 0\\nOriginal token count: 1\\nOutput:\\n200\\n"),
      std::string::npos)
      << outputs[1];
  EXPECT_NE(outputs[2].find("Process running with session ID 1000"), std::string::npos);
  EXPECT_NE(outputs[2].find(R"(\"GET / HTTP/1.1\" 200)"), std::string::npos) << outputs[2];
}

TEST_F(UnifiedExecE2e, WriteStdinFeedsAnInteractivePythonOnATerminal) {
  const std::string python = RealPython();
  if (python.empty()) GTEST_SKIP() << "no python3";
  RunOutput out =
      Run({{"exec_command", R"({"cmd":)" + Quoted(python + " -q -i") +
                                R"(,"login":false,"tty":true,"yield_time_ms":3000})"},
           {"write_stdin", R"({"session_id":1000,"chars":"print(6*7)\n","yield_time_ms":1500})"},
           {"write_stdin", R"({"session_id":1000,"chars":"exit()\n","yield_time_ms":5000})"}},
          {"-s", "workspace-write"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> outputs = ModelOutputs();
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_NE(outputs[0].find(R"(Output:\n>>> ")"), std::string::npos) << outputs[0];
  EXPECT_NE(outputs[1].find(R"(Output:\nprint(6*7)\r\n42\r\n>>> ")"), std::string::npos)
      << outputs[1];
  EXPECT_NE(outputs[2].find(R"(Process exited with code 0\n)"), std::string::npos) << outputs[2];
  std::vector<std::string> done = Matching(out, R"("type":"item.completed","item":{"id":"item_0")");
  ASSERT_EQ(done.size(), 1u) << out.out;
  EXPECT_NE(done[0].find(R"(42\r\n)"), std::string::npos) << done[0];
  EXPECT_NE(done[0].find(R"("exit_code":0,"status":"completed")"), std::string::npos) << done[0];
}

TEST_F(UnifiedExecE2e, TtyTrueRunsTheCommandOnATerminalInsideTheSandbox) {
  RunOutput out = Run(
      {{"exec_command",
        R"({"cmd":"test -t 0 && test -t 1 && test -t 2 && exec 3</dev/tty && echo on-a-tty","login":false,"tty":true})"},
       {"exec_command", R"({"cmd":"test -t 1 || echo not-a-tty","login":false})"}},
      {"-s", "workspace-write"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> done = Matching(out, R"("type":"item.completed")");
  ASSERT_EQ(done.size(), 3u) << out.out;
  EXPECT_NE(
      done[0].find(R"("aggregated_output":"on-a-tty\r\n","exit_code":0,"status":"completed")"),
      std::string::npos)
      << done[0];
  EXPECT_NE(done[1].find(R"("aggregated_output":"not-a-tty\n","exit_code":0)"), std::string::npos)
      << done[1];
}

TEST_F(UnifiedExecE2e, RequireEscalatedRunsNothingUnderNeverAndOnFailure) {
  for (const std::string approval : {"never", "on-failure"}) {
    const std::string name = approval == "never" ? "Never" : "OnFailure";
    fs::remove_all(ws_.home() + "/sessions");
    RunOutput out = Run(
        {{"exec_command",
          R"({"cmd":"touch marker-1","sandbox_permissions":"require_escalated","justification":"x"})"},
         {"shell",
          R"({"command":["touch","marker-2"],"sandbox_permissions":"require_escalated"})"}},
        {"-s", "read-only", "-a", approval});
    ASSERT_EQ(out.exit_code, 0) << out.err;
    EXPECT_FALSE(fs::exists(ws_.repo() + "/marker-1"));
    EXPECT_FALSE(fs::exists(ws_.repo() + "/marker-2"));
    EXPECT_TRUE(Matching(out, "command_execution").empty()) << out.out;
    std::vector<std::string> outputs = ModelOutputs();
    ASSERT_EQ(outputs.size(), 2u);
    const std::string refusal = "\"output\":\"approval policy is " + name +
                                "; reject command \u2014 you cannot ask for escalated permissions "
                                "if the approval policy is " +
                                name + "\"";
    for (const std::string& o : outputs) EXPECT_NE(o.find(refusal), std::string::npos) << o;
  }
}

// agentexec ending in any way ends every session's tree: SIGTERM, --timeout, and SIGKILL
// (where only the parent-death signal can act).
TEST_F(UnifiedExecE2e, NoSessionOutlivesAgentexecWhateverEndsIt) {
  struct Case {
    std::string name;
    int signal;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {
      {"sigterm", SIGTERM, {}}, {"sigkill", SIGKILL, {}}, {"timeout", 0, {"--timeout", "3"}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string marker =
        std::to_string(30000 + ::getpid() % 10000) + "." + std::to_string(c.signal + 1);
    RunOptions options;
    if (c.signal != 0) {
      options.signal = c.signal;
      options.signal_after_ms = 3000;
    }
    std::vector<std::string> args{"-s", "workspace-write"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    RunOutput out =
        Run({{"exec_command", R"({"cmd":"sleep )" + marker + " & setsid sleep " + marker +
                                  R"( & wait","login":false,"yield_time_ms":500})"},
             {"write_stdin", R"({"session_id":1000,"yield_time_ms":60000})"}},
            args, options);
    EXPECT_NE(out.exit_code, 0);
    EXPECT_GT(out.seconds, 2.5) << "ended before the session was running";
    EXPECT_TRUE(AllGone(marker)) << "a session's process outlived agentexec";
  }
}

}  // namespace
}  // namespace ae::e2e
