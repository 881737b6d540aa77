// MCP over stdio against a real server (tests/support/mcp_server.py): start-up and its
// failures, each tool outcome as an exact mcp_tool_call item and exact model output, timeouts,
// cancellation, a server dying mid-call, filters, naming, environment and shutdown.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/events/emitter.h"
#include "engine/exec/orchestrator.h"
#include "engine/mcp/client.h"
#include "engine/mcp/manager.h"
#include "engine/mcp/mcp_tool.h"
#include "engine/mcp/sha1.h"
#include "engine/tools/router.h"
#include "tests/support/jsonl_recorder.h"
#include "tests/support/processes.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

// The JSONL of one call to docs's `tool` (item_0, `arguments` as the item shows them): started,
// then completed with `outcome`, the item's "result", "error" and "status" fields.
std::string CallItemLines(const std::string& tool, const std::string& arguments,
                          const std::string& outcome) {
  const std::string item = R"({"id":"item_0","type":"mcp_tool_call","server":"docs","tool":")" +
                           tool + R"(","arguments":)" + arguments + ",";
  return R"({"type":"item.started","item":)" + item +
         R"("result":null,"error":null,"status":"in_progress"}})"
         "\n"
         R"({"type":"item.completed","item":)" +
         item + outcome + "}}\n";
}

bool Alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_.path();
    log_ = dir_ + "/server.log";
    turn_.cwd = dir_;
    turn_.sandbox.mode = sandbox::Mode::kDangerFullAccess;
  }

  McpServerSpec Spec(std::vector<std::string> extra = {}) {
    McpServerSpec s;
    s.name = "docs";
    // The interpreter itself, not a version-manager shim that can take seconds to start: the
    // timeout tests give the server a short startup window.
    static const std::string python = [] {
      std::string real = test::RealPython();
      return real.empty() ? std::string("python3") : real;
    }();
    s.command = python;
    s.args = {AE_MCP_SERVER_PY, "--log", log_};
    s.args.insert(s.args.end(), extra.begin(), extra.end());
    s.startup_timeout_ms = 10000;
    s.tool_timeout_ms = 10000;
    return s;
  }

  // Starts `specs` and registers their tools on a fresh router.
  void Start(std::vector<McpServerSpec> specs) {
    specs_ = std::move(specs);
    servers_ = McpServers::Start(specs_, emitter_, cancel_);
    servers_.RegisterTools(router_);
  }

  ToolResult Call(const std::string& name, const std::string& args, CancelToken* cancel = nullptr) {
    Orchestrator orch(turn_, nullptr);
    ToolEnv env{turn_, emitter_, cancel != nullptr ? *cancel : cancel_, orch};
    return router_.DispatchAll({ToolCall{"call_1", name, args, false}}, env)[0];
  }

  std::string ServerLog() {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  test::ScratchDir scratch_{"ae-mcp"};
  std::string dir_, log_;
  TurnContext turn_;
  // Silent events kept: the goldens below also say that a call emits nothing but its items.
  test::JsonlRecorder sink_{test::JsonlRecorder::Silent::kKept};
  Emitter emitter_{{&sink_}};
  CancelToken cancel_;
  std::vector<McpServerSpec> specs_;
  McpServers servers_;
  ToolRouter router_;
};

// --- start-up ---------------------------------------------------------------------------

