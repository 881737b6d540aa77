// MCP through the real binary: a stdio server from config.toml, a scripted model calling
// its tools, the exact mcp_tool_call items; a required server that cannot start; the same
// over streamable HTTP against a strict loopback server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

class McpE2eTest : public ::testing::Test {
 protected:
  RunOutput Run(const std::string& server_args, const std::string& extra_toml = "",
                const std::string& arguments = R"({"a":2,"b":3})") {
    ws_.WriteFile("agentexec-home/config.toml",
                  "[mcp_servers.calc]\n"
                  "command = \"python3\"\n"
                  "args = [\"" AE_SOURCE_DIR "/tests/support/mcp_server.py\"" +
                      server_args + "]\n" + extra_toml);
    std::string script = ws_.WriteFile("turns.json", R"({"turns":[
      {"items":[{"type":"function_call","name":"mcp__calc__add","arguments":)" +
                                                         arguments + R"(,"call_id":"c1"}]},
      {"items":[{"type":"message","text":"5"}]}]})");
    RunOutput out = RunAgentexec({"--json", "-c", "model_provider=scripted", "-c",
                                  "model_providers.scripted.script=\"" + script + "\"", "add"},
                                 {ws_.repo(), ws_.Env()});
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }
  Workspace ws_;
};

TEST_F(McpE2eTest, TheModelCallsAStdioServersTool) {
  RunOutput out = Run("");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 6u) << out.out;
  EXPECT_EQ(
      lines[2],
      R"({"type":"item.started","item":{"id":"item_0","type":"mcp_tool_call","server":"calc",)"
      R"("tool":"add","arguments":{"a":2,"b":3},"result":null,"error":null,"status":"in_progress"}})");
  EXPECT_EQ(
      lines[3],
      R"({"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"calc",)"
      R"("tool":"add","arguments":{"a":2,"b":3},"result":{"content":[{"type":"text","text":"5"}],)"
      R"("structured_content":{"sum":5}},"error":null,"status":"completed"}})");
  EXPECT_EQ(
      lines[4],
      R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"5"}})");
}

TEST_F(McpE2eTest, AServerThatCannotStartIsAWarningUnlessRequired) {
  RunOutput out = Run(", \"--crash-on-init\"");
  // Not required: the turn goes on; the model's call to the missing tool is unsupported.
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find(R"("type":"error","message":"MCP server 'calc' failed to start: )"),
            std::string::npos)
      << out.out;

  RunOutput required = Run(", \"--crash-on-init\"", "required = true\n");
  EXPECT_EQ(required.exit_code, 1);
  EXPECT_NE(required.lines().back().find(R"({"type":"turn.failed","error":{"message":")"),
            std::string::npos)
      << required.out;
  EXPECT_NE(required.lines().back().find(R"("code":"mcp_error"},)"), std::string::npos)
      << required.out;
}

