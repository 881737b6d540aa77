// MCP through the real binary: a stdio server from config.toml, a scripted model calling
// its tools, the exact mcp_tool_call items; a required server that cannot start.
#include <gtest/gtest.h>

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

// Issue 12: arguments the model writes as a string, holding a number that overflows a double
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

}  // namespace
}  // namespace ae::e2e