TEST_F(McpTest, StartsListsAndOffersEveryToolInServerOrder) {
  Start({Spec()});
  EXPECT_EQ(sink_.Jsonl(), "");
  EXPECT_EQ(servers_.ToolNames(),
            (std::vector<std::string>{"mcp__docs__echo", "mcp__docs__add", "mcp__docs__fail",
                                      "mcp__docs__slow", "mcp__docs__crash", "mcp__docs__env",
                                      "mcp__docs__cwd", "mcp__docs__noisy"}));
  std::string specs = router_.SpecsJson();
  EXPECT_NE(
      specs.find(
          R"({"type":"function","name":"mcp__docs__echo","description":"Echo the text back.",)"
          R"("strict":false,"parameters":{"type":"object","properties":{"text":{"type":"string"}},)"
          R"("required":["text"]}})"),
      std::string::npos)
      << specs;
  // A tool without an inputSchema gets an empty object schema.
  EXPECT_NE(
      specs.find(R"({"type":"function","name":"mcp__docs__fail","description":"Always fails.",)"
                 R"("strict":false,"parameters":{"type":"object","properties":{}}})"),
      std::string::npos)
      << specs;
  // The handshake: initialize with our identity, then the initialized notification.
  std::string log = ServerLog();
  EXPECT_NE(log.find(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{)"
                     R"("protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{)"
                     R"("name":"agentexec","version":")"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                     "\n"
                     R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"),
            std::string::npos)
      << log;
}

// As codex: a tool the server marks read-only runs alongside the other parallel-safe calls;
// any other tool (readOnlyHint false or absent) runs alone.
TEST_F(McpTest, ReadOnlyToolsAreParallelSafe) {
  Start({Spec()});
  EXPECT_TRUE(router_.ParallelSafe("mcp__docs__echo"));
  EXPECT_FALSE(router_.ParallelSafe("mcp__docs__add"));
  EXPECT_FALSE(router_.ParallelSafe("mcp__docs__slow"));
}

TEST_F(McpTest, AnswersTheServersRequests) {
  Start({Spec({"--ping-first"})});
  EXPECT_EQ(sink_.Jsonl(), "");
  EXPECT_EQ(servers_.ToolNames().size(), 8u);
}

TEST_F(McpTest, FollowsToolsListCursors) {
  Start({Spec({"--page-size", "2"})});
  EXPECT_EQ(servers_.ToolNames().size(), 8u);
  EXPECT_NE(ServerLog().find(R"("method":"tools/list","params":{"cursor":"6"}})"),
            std::string::npos);
}

TEST_F(McpTest, EnabledAndDisabledToolsFilter) {
  McpServerSpec s = Spec();
  s.enabled_tools = std::vector<std::string>{"echo", "add", "nonexistent"};
  s.disabled_tools = {"add"};
  Start({s});
  EXPECT_EQ(servers_.ToolNames(), (std::vector<std::string>{"mcp__docs__echo"}));

  McpServerSpec none = Spec();
  none.enabled_tools = std::vector<std::string>{};
  EXPECT_FALSE(McpToolAllowed(none, "echo"));
  EXPECT_TRUE(McpToolAllowed(Spec(), "echo"));
}

TEST_F(McpTest, CrashOnInitIsAWarningWithTheServersLastWords) {
  Start({Spec({"--crash-on-init"})});
  EXPECT_EQ(sink_.Jsonl(),
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":)"
            R"("MCP server 'docs' failed to start: the server exited with code 3; its stderr )"
            R"(ends with: RuntimeError: cannot open the docs index"}})"
            "\n");
  EXPECT_TRUE(servers_.ToolNames().empty());
  EXPECT_EQ(router_.SpecsJson(), "[]");
}

TEST_F(McpTest, GarbageOnStdoutFailsAtOnce) {
  Start({Spec({"--garbage"})});
  EXPECT_EQ(sink_.Jsonl(),
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":)"
            R"("MCP server 'docs' failed to start: the server wrote something other than )"
            R"(JSON-RPC on stdout: 'Starting docs server v1.2...' (an MCP stdio server must )"
            R"j(write only MCP messages there; logs belong on stderr)"}})j"
            "\n");
}

TEST_F(McpTest, SilentServerTimesOutAndIsStopped) {
  McpServerSpec s = Spec({"--no-answer"});
  // Long enough for the Python server to start and read the request it will never answer
  // (the log below must show it heard it), short enough to keep the test quick.
  s.startup_timeout_ms = 2000;
  Start({s});
  EXPECT_EQ(sink_.Jsonl(),
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":)"
            R"("MCP server 'docs' failed to start: no answer to initialize within 2 s )"
            R"j((raise startup_timeout_sec in [mcp_servers.docs] if it needs longer)"}})j"
            "\n");
  EXPECT_EQ(servers_.client("docs"), nullptr);
  // The server heard the request and was then told it was abandoned.
  EXPECT_NE(
      ServerLog().find(
          R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"timeout"}})"),
      std::string::npos);
}

