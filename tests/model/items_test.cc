#include "engine/model/items.h"

#include <gtest/gtest.h>

namespace ae {
namespace {

OutputItem Parse(std::string_view json) {
  auto item = ParseOutputItem(json);
  EXPECT_TRUE(item.ok()) << item.message();
  return item.ok() ? *item : OutputItem{};
}

TEST(ParseOutputItem, MessageJoinsOutputTextAndKeepsPhase) {
  OutputItem m = Parse(R"({"type": "message", "id": "msg_1", "role": "assistant",
      "content": [{"type": "output_text", "text": "Hello, ", "annotations": []},
                  {"type": "output_text", "text": "world."}], "phase": "commentary"})");
  EXPECT_EQ(m.kind, OutputItem::Kind::kMessage);
  EXPECT_EQ(m.text, "Hello, world.");
  EXPECT_EQ(m.phase, "commentary");
  EXPECT_EQ(
      m.raw_json,
      R"({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello, ","annotations":[]},{"type":"output_text","text":"world."}],"phase":"commentary"})");
}

TEST(ParseOutputItem, ReasoningJoinsSummaryWithNewlinesAndKeepsEncryptedContent) {
  OutputItem r = Parse(
      R"({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Thinking**\n\nFirst part."},{"type":"summary_text","text":"Second part."}],"encrypted_content":"gAAA=="})");
  EXPECT_EQ(r.kind, OutputItem::Kind::kReasoning);
  EXPECT_EQ(r.text, "**Thinking**\n\nFirst part.\nSecond part.");
  EXPECT_NE(r.raw_json.find(R"("encrypted_content":"gAAA==")"), std::string::npos);
}

TEST(ParseOutputItem, FunctionCall) {
  OutputItem f = Parse(
      R"({"type":"function_call","id":"fc_1","name":"exec_command","arguments":"{\"cmd\":\"echo hi\"}","call_id":"call_1"})");
  EXPECT_EQ(f.kind, OutputItem::Kind::kFunctionCall);
  EXPECT_EQ(f.name, "exec_command");
  EXPECT_EQ(f.call_id, "call_1");
  EXPECT_EQ(f.arguments, R"({"cmd":"echo hi"})");
}

TEST(ParseOutputItem, FunctionCallWithObjectArgumentsIsSerialised) {
  OutputItem f =
      Parse(R"({"type":"function_call","name":"x","arguments":{"a": [1, 2]},"call_id":"c"})");
  EXPECT_EQ(f.arguments, R"({"a":[1,2]})");
}

TEST(ParseOutputItem, CustomToolCallInputBecomesArguments) {
  OutputItem c = Parse(
      R"({"type":"custom_tool_call","call_id":"call_p1","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"})");
  EXPECT_EQ(c.kind, OutputItem::Kind::kCustomToolCall);
  EXPECT_EQ(c.name, "apply_patch");
  EXPECT_EQ(c.call_id, "call_p1");
  EXPECT_EQ(c.arguments, "*** Begin Patch\n*** End Patch\n");
}

TEST(ParseOutputItem, WebSearchQueryFromActionOrTopLevel) {
  EXPECT_EQ(Parse(R"({"type":"web_search_call","action":{"type":"search","query":"q1"}})").query,
            "q1");
  OutputItem w = Parse(R"({"type":"web_search_call","query":"q2"})");
  EXPECT_EQ(w.kind, OutputItem::Kind::kWebSearchCall);
  EXPECT_EQ(w.query, "q2");
  EXPECT_EQ(w.search_action.type, "search");
  EXPECT_EQ(w.search_action.query, "q2");
}

// codex's web_search item carries the action; kinds it does not know become "other".
TEST(ParseOutputItem, WebSearchActionKinds) {
  OutputItem open =
      Parse(R"({"type":"web_search_call","action":{"type":"open_page","url":"https://a/"}})");
  EXPECT_EQ(open.search_action.type, "open_page");
  EXPECT_EQ(open.search_action.url, "https://a/");
  OutputItem find = Parse(
      R"({"type":"web_search_call","action":{"type":"find_in_page","url":"u","pattern":"p"}})");
  EXPECT_EQ(find.search_action.type, "find_in_page");
  EXPECT_EQ(find.search_action.pattern, "p");
  OutputItem odd = Parse(R"({"type":"web_search_call","action":{"type":"teleport","url":"u"}})");
  EXPECT_EQ(odd.search_action.type, "other");
  EXPECT_EQ(odd.search_action.url, "");
}

TEST(ParseOutputItem, UnknownTypeIsKeptAsOther) {
  OutputItem o = Parse(R"({"type":"image_generation_call","result":"..."})");
  EXPECT_EQ(o.kind, OutputItem::Kind::kOther);
  EXPECT_EQ(o.raw_json, R"({"type":"image_generation_call","result":"..."})");
}

TEST(ParseOutputItem, Errors) {
  EXPECT_EQ(ParseOutputItem("[1]").message(), "output item is not a JSON object");
  EXPECT_EQ(ParseOutputItem(R"({"role":"assistant"})").message(), "output item has no \"type\"");
  EXPECT_EQ(ParseOutputItem(R"({"type":"message",)").message(),
            "output item is not valid JSON (offset 18: Missing a name for object member.)");
}

TEST(ParseOutputItem, NonAsciiSurvivesVerbatim) {
  OutputItem m = Parse(R"({"type":"message","content":[{"type":"output_text","text":"We’re ✓"}]})");
  EXPECT_EQ(m.text, "We’re ✓");
  EXPECT_EQ(m.raw_json,
            R"({"type":"message","content":[{"type":"output_text","text":"We’re ✓"}]})");
}

}  // namespace
}  // namespace ae