// Arguments the model writes as a string, holding a number that overflows a double
// and raw invalid UTF-8; stdout stays valid JSON in valid UTF-8 (CheckJsonLines is strict).
TEST_F(McpE2eTest, HostileArgumentsStayValidJsonOnStdout) {
  RunOutput out = Run("", "", "\"{\\\"a\\\":1.8e308,\\\"b\\\":\\\"\xff\xfe\\\"}\"");
  EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
  std::vector<std::string> lines = out.lines();
  ASSERT_GE(lines.size(), 3u) << out.out;
  EXPECT_NE(lines[2].find("\"arguments\":{\"a\":\"Infinity\",\"b\":\"\xEF\xBF\xBD\xEF\xBF\xBD\"}"),
            std::string::npos)
      << lines[2];
  EXPECT_EQ(lines.back().rfind(R"({"type":"turn.)", 0), 0u) << out.out;
}

// A streamable-HTTP MCP server (tests/support/mcp_http_server.py) on loopback: it refuses
// what the transport's rules refuse (Accept, Content-Type, session id, protocol version,
// bearer token, a required header), so a call that succeeds followed all of them.
class McpHttpE2eTest : public ::testing::Test {
 protected:
  void StartServer(const std::vector<std::string>& extra) {
    const std::string port_file = ws_.root() + "/mcp-port";
    log_ = ws_.root() + "/mcp-log.jsonl";
    std::vector<std::string> argv = {
        "python3",     AE_SOURCE_DIR "/tests/support/mcp_http_server.py",
        "--port-file", port_file,
        "--log",       log_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> raw;
      for (std::string& a : argv) raw.push_back(a.data());
      raw.push_back(nullptr);
      ::execvp("python3", raw.data());
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ifstream in(port_file);
    in >> port_;
    ASSERT_GT(port_, 0) << "the MCP test server did not start";
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  RunOutput Run(const std::string& server_toml, const std::map<std::string, std::string>& env,
                const std::string& tool = "add",
                const std::string& arguments = R"({"a":2,"b":3})") {
    ws_.WriteFile("agentexec-home/config.toml",
                  "[mcp_servers.calc]\nurl = \"http://127.0.0.1:" + std::to_string(port_) +
                      "/mcp\"\n" + server_toml);
    std::string script = ws_.WriteFile("turns.json", R"({"turns":[
      {"items":[{"type":"function_call","name":"mcp__calc__)" +
                                                         tool + R"(","arguments":)" + arguments +
                                                         R"(,"call_id":"c1"}]},
      {"items":[{"type":"message","text":"5"}]}]})");
    RunOutput out = RunAgentexec({"--json", "-c", "model_provider=scripted", "-c",
                                  "model_providers.scripted.script=\"" + script + "\"", "add"},
                                 {ws_.repo(), ws_.Env(env)});
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  Workspace ws_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

TEST_F(McpHttpE2eTest, TheModelCallsAStreamableHttpServersTool) {
  for (bool sse : {false, true}) {
    SCOPED_TRACE(sse ? "event-stream replies" : "JSON replies");
    std::vector<std::string> extra = {"--token", "s3cret", "--require-header", "X-Org: acme"};
    if (sse) extra.push_back("--sse");
    StartServer(extra);
    RunOutput out =
        Run("bearer_token_env_var = \"CALC_TOKEN\"\n"
            "http_headers = { \"X-Org\" = \"acme\" }\n",
            {{"CALC_TOKEN", "s3cret"}});
    ASSERT_EQ(out.exit_code, 0) << out.err << out.out;
    std::vector<std::string> lines = out.lines();
    ASSERT_EQ(lines.size(), 6u) << out.out;
    EXPECT_EQ(
        lines[3],
        R"({"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"calc",)"
        R"("tool":"add","arguments":{"a":2,"b":3},"result":{"content":[{"type":"text","text":"5"}],)"
        R"("structured_content":{"sum":5}},"error":null,"status":"completed"}})");
    // The token reached the server and nothing else: not the events, not the session file.
    EXPECT_EQ(out.out.find("s3cret"), std::string::npos);
    EXPECT_NE(Log().find(R"("authorization": "Bearer s3cret")"), std::string::npos) << Log();
    TearDown();
    pid_ = -1;
    std::filesystem::remove(log_);
    std::filesystem::remove(ws_.root() + "/mcp-port");
  }
}

TEST_F(McpHttpE2eTest, AWrongTokenIsAStartupFailureThatSaysWhy) {
  StartServer({"--token", "right"});
  RunOutput out =
      Run("bearer_token_env_var = \"CALC_TOKEN\"\nrequired = true\n", {{"CALC_TOKEN", "wrong"}});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/mcp";
  EXPECT_NE(
      out.out.find("MCP server 'calc' failed to start: " + url + " answered 401 Unauthorized: "),
      std::string::npos)
      << out.out;
  EXPECT_EQ(out.out.find("wrong"), std::string::npos) << out.out;
}

TEST_F(McpHttpE2eTest, AnUnsetTokenVariableIsNamed) {
  StartServer({"--token", "right"});
  RunOutput out = Run("bearer_token_env_var = \"CALC_TOKEN\"\n", {});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("MCP server 'calc' failed to start: its bearer token variable "
                         "`CALC_TOKEN` is not set"),
            std::string::npos)
      << out.out;
}

}  // namespace
}  // namespace ae::e2e