TEST_F(McpTest, MissingCommandBadCwdAndBadNameAreWarnings) {
  McpServerSpec missing = Spec();
  missing.name = "missing";
  missing.command = "no-such-mcp-server-xyz";
  McpServerSpec bad_cwd = Spec();
  bad_cwd.name = "elsewhere";
  bad_cwd.cwd = dir_ + "/nonexistent";
  McpServerSpec bad_name = Spec();
  bad_name.name = "my.docs";
  McpServerSpec good = Spec();
  Start({missing, bad_cwd, bad_name, good});
  EXPECT_EQ(sink_.Jsonl(),
            R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":)"
            R"("MCP server 'missing' failed to start: command 'no-such-mcp-server-xyz' not found )"
            R"(in PATH"}})"
            "\n"
            R"({"type":"item.completed","item":{"id":"item_1","type":"error","message":)"
            R"("MCP server 'elsewhere' failed to start: cannot enter cwd ')" +
                dir_ +
                R"(/nonexistent': No such file or directory"}})"
                "\n"
                R"({"type":"item.completed","item":{"id":"item_2","type":"error","message":)"
                R"("MCP server 'my.docs' failed to start: its name must match ^[a-zA-Z0-9_-]+$"}})"
                "\n");
  // The good one came up regardless.
  EXPECT_EQ(servers_.ToolNames().size(), 8u);
  EXPECT_EQ(servers_.RequiredFailure(), std::nullopt);
}

TEST_F(McpTest, RequiredServersThatFailAreNamed) {
  McpServerSpec a = Spec({"--crash-on-init"});
  a.name = "alpha";
  a.required = true;
  McpServerSpec b = Spec({"--garbage"});
  b.name = "beta";
  b.required = true;
  McpServerSpec c = Spec({"--crash-on-init"});
  c.name = "gamma";  // not required: a warning only
  Start({a, b, c, Spec()});
  EXPECT_EQ(servers_.RequiredFailure(), "required MCP servers failed to initialize: alpha, beta");
  EXPECT_EQ(servers_.ToolNames().size(), 8u);
}

// --- calls ------------------------------------------------------------------------------

TEST_F(McpTest, EchoIsCompletedWithItsContent) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__echo", R"({"text":"hi"})");
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.output, "hi");
  EXPECT_EQ(r.call_id, "call_1");
  EXPECT_EQ(sink_.Jsonl(),
            CallItemLines("echo", R"({"text":"hi"})",
                          R"("result":{"content":[{"type":"text","text":"hi"}],)"
                          R"("structured_content":null},"error":null,"status":"completed")"));
  EXPECT_NE(ServerLog().find(
                R"("method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})"),
            std::string::npos);
}

TEST_F(McpTest, StructuredContentIsWhatTheModelSees) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__add", R"({"a": 2, "b": 3})");
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.output, R"({"sum":5})");
  EXPECT_EQ(sink_.Jsonl(),
            CallItemLines("add", R"({"a":2,"b":3})",
                          R"("result":{"content":[{"type":"text","text":"5"}],)"
                          R"("structured_content":{"sum":5}},"error":null,"status":"completed")"));
}

TEST_F(McpTest, IsErrorFailsTheItemButKeepsTheResult) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__fail", "{}");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output, "it went wrong");
  EXPECT_EQ(sink_.Jsonl(),
            CallItemLines("fail", "{}",
                          R"("result":{"content":[{"type":"text","text":"it went wrong"}],)"
                          R"("structured_content":null},"error":null,"status":"failed")"));
}

