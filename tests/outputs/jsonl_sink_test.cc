// Golden lines for every event and item shape of the JSONL stream: SDKs and jq scripts parse
// these byte for byte, so the expected strings are exact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include "base/fd.h"
#include "outputs/jsonl_sink.h"

namespace ae {
namespace {

TEST(JsonlSinkTest, ThreadAndTurnEvents) {
  EXPECT_EQ(EventToJson(ThreadStarted{"0199a213-81c0-7800-8aa1-bbab2a035a53", {}}),
            R"({"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53",)"
            R"("schema_version":1})");
  EXPECT_EQ(EventToJson(TurnStarted{}), R"({"type":"turn.started"})");
  Usage u{24763, 24448, 0, 122, 64};
  Usage last{763, 448, 0, 22, 4};
  EXPECT_EQ(EventToJson(TurnCompleted{u, TurnStats{4210, 3, last}}),
            R"({"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,)"
            R"("cache_write_input_tokens":0,"output_tokens":122,"reasoning_output_tokens":64},)"
            R"("last_usage":{"input_tokens":763,"cached_input_tokens":448,)"
            R"("cache_write_input_tokens":0,"output_tokens":22,"reasoning_output_tokens":4},)"
            R"("requests":3,"duration_ms":4210})");
  EXPECT_EQ(
      EventToJson(TurnFailed{"stream disconnected before completion", ErrorCode::kModelError, u,
                             TurnStats{17, 1, {}}}),
      R"({"type":"turn.failed","error":{"message":"stream disconnected before completion",)"
      R"("code":"model_error"},"usage":{"input_tokens":24763,"cached_input_tokens":24448,)"
      R"("cache_write_input_tokens":0,"output_tokens":122,"reasoning_output_tokens":64},)"
      R"("last_usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_input_tokens":0,)"
      R"("output_tokens":0,"reasoning_output_tokens":0},"requests":1,"duration_ms":17})");
  EXPECT_EQ(EventToJson(ItemCompleted{Item{"item_9", ContextCompactionItem{120000, 8000}}}),
            R"({"type":"item.completed","item":{"id":"item_9","type":"context_compaction",)"
            R"("tokens_before":120000,"tokens_after":8000}})");
  EXPECT_EQ(EventToJson(StreamError{"Reconnecting... 1/5 (timeout)"}),
            R"j({"type":"error","message":"Reconnecting... 1/5 (timeout)"})j");
  EXPECT_EQ(EventToJson(AgentMessageDelta{"partial"}), "");
}

TEST(JsonlSinkTest, MessageAndReasoningItems) {
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_3", AgentMessageItem{"Done.\n"}}}),
      R"({"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done.\n"}})");
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_0", ReasoningItem{"**Plan**\nsecond"}}}),
      R"({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Plan**\nsecond"}})");
}

TEST(JsonlSinkTest, CommandExecutionRunningThenDone) {
  CommandExecutionItem running{"/bin/bash -lc 'echo hi'", "", std::nullopt,
                               ItemStatus::kInProgress};
  EXPECT_EQ(EventToJson(ItemStarted{Item{"item_1", running}}),
            R"({"type":"item.started","item":{"id":"item_1","type":"command_execution",)"
            R"("command":"/bin/bash -lc 'echo hi'","aggregated_output":"","exit_code":null,)"
            R"("status":"in_progress"}})");
  CommandExecutionItem failed{"/bin/bash -lc false", "boom\n", 1, ItemStatus::kFailed};
  EXPECT_EQ(EventToJson(ItemCompleted{Item{"item_1", failed}}),
            R"({"type":"item.completed","item":{"id":"item_1","type":"command_execution",)"
            R"("command":"/bin/bash -lc false","aggregated_output":"boom\n","exit_code":1,)"
            R"("status":"failed"}})");
}

TEST(JsonlSinkTest, FileChangeOmitsDiff) {
  FileChangeItem fc{{{"/w/a.txt", FileChangeKind::kAdd, "+x\n"},
                     {"/w/b.txt", FileChangeKind::kUpdate, ""},
                     {"/w/c.txt", FileChangeKind::kDelete, ""}},
                    ItemStatus::kCompleted};
  EXPECT_EQ(EventToJson(ItemCompleted{Item{"item_2", fc}}),
            R"({"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[)"
            R"({"path":"/w/a.txt","kind":"add"},{"path":"/w/b.txt","kind":"update"},)"
            R"({"path":"/w/c.txt","kind":"delete"}],"status":"completed"}})");
}

