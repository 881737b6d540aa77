#include "engine/model/scripted.h"

#include <gtest/gtest.h>

#include "tests/model/test_util.h"

namespace ae {
namespace {

const char kScript[] = R"({"turns":[
  {"items":[
     {"type":"reasoning","summary":["Looking at the repo","Second part"]},
     {"type":"message","text":"Running the tests first.","phase":"commentary"},
     {"type":"function_call","name":"exec_command","arguments":{"cmd":"ls"}},
     {"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"pwd\"}","call_id":"mine"},
     {"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"},
     {"type":"web_search_call","query":"rapidjson raw value"}],
   "usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":20,"reasoning_output_tokens":5}},
  {"items":[{"type":"message","text":"Done."}]},
  {"fail":"simulated failure"}
]})";

ProviderInfo Scripted(const std::string& path) {
  ProviderInfo p;
  p.id = "demo";
  p.wire_api = "scripted";
  p.script = path;
  return p;
}

TEST(ScriptedProvider, ReplaysTurnsInOrder) {
  const std::string path = WriteTempFile("script.json", kScript);
  auto client = MakeModelClient(Scripted(path), ModelOptions{});
  ASSERT_TRUE(client.ok()) << client.message();
  CancelToken cancel;
  RecordingObserver obs;

  auto r1 = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_TRUE(r1.ok()) << r1.message();
  ASSERT_EQ(r1->items.size(), 6u);
  const auto& items = r1->items;
  EXPECT_EQ(items[0].kind, OutputItem::Kind::kReasoning);
  EXPECT_EQ(items[0].text, "Looking at the repo\nSecond part");
  EXPECT_EQ(
      items[0].raw_json,
      R"({"type":"reasoning","summary":[{"type":"summary_text","text":"Looking at the repo"},{"type":"summary_text","text":"Second part"}]})");
  EXPECT_EQ(items[1].kind, OutputItem::Kind::kMessage);
  EXPECT_EQ(items[1].phase, "commentary");
  EXPECT_EQ(
      items[1].raw_json,
      R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Running the tests first."}],"phase":"commentary"})");
  EXPECT_EQ(
      items[2].raw_json,
      R"({"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1_2"})");
  EXPECT_EQ(items[2].call_id, "call_1_2");
  EXPECT_EQ(items[3].arguments, R"({"cmd":"pwd"})");
  EXPECT_EQ(items[3].call_id, "mine");
  EXPECT_EQ(items[4].kind, OutputItem::Kind::kCustomToolCall);
  EXPECT_EQ(
      items[4].raw_json,
      R"({"type":"custom_tool_call","call_id":"call_1_4","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"})");
  EXPECT_EQ(items[4].arguments, "*** Begin Patch\n*** End Patch\n");
  EXPECT_EQ(items[5].kind, OutputItem::Kind::kWebSearchCall);
  EXPECT_EQ(items[5].query, "rapidjson raw value");
  EXPECT_EQ(
      items[5].raw_json,
      R"({"type":"web_search_call","status":"completed","action":{"type":"search","query":"rapidjson raw value"}})");
  EXPECT_EQ(r1->usage.input_tokens, 100);
  EXPECT_EQ(r1->usage.cached_input_tokens, 10);
  EXPECT_EQ(r1->usage.output_tokens, 20);
  EXPECT_EQ(r1->usage.reasoning_output_tokens, 5);
  EXPECT_EQ(obs.deltas, std::vector<std::string>{"Running the tests first."});
  EXPECT_EQ(obs.tool_calls_ahead, 3);  // two function calls and a custom tool call

  auto r2 = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->items.size(), 1u);
  EXPECT_EQ(r2->items[0].text, "Done.");
  EXPECT_EQ(r2->usage.input_tokens, 0);
  EXPECT_EQ(obs.tool_calls_ahead, 3);  // a message-only turn announces none

  auto r3 = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.message(), "simulated failure");

  auto r4 = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_FALSE(r4.ok());
  EXPECT_EQ(r4.message(),
            "scripted provider: no turn left for request 4 (script has 3 turns): " + path);
  EXPECT_TRUE(obs.retries.empty());
}