TEST_F(McpTest, EmptyArgumentsSendNoneAndShowNull) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__cwd", "");
  EXPECT_TRUE(r.success);
  EXPECT_NE(sink_.Jsonl().find(R"("tool":"cwd","arguments":null,)"), std::string::npos);
  EXPECT_NE(ServerLog().find(R"("method":"tools/call","params":{"name":"cwd"}})"),
            std::string::npos);
}

TEST_F(McpTest, InvalidArgumentsFailWithoutACall) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__echo", R"({"text": )");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output, "tool call error: arguments are not valid JSON: Invalid value at offset 9");
  EXPECT_EQ(sink_.Jsonl(),
            CallItemLines("echo", R"("{\"text\": ")",
                          R"("result":null,"error":{"message":)"
                          R"("arguments are not valid JSON: Invalid value at offset 9"},)"
                          R"("status":"failed")"));
  ToolResult array = Call("mcp__docs__echo", "[1]");
  EXPECT_EQ(array.output, "tool call error: arguments must be a JSON object, not an array");
  EXPECT_EQ(ServerLog().find("tools/call"), std::string::npos);
}

TEST_F(McpTest, TimeoutFailsTheCallAndStopKillsTheServer) {
  McpServerSpec s = Spec();
  s.tool_timeout_ms = 300;
  Start({s});
  pid_t pid = servers_.client("docs")->pid();
  ToolResult r = Call("mcp__docs__slow", R"({"seconds":30})");
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output, "tool call error: no answer to tools/call within 300 ms");
  EXPECT_EQ(sink_.Jsonl(),
            CallItemLines("slow", R"({"seconds":30})",
                          R"("result":null,"error":{"message":)"
                          R"("no answer to tools/call within 300 ms"},"status":"failed")"));
  EXPECT_TRUE(Alive(pid));
  // The sleeping server ignores stdin closing; Stop escalates to signals and reaps it.
  servers_.Stop();
  EXPECT_FALSE(Alive(pid));
  EXPECT_EQ(errno, ESRCH);
  // A call after Stop answers with an error instead of hanging.
  ToolResult after = Call("mcp__docs__echo", R"({"text":"x"})");
  EXPECT_FALSE(after.success);
  EXPECT_EQ(after.output, "tool call error: the server has been shut down");
}

TEST_F(McpTest, CancelStopsTheWait) {
  Start({Spec()});
  CancelToken cancel;
  // Cancelled while the call waits: a call the router has not started yet would not start at
  // all (router.h), so the signal comes after the call began.
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.Cancel(CancelReason::kSigint);
  });
  ToolResult r = Call("mcp__docs__slow", R"({"seconds":30})", &cancel);
  canceller.join();
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.output, "tool call error: tools/call was cancelled");
}

TEST_F(McpTest, ServerExitingMidCallFailsThisAndLaterCalls) {
  Start({Spec()});
  ToolResult r = Call("mcp__docs__crash", "{}");
  EXPECT_FALSE(r.success);
  std::string why = "the server exited with code 3; its stderr ends with: crashing on purpose";
  EXPECT_EQ(r.output, "tool call error: " + why);
  EXPECT_NE(sink_.Jsonl().find(R"("result":null,"error":{"message":")" + why +
                               R"("},"status":"failed"}})"),
            std::string::npos)
      << sink_.Jsonl();
  ToolResult again = Call("mcp__docs__echo", R"({"text":"x"})");
  EXPECT_EQ(again.output, "tool call error: " + why);
}

TEST_F(McpTest, AChattyStderrNeitherBlocksNorGrows) {
  Start({Spec()});
  EXPECT_EQ(Call("mcp__docs__noisy", "{}").output, "ok");
  std::string tail = servers_.client("docs")->StderrTail();
  EXPECT_LE(tail.size(), 4096u);
  EXPECT_EQ(tail.substr(tail.size() - 10), "last words");
}