TEST(JsonlSinkTest, TodoWebSearchErrorItems) {
  TodoListItem todo{{{"Read code", true}, {"Test", false}}};
  EXPECT_EQ(EventToJson(ItemUpdated{Item{"item_0", todo}}),
            R"({"type":"item.updated","item":{"id":"item_0","type":"todo_list","items":[)"
            R"({"text":"Read code","completed":true},{"text":"Test","completed":false}]}})");
  EXPECT_EQ(
      EventToJson(ItemStarted{
          Item{"item_4", WebSearchItem{"landlock abi", {"search", "landlock abi", "", ""}}}}),
      R"({"type":"item.started","item":{"id":"item_4","type":"web_search","query":"landlock abi",)"
      R"("action":{"type":"search","query":"landlock abi"}}})");
  EXPECT_EQ(EventToJson(ItemCompleted{
                Item{"item_6", WebSearchItem{"", {"find_in_page", "", "https://x/", "abi"}}}}),
            R"({"type":"item.completed","item":{"id":"item_6","type":"web_search","query":"",)"
            R"("action":{"type":"find_in_page","url":"https://x/","pattern":"abi"}}})");
  EXPECT_EQ(EventToJson(ItemCompleted{Item{"item_7", WebSearchItem{"", {}}}}),
            R"({"type":"item.completed","item":{"id":"item_7","type":"web_search","query":"",)"
            R"("action":{"type":"other"}}})");
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_5", ErrorItem{"unknown key 'modle'"}}}),
      R"({"type":"item.completed","item":{"id":"item_5","type":"error","message":"unknown key 'modle'"}})");
}

TEST(JsonlSinkTest, McpToolCallSuccessAndFailure) {
  McpToolCallItem ok{
      "docs",       "search",     R"({"q":"x"})",        R"([{"type":"text","text":"hit"}])",
      std::nullopt, std::nullopt, ItemStatus::kCompleted};
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_6", ok}}),
      R"({"type":"item.completed","item":{"id":"item_6","type":"mcp_tool_call","server":"docs",)"
      R"("tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"hit"}],)"
      R"("structured_content":null},"error":null,"status":"completed"}})");
  McpToolCallItem bad{"docs",          "search",           "", std::nullopt, std::nullopt,
                      "server exited", ItemStatus::kFailed};
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_7", bad}}),
      R"({"type":"item.completed","item":{"id":"item_7","type":"mcp_tool_call","server":"docs",)"
      R"("tool":"search","arguments":{},"result":null,"error":{"message":"server exited"},)"
      R"("status":"failed"}})");
}

TEST(JsonlSinkTest, InvalidUtf8IsReplacedAndControlCharsEscaped) {
  CommandExecutionItem c{"cat bin", std::string("ok\xff\xfe\x01\n", 6), 0, ItemStatus::kCompleted};
  EXPECT_EQ(
      EventToJson(ItemCompleted{Item{"item_1", c}}),
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\",\"type\":\"command_execution\","
      "\"command\":\"cat bin\",\"aggregated_output\":\"ok\xEF\xBF\xBD\xEF\xBF\xBD\\u0001\\n\","
      "\"exit_code\":0,\"status\":\"completed\"}}");
}

TEST(JsonlSinkTest, WritesOneLinePerEventAndSurvivesAClosedReader) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Fd read_end(fds[0]), write_end(fds[1]);
  JsonlSink sink(write_end.get());
  sink.Emit(TurnStarted{});
  sink.Emit(AgentMessageDelta{"not a line"});
  sink.Emit(StreamError{"x"});
  char buf[256];
  ssize_t n = ::read(read_end.get(), buf, sizeof buf);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)),
            "{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"x\"}\n");
  read_end.reset();
  signal(SIGPIPE, SIG_IGN);
  sink.Emit(TurnStarted{});  // EPIPE: must neither crash nor throw
  sink.Emit(TurnStarted{});
}

}  // namespace
}  // namespace ae

namespace ae {
namespace {

// Numbers a JSON text cannot hold and raw invalid UTF-8 in MCP arguments and
// results; the line stays one valid object in valid UTF-8.
TEST(JsonlSinkTest, HostileMcpArgumentsAndResultsStayValidJson) {
  McpToolCallItem m;
  m.server = "s";
  m.tool = "t";
  m.arguments_json = "{\"big\":1.8e308,\"bad\":\"\xff\xfe\"}";
  m.result_content_json = R"([{"type":"text","text":"x","n":-1.8e308}])";
  m.result_structured_json = "{\"a\": 1}";
  m.status = ItemStatus::kCompleted;
  EXPECT_EQ(EventToJson(ItemCompleted{Item{"item_0", m}}),
            "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"mcp_tool_call\","
            "\"server\":\"s\",\"tool\":\"t\",\"arguments\":{\"big\":\"Infinity\",\"bad\":"
            "\"\xEF\xBF\xBD\xEF\xBF\xBD\"},\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
            "\"x\",\"n\":\"-Infinity\"}],\"structured_content\":{\"a\":1}},\"error\":null,"
            "\"status\":\"completed\"}}");
  m.arguments_json = std::string(100000, '[') + std::string(100000, ']');
  std::string deep = EventToJson(ItemStarted{Item{"item_1", m}});
  EXPECT_NE(deep.find("\"arguments\":\"[[[["), std::string::npos);  // kept, as a string
}

TEST(JsonlSinkTest, AClosedStdoutEndsTheRun) {
  std::signal(SIGPIPE, SIG_IGN);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  Fd w(fds[1]);
  ::close(fds[0]);
  CancelToken cancel;
  JsonlSink sink(w.get(), &cancel);
  sink.Emit(TurnStarted{});
  EXPECT_TRUE(sink.failed());
  EXPECT_EQ(sink.error(), "cannot write events to stdout: Broken pipe");
  EXPECT_EQ(cancel.reason(), CancelReason::kOutputFailed);
}

}  // namespace
}  // namespace ae