TEST(ScriptedProvider, NeedsNoKey) {
  ProviderInfo p = Scripted(WriteTempFile("s.json", R"({"turns":[]})"));
  p.env_key = "AE_TEST_SURELY_UNSET_KEY";
  EXPECT_TRUE(MakeModelClient(p, ModelOptions{}).ok());
}

TEST(ScriptedProvider, UnreadableScript) {
  auto client = MakeModelClient(Scripted("/nonexistent/turns.json"), ModelOptions{});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.message(),
            "scripted provider: cannot read /nonexistent/turns.json: No such file or directory");
}

TEST(ScriptedProvider, NoScriptConfigured) {
  auto client = MakeModelClient(Scripted(""), ModelOptions{});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.message(),
            "scripted provider `demo` has no script: set model_providers.demo.script to a "
            "turns file");
}

TEST(ScriptedProvider, ParseErrorNamesPathAndOffset) {
  const std::string path = WriteTempFile("bad.json", "{\"turns\": [ {\"items\": [} ]}");
  auto client = MakeModelClient(Scripted(path), ModelOptions{});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.message(),
            "scripted provider: cannot parse " + path + ": offset 23: Invalid value.");
}

TEST(ScriptedProvider, ShapeErrorsNameTurnAndItem) {
  struct Case {
    std::string script, error;
  };
  const std::vector<Case> cases = {
      {R"({"turn":[]})", "expected an object with a \"turns\" array"},
      {R"({"turns":[{"items":[{"type":"message","text":"ok"}]},{"oops":1}]})",
       "turn 2: expected an \"items\" array or \"fail\""},
      {R"({"turns":[{"items":[{"type":"message"}]}]})",
       "turn 1: item 0: a message item needs a string \"text\""},
      {R"({"turns":[{"items":[{"type":"message","text":"a"},{"type":"shell_call"}]}]})",
       "turn 1: item 1: unknown item type `shell_call` (expected message, reasoning, "
       "function_call, custom_tool_call or web_search_call)"},
      {R"({"turns":[{"items":[{"type":"function_call","arguments":{}}]}]})",
       "turn 1: item 0: a function_call item needs a string \"name\""},
      {R"({"turns":[{"fail":3}]})", "turn 1: \"fail\" must be a string"},
  };
  for (const auto& c : cases) {
    const std::string path = WriteTempFile("shape.json", c.script);
    auto client = MakeModelClient(Scripted(path), ModelOptions{});
    ASSERT_FALSE(client.ok()) << c.script;
    EXPECT_EQ(client.message(), "scripted provider: " + path + ": " + c.error);
  }
}

TEST(ScriptedProvider, CancelledRequestFails) {
  auto client = MakeModelClient(Scripted(WriteTempFile("s.json", kScript)), ModelOptions{});
  ASSERT_TRUE(client.ok());
  CancelToken cancel;
  cancel.Cancel(CancelReason::kSigint);
  RecordingObserver obs;
  auto r = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "model request cancelled");
}

// A summarisation request is answered without consuming the script's next turn.
TEST(ScriptedProvider, ASummarisationRequestConsumesNoTurn) {
  auto client = MakeModelClient(Scripted(WriteTempFile("s.json", kScript)), ModelOptions{});
  ASSERT_TRUE(client.ok());
  CancelToken cancel;
  RecordingObserver obs;
  Prompt summarise;
  summarise.input = {"{}", "{}", "{}"};
  summarise.summarize = true;
  auto s = (*client)->Stream(summarise, obs, cancel);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(s->items.size(), 1u);
  EXPECT_EQ(s->items[0].text, "Summary of the work so far (3 history items).");
  EXPECT_EQ(s->items[0].raw_json,
            R"({"type":"message","role":"assistant","content":[{"type":"output_text",)"
            R"("text":"Summary of the work so far (3 history items)."}]})");
  auto r1 = (*client)->Stream(Prompt{}, obs, cancel);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->items.size(), 6u);  // still the script's first turn
}

}  // namespace
}  // namespace ae
