// A whole session with MCP servers: the scripted model calls an MCP tool, the item and the
// answer fed back are exact, a server that cannot start is a warning, and the servers are
// gone when RunSession returns.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/session.h"
#include "tests/support/jsonl_recorder.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(McpSession, ModelCallsAnMcpToolAndGetsItsAnswer) {
  test::ScratchDir scratch("ae-mcp-session");
  const std::string dir = scratch.path();
  std::string script = dir + "/script.json";
  std::ofstream(script) << R"({"turns": [
      {"items": [{"type": "function_call", "name": "mcp__docs__add",
                  "arguments": {"a": 2, "b": 3}, "call_id": "call_add"}]},
      {"items": [{"type": "message", "text": "The sum is 5."}]}]})";

  SessionConfig config;
  config.cwd = dir;
  config.provider.id = "scripted";
  config.provider.wire_api = "scripted";
  config.provider.script = script;
  config.model.model = "test-model";
  config.sandbox.mode = sandbox::Mode::kDangerFullAccess;
  config.home = dir;
  McpServerSpec docs;
  docs.name = "docs";
  docs.command = "python3";
  docs.args = {AE_MCP_SERVER_PY, "--log", dir + "/docs.log"};
  McpServerSpec broken = docs;
  broken.name = "broken";
  broken.args = {AE_MCP_SERVER_PY, "--crash-on-init"};
  config.mcp_servers = {docs, broken};

  test::JsonlRecorder sink;
  CancelToken cancel;
  SessionResult result = RunSession(config, "add 2 and 3", {&sink}, cancel);
  ASSERT_EQ(result.outcome(), SessionOutcome::kCompleted) << result.error;
  EXPECT_EQ(result.final_message, "The sum is 5.");

  std::vector<std::string> expected = {
      R"({"type":"turn.started"})",
      R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":"MCP server )"
      R"('broken' failed to start: the server exited with code 3; its stderr ends with: )"
      R"(RuntimeError: cannot open the docs index"}})",
      R"({"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"docs",)"
      R"("tool":"add","arguments":{"a":2,"b":3},"result":null,"error":null,"status":"in_progress"}})",
      R"({"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"docs",)"
      R"("tool":"add","arguments":{"a":2,"b":3},"result":{"content":[{"type":"text","text":"5"}],)"
      R"("structured_content":{"sum":5}},"error":null,"status":"completed"}})",
      R"({"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"The sum is 5."}})",
  };
  ASSERT_GE(sink.lines.size(), expected.size() + 2);  // thread.started first, turn.completed last
  EXPECT_EQ(std::vector<std::string>(sink.lines.begin() + 1, sink.lines.end() - 1), expected);
  EXPECT_EQ(sink.lines.back().rfind(R"({"type":"turn.completed")", 0), 0u) << sink.lines.back();

  // What went back to the model is in the session file: the structured content as JSON.
  std::string rollout;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/sessions")) {
    if (e.is_regular_file()) rollout = ReadAll(e.path().string());
  }
  EXPECT_NE(rollout.find(R"("call_id":"call_add","output":"{\"sum\":5}")"), std::string::npos)
      << rollout;

  // The server was stopped when the session ended: it saw stdin close and left.
  std::string log = ReadAll(dir + "/docs.log");
  EXPECT_NE(log.find(R"("method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}})"),
            std::string::npos)
      << log;
  ASSERT_GE(log.size(), 13u);
  EXPECT_EQ(log.substr(log.size() - 13), "{\"eof\":true}\n") << log;
}

}  // namespace
}  // namespace ae