TEST_F(McpTest, JsonRpcErrorsAreReported) {
  Result<std::unique_ptr<McpClient>> c = McpClient::Spawn(Spec());
  ASSERT_TRUE(c.ok()) << c.message();
  ASSERT_TRUE((*c)->Initialize(5000, nullptr).ok());
  Result<McpCallResult> r = (*c)->CallTool("nope", "{}", 5000, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "Unknown tool: nope (JSON-RPC error -32602)");
}

TEST_F(McpTest, ServersSeeOnlyTheirEnvironmentAndCwd) {
  ::setenv("AE_MCP_SECRET_KEY", "secret", 1);
  ::setenv("AE_MCP_PASSED", "passed", 1);
  ::setenv("TZ", "UTC", 1);  // one of the variables every server gets, as codex
  McpServerSpec s = Spec();
  s.env = {{"DOCS_TOKEN", "t0ken"}};
  s.env_vars = {"AE_MCP_PASSED"};
  s.cwd = dir_;
  Start({s});
  EXPECT_EQ(Call("mcp__docs__env", R"({"name":"AE_MCP_SECRET_KEY"})").output, "");
  EXPECT_EQ(Call("mcp__docs__env", R"({"name":"AE_MCP_PASSED"})").output, "passed");
  EXPECT_EQ(Call("mcp__docs__env", R"({"name":"DOCS_TOKEN"})").output, "t0ken");
  EXPECT_EQ(Call("mcp__docs__env", R"({"name":"TZ"})").output, "UTC");
  EXPECT_EQ(Call("mcp__docs__cwd", "{}").output, dir_);
}

TEST_F(McpTest, TwoServersStartTogetherAndKeepTheirNames) {
  McpServerSpec a = Spec();
  a.name = "alpha";
  McpServerSpec b = Spec();
  b.name = "beta";
  b.enabled_tools = std::vector<std::string>{"echo"};
  Start({a, b});
  std::vector<std::string> names = servers_.ToolNames();
  ASSERT_EQ(names.size(), 9u);
  EXPECT_EQ(names.back(), "mcp__beta__echo");
  EXPECT_EQ(Call("mcp__beta__echo", R"({"text":"from beta"})").output, "from beta");
  EXPECT_NE(sink_.Jsonl().find(R"("server":"beta","tool":"echo")"), std::string::npos);
}

// --- naming and output ------------------------------------------------------------------

TEST(McpNaming, QualifiedNamesAreSanitisedAndShortened) {
  EXPECT_EQ(QualifiedToolName("docs", "search"), "mcp__docs__search");
  EXPECT_EQ(QualifiedToolName("docs", "files.read v2"), "mcp__docs__files_read_v2");
  std::string tool(80, 'x');
  std::string name = QualifiedToolName("docs", tool);
  EXPECT_EQ(name.size(), 64u);
  EXPECT_EQ(name, "mcp__docs__xxxxxxxxxxxxx" + Sha1Hex("mcp__docs__" + tool));
  std::string exact = std::string(64 - 11, 'y');  // mcp__docs__ + 53 = 64: kept as is
  EXPECT_EQ(QualifiedToolName("docs", exact), "mcp__docs__" + exact);
}

TEST(McpNaming, Sha1MatchesKnownVectors) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha1Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

TEST(McpOutput, TextJoinedOtherBlocksAsJsonImagesSummarised) {
  McpCallResult r;
  r.content_json =
      R"([{"type":"text","text":"one"},{"type":"resource","resource":{"uri":"file:///a"}},)"
      R"({"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"two"}])";
  EXPECT_EQ(McpModelOutput(r),
            "one\n"
            R"({"type":"resource","resource":{"uri":"file:///a"}})"
            "\n[image content (image/png) not shown]\ntwo");
  r.structured_json = R"({"k":[1,2]})";
  EXPECT_EQ(McpModelOutput(r), R"({"k":[1,2]})");
  EXPECT_EQ(McpModelOutput(McpCallResult{"[]", std::nullopt, false}), "");
}

}  // namespace
}  // namespace ae
