// The per-wire stream decoders on hand-made event sequences, including shapes real servers
// send that the test model server does not.
#include <gtest/gtest.h>

#include "engine/model/chat.h"
#include "engine/model/responses.h"
#include "tests/model/test_util.h"

namespace ae {
namespace {

Status Feed(StreamDecoder& d, const std::string& data, bool* fatal = nullptr) {
  bool ignored = false;
  SseEvent e;
  e.data = data;
  return d.OnEvent(e, fatal ? fatal : &ignored);
}

TEST(ResponsesDecoder, SkipsUnknownEventsAndCollectsItems) {
  RecordingObserver obs;
  auto d = MakeResponsesDecoder(obs);
  ASSERT_TRUE(Feed(*d, R"({"type":"response.created","response":{"id":"resp_9"}})").ok());
  ASSERT_TRUE(Feed(*d, R"({"type":"response.in_progress"})").ok());
  ASSERT_TRUE(Feed(*d, R"({"type":"response.reasoning_summary_text.delta","delta":"x"})").ok());
  ASSERT_TRUE(Feed(*d, R"({"type":"response.output_text.delta","delta":"He"})").ok());
  ASSERT_TRUE(Feed(*d, R"({"type":"response.output_text.delta","delta":"llo"})").ok());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"type":"response.output_item.done","item":{"type":"message","content":[{"type":"output_text","text":"Hello"}]}})")
          .ok());
  EXPECT_FALSE(d->complete());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"type":"response.completed","response":{"usage":{"input_tokens":5,"input_tokens_details":null,"output_tokens":2}}})")
          .ok());
  EXPECT_TRUE(d->complete());
  ModelResponse r = d->TakeResponse();
  EXPECT_EQ(r.id, "resp_9");
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0].text, "Hello");
  EXPECT_EQ(r.usage.input_tokens, 5);
  EXPECT_EQ(r.usage.cached_input_tokens, 0);
  EXPECT_EQ(r.usage.output_tokens, 2);
  EXPECT_EQ(obs.deltas, (std::vector<std::string>{"He", "llo"}));
  EXPECT_EQ(obs.tool_calls_ahead, 0);  // a message is no tool call
}

// A tool call is announced when its item is added, before its arguments stream, and again
// when it is done (for servers that send no .added); messages, reasoning and web searches
// announce nothing.
TEST(ResponsesDecoder, AnnouncesAToolCallBeforeItsArgumentsArrive) {
  struct Step {
    const char* event;
    int announced;  // tool calls announced once the event is read
  };
  const Step steps[] = {
      {R"({"type":"response.output_item.added","item":{"type":"reasoning"}})", 0},
      {R"({"type":"response.output_item.added","item":{"type":"message"}})", 0},
      {R"({"type":"response.output_item.added","item":{"type":"web_search_call"}})", 0},
      {R"({"type":"response.output_item.added"})", 0},  // no item: no call
      {R"({"type":"response.output_item.added","item":{"type":"function_call","name":"exec_command","arguments":"","call_id":"c1"}})",
       1},
      {R"({"type":"response.function_call_arguments.delta","delta":"{\"cmd\":"})", 1},
      {R"({"type":"response.output_item.done","item":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}})",
       2},
      {R"({"type":"response.output_item.added","item":{"type":"custom_tool_call","name":"apply_patch","input":"","call_id":"c2"}})",
       3},
  };
  RecordingObserver obs;
  auto d = MakeResponsesDecoder(obs);
  for (const Step& step : steps) {
    ASSERT_TRUE(Feed(*d, step.event).ok()) << step.event;
    EXPECT_EQ(obs.tool_calls_ahead, step.announced) << step.event;
  }
}

TEST(ResponsesDecoder, TypeFromEventNameWhenDataHasNone) {
  RecordingObserver obs;
  auto d = MakeResponsesDecoder(obs);
  SseEvent e;
  e.event = "response.completed";
  e.data = R"({"response":{}})";
  bool fatal = false;
  ASSERT_TRUE(d->OnEvent(e, &fatal).ok());
  EXPECT_TRUE(d->complete());
}

