#include "engine/model/request.h"
#include "engine/model/model_table.h"

#include <gtest/gtest.h>

namespace ae {
namespace {

const char kTools[] =
    R"([{"type":"function","name":"exec_command","description":"Runs a command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},)"
    R"({"type":"custom","name":"apply_patch","description":"Patch.","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},)"
    R"({"type":"web_search","external_web_access":false}])";

Prompt HistoryPrompt() {
  Prompt p;
  p.input = {
      R"({"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a test."}]})",
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]})",
      R"({"type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"E"})",
      R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Running."}],"phase":"commentary"})",
      R"({"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"})",
      R"({"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"})",
      R"({"type":"function_call_output","call_id":"call_1","output":"a\nb\n"})",
      R"({"type":"custom_tool_call_output","call_id":"call_2","output":"Success."})",
      R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]})",
  };
  p.tools_json = kTools;
  return p;
}

TEST(ResponsesRequest, MinimalBody) {
  ModelOptions o;
  o.model = "gpt-5.5";
  Prompt p;
  p.input = {R"({"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]})"};
  EXPECT_EQ(
      BuildResponsesRequest(o, p),
      R"({"model":"gpt-5.5","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],)"
      R"("tools":[],"tool_choice":"auto","parallel_tool_calls":true,"store":false,)"
      R"("include":["reasoning.encrypted_content"]})");
}

TEST(ResponsesRequest, FullBodyAsCodexOrdersIt) {
  ModelOptions o;
  o.model = "gpt-5.5";
  o.reasoning_effort = "medium";
  o.reasoning_summary = "auto";
  o.verbosity = "low";
  o.parallel_tool_calls = false;
  Prompt p = HistoryPrompt();
  p.output_schema_json = R"({"type":"object","properties":{"answer":{"type":"string"}}})";
  p.prompt_cache_key = "01a2011a-ee78-7e01-9fb9-727da523bfe7";
  std::string input;
  for (const auto& item : p.input) input += (input.empty() ? "" : ",") + item;
  EXPECT_EQ(BuildResponsesRequest(o, p),
            R"({"model":"gpt-5.5","stream":true,"input":[)" + input + R"(],"tools":)" + kTools +
                R"(,"tool_choice":"auto","parallel_tool_calls":false,)"
                R"("reasoning":{"effort":"medium","summary":"auto"},"store":false,)"
                R"("include":["reasoning.encrypted_content"],)"
                R"("prompt_cache_key":"01a2011a-ee78-7e01-9fb9-727da523bfe7",)"
                R"("text":{"verbosity":"low","format":{"type":"json_schema","strict":true,)"
                R"("schema":{"type":"object","properties":{"answer":{"type":"string"}}},)"
                R"("name":"codex_output_schema"}}})");
}

TEST(ResponsesRequest, EffortOnlyAndSchemaOnly) {
  ModelOptions o;
  o.model = "m";
  o.reasoning_effort = "high";
  Prompt p;
  p.output_schema_json = R"({"type":"object"})";
  EXPECT_EQ(BuildResponsesRequest(o, p),
            R"({"model":"m","stream":true,"input":[],"tools":[],"tool_choice":"auto",)"
            R"("parallel_tool_calls":true,"reasoning":{"effort":"high"},"store":false,)"
            R"("include":["reasoning.encrypted_content"],)"
            R"("text":{"format":{"type":"json_schema","strict":true,"schema":{"type":"object"},)"
            R"("name":"codex_output_schema"}}})");
}

TEST(ChatRequest, MapsHistoryAndTools) {
  ModelOptions o;
  o.model = "llama3";
  auto body = BuildChatRequest(o, HistoryPrompt());
  ASSERT_TRUE(body.ok()) << body.message();
  EXPECT_EQ(
      *body,
      R"({"model":"llama3","messages":[)"
      R"({"role":"system","content":"You are a test."},)"
      R"({"role":"user","content":"do it"},)"
      R"({"role":"assistant","content":"Running.","tool_calls":[)"
      R"({"id":"call_1","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\":\"ls\"}"}},)"
      R"({"id":"call_2","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n*** End Patch\\n\"}"}}]},)"
      R"({"role":"tool","content":"a\nb\n","tool_call_id":"call_1"},)"
      R"({"role":"tool","content":"Success.","tool_call_id":"call_2"},)"
      R"({"role":"assistant","content":"Done."}],)"
      R"("stream":true,"stream_options":{"include_usage":true},)"
      R"("tools":[{"type":"function","function":{"name":"exec_command","description":"Runs a command.",)"
      R"("parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}}},)"
      R"({"type":"function","function":{"name":"apply_patch","description":"Patch.",)"
      R"("parameters":{"type":"object","properties":{"input":{"type":"string","description":"The free-form input of the tool."}},"required":["input"],"additionalProperties":false}}}],)"
      R"("tool_choice":"auto","parallel_tool_calls":true})");
}