TEST(ResponsesDecoder, FailuresAndWhichAreFinal) {
  RecordingObserver obs;
  bool fatal = false;
  auto d = MakeResponsesDecoder(obs);
  Status s = Feed(
      *d,
      R"({"type":"response.failed","response":{"error":{"code":"server_error","message":"The model failed."}}})",
      &fatal);
  EXPECT_EQ(s.message(), "The model failed.");
  EXPECT_FALSE(fatal);

  d = MakeResponsesDecoder(obs);
  s = Feed(
      *d,
      R"({"type":"response.failed","response":{"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window."}}})",
      &fatal);
  EXPECT_EQ(s.message(),
            "Your input exceeds the context window of this model. Please adjust your input and "
            "try again. (Your input exceeds the context window.)");
  EXPECT_TRUE(IsContextWindowExceeded(s.error()));
  EXPECT_TRUE(fatal);

  d = MakeResponsesDecoder(obs);
  EXPECT_EQ(Feed(*d, R"({"type":"error","code":"x","message":"overloaded"})").message(),
            "overloaded");
  d = MakeResponsesDecoder(obs);
  EXPECT_EQ(
      Feed(
          *d,
          R"({"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}})")
          .message(),
      "Incomplete response returned, reason: max_output_tokens");
  d = MakeResponsesDecoder(obs);
  EXPECT_EQ(Feed(*d, R"({"type":"response.output_item.done"})").message(),
            "response.output_item.done without an item");
  // An item without a type is skipped with a warning, not a failure of the response.
  EXPECT_EQ(Feed(*d, R"({"type":"response.output_item.done","item":{"id":"x"}})").message(), "");
  EXPECT_EQ(Feed(*d, R"([1,2])").message(),
            "malformed JSON in server-sent event (offset 0: not an object)");
  ModelResponse taken = d->TakeResponse();
  EXPECT_TRUE(taken.items.empty());
  EXPECT_EQ(taken.warnings, std::vector<std::string>{std::string(kUntypedItemWarning)});
}

TEST(ChatDecoder, AssemblesToolCallsFromDeltas) {
  RecordingObserver obs;
  auto d = MakeChatDecoder(obs);
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"think "}}]})")
          .ok());
  ASSERT_TRUE(Feed(*d, R"({"choices":[{"delta":{"reasoning":"more"}}]})").ok());
  ASSERT_TRUE(Feed(*d, R"({"choices":[{"delta":{"content":"Let me look."}}]})").ok());
  // Call 1 streamed in pieces; call 0 with its name repeated whole in every chunk.
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"exec_","arguments":"{\"cmd\""}}]}}]})")
          .ok());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"update_plan","arguments":"{}"}}]}}]})")
          .ok());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"command","arguments":":\"ls\"}"}}]}}]})")
          .ok());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"update_plan"}}]}}]})")
          .ok());
  ASSERT_TRUE(Feed(*d, R"({"choices":[{"delta":{},"finish_reason":"tool_calls"}]})").ok());
  EXPECT_FALSE(d->complete());
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":1}}})")
          .ok());
  ASSERT_TRUE(Feed(*d, "[DONE]").ok());
  EXPECT_TRUE(d->complete());
  ModelResponse r = d->TakeResponse();
  EXPECT_EQ(r.id, "c1");
  ASSERT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.items[0].raw_json,
            R"({"type":"reasoning","summary":[{"type":"summary_text","text":"think more"}]})");
  EXPECT_EQ(
      r.items[1].raw_json,
      R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]})");
  EXPECT_EQ(r.items[2].raw_json,
            R"({"type":"function_call","name":"update_plan","arguments":"{}","call_id":"call_a"})");
  EXPECT_EQ(
      r.items[3].raw_json,
      R"({"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_b"})");
  EXPECT_EQ(r.usage.input_tokens, 11);
  EXPECT_EQ(r.usage.cached_input_tokens, 3);
  EXPECT_EQ(r.usage.output_tokens, 4);
  EXPECT_EQ(r.usage.reasoning_output_tokens, 1);
  EXPECT_EQ(obs.deltas, std::vector<std::string>{"Let me look."});
  EXPECT_EQ(obs.tool_calls_ahead, 4);  // once per chunk that carries a call
}

TEST(ChatDecoder, FinishWithoutDoneCompletesOnlyAtACleanEnd) {
  RecordingObserver obs;
  auto d = MakeChatDecoder(obs);
  ASSERT_TRUE(Feed(*d, R"({"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]})").ok());
  EXPECT_FALSE(d->complete());
  d->OnCleanEnd();
  EXPECT_TRUE(d->complete());

  auto unfinished = MakeChatDecoder(obs);
  ASSERT_TRUE(Feed(*unfinished, R"({"choices":[{"delta":{"content":"hi"}}]})").ok());
  unfinished->OnCleanEnd();
  EXPECT_FALSE(unfinished->complete());
  EXPECT_EQ(unfinished->incomplete_reason(), "stream closed before [DONE]");
}

TEST(ChatDecoder, MissingIdsGetPositionalOnesAndErrorsFail) {
  RecordingObserver obs;
  auto d = MakeChatDecoder(obs);
  ASSERT_TRUE(
      Feed(
          *d,
          R"({"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}}]})")
          .ok());
  ASSERT_TRUE(Feed(*d, "[DONE]").ok());
  ModelResponse r = d->TakeResponse();
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0].call_id, "call_0");
  EXPECT_EQ(r.items[0].arguments, R"({"a":1})");

  auto e = MakeChatDecoder(obs);
  EXPECT_EQ(Feed(*e, R"({"error":{"message":"model not found"}})").message(), "model not found");
  EXPECT_EQ(Feed(*e, R"({"choices":[{"delta":)").message(),
            "malformed JSON in server-sent event (offset 21: Invalid value.)");
}

}  // namespace
}  // namespace ae