TEST(ChatRequest, ToolOnlyAssistantTurnHasNullContentAndSchemaBecomesResponseFormat) {
  ModelOptions o;
  o.model = "m";
  o.reasoning_effort = "low";
  Prompt p;
  p.input = {
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"go"},{"type":"input_image","image_url":"data:image/png;base64,AAA"}]})",
      R"({"type":"function_call","name":"f","arguments":"{}","call_id":"c1"})",
      R"({"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"out"}]})",
  };
  p.output_schema_json = R"({"type":"object"})";
  auto body = BuildChatRequest(o, p);
  ASSERT_TRUE(body.ok()) << body.message();
  EXPECT_EQ(
      *body,
      R"({"model":"m","messages":[)"
      R"({"role":"user","content":[{"type":"text","text":"go"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}}]},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},)"
      R"({"role":"tool","content":"out","tool_call_id":"c1"}],)"
      R"("stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low",)"
      R"("response_format":{"type":"json_schema","json_schema":{"name":"codex_output_schema","strict":true,"schema":{"type":"object"}}}})");
}

TEST(ChatRequest, MalformedHistoryItemIsAnError) {
  ModelOptions o;
  Prompt p;
  p.input = {R"({"type":"message")", "{}"};
  auto body = BuildChatRequest(o, p);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.message(),
            "history item 0 is not valid JSON (offset 17: Missing a comma or '}' after an object "
            "member.)");
}

}  // namespace
}  // namespace ae

namespace ae {
namespace {

constexpr const char* kUser =
    R"({"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]})";
constexpr const char* kAnswerItem =
    R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]})";
constexpr const char* kCall =
    R"({"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c1"})";

TEST(ReplayableItems, ReasoningNeedsEncryptedContentAndAFollowingOutputItem) {
  const std::string enc =
      R"({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"})";
  const std::string by_id = R"({"type":"reasoning","id":"rs_2","summary":[]})";
  // A user text that merely mentions the type is not a reasoning item.
  const std::string mention =
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"\"type\":\"reasoning\""}]})";
  std::vector<std::string> input = {kUser, enc,     kCall, by_id, kAnswerItem, enc,
                                    kUser, mention, enc,   enc,   kAnswerItem, enc};
  EXPECT_EQ(ReplayableItems(input), (std::vector<bool>{true, true, true, false, true, false, true,
                                                       true, true, true, true, false}));
}

TEST(ResponsesRequest, DropsReasoningThatCannotBeReplayed) {
  ModelOptions o;
  o.model = "gpt-5.5";
  Prompt p;
  p.input = {kUser, R"({"type":"reasoning","id":"rs_2","summary":[]})", kAnswerItem};
  EXPECT_EQ(BuildResponsesRequest(o, p).find("rs_2"), std::string::npos);
}

TEST(ResponsesRequest, NonReasoningModelsGetNeitherReasoningNorInclude) {
  ModelOptions o;
  o.model = "gpt-4.1";
  o.reasoning = false;
  Prompt p;
  p.input = {kUser};
  const std::string body = BuildResponsesRequest(o, p);
  EXPECT_EQ(body.find("include"), std::string::npos) << body;
  EXPECT_EQ(body.find("reasoning"), std::string::npos) << body;
}

TEST(ModelTable, FamiliesPrefixesAndFallback) {
  ModelInfo m = LookupModel("gpt-5.5");
  EXPECT_TRUE(m.known);
  EXPECT_EQ(m.context_window, 272000);
  EXPECT_EQ(m.auto_compact_token_limit, 244800);
  EXPECT_EQ(m.default_reasoning_effort, "medium");
  EXPECT_EQ(m.default_reasoning_summary, "auto");
  EXPECT_EQ(m.default_verbosity, "low");
  ModelInfo codex = LookupModel("openai/gpt-5.1-codex-max");
  EXPECT_EQ(codex.slug, "gpt-5.1-codex");
  EXPECT_FALSE(codex.supports_verbosity);
  EXPECT_FALSE(LookupModel("gpt-4o-mini").reasoning);
  ModelInfo unknown = LookupModel("mystery");
  EXPECT_FALSE(unknown.known);
  EXPECT_TRUE(unknown.reasoning);
  EXPECT_EQ(unknown.default_reasoning_summary, "auto");
  EXPECT_EQ(unknown.default_reasoning_effort, "");
  EXPECT_EQ(UnknownModelWarning("mystery"),
            "Model metadata for `mystery` not found. Defaulting to fallback metadata; this can "
            "degrade performance and cause issues.");
}

}  // namespace
}  // namespace ae
