// The turn loop against a scripted fake model and a fake tool: the event sequence is
// asserted as the exact JSONL a consumer would read.
#include "engine/turn.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "engine/compaction.h"
#include "engine/exec/orchestrator.h"
#include "engine/history.h"
#include "outputs/jsonl_sink.h"
#include "tests/support/fake_model_client.h"
#include "tests/support/jsonl_recorder.h"
#include "tests/support/turn_lines.h"

namespace ae {
namespace {

using RecordingSink = test::JsonlRecorder;
using FakeClient = test::FakeModelClient;
using test::Call;
using test::Message;
using test::Response;

// Echoes its arguments back; counts calls. With a warning, answers it for the model too (as
// exec_command near its session bound).
class EchoTool : public ToolHandler {
 public:
  explicit EchoTool(std::string name = "echo", std::string warning = "")
      : name_(std::move(name)), warning_(std::move(warning)) {}
  std::string name() const override { return name_; }
  std::string spec_json() const override {
    return R"({"type":"function","name":")" + name_ + R"(","parameters":{"type":"object"}})";
  }
  bool parallel_safe() const override { return true; }
  ToolResult Handle(const ToolCall& call, ToolEnv&) override {
    ++calls;
    return ToolResult{call.call_id, "echo:" + call.input, true, false, warning_};
  }
  int calls = 0;

 private:
  std::string name_, warning_;
};

class TurnTest : public ::testing::Test {
 protected:
  TurnTest() : emitter_({&sink_}), orchestrator_(turn_, nullptr) {
    turn_.cwd = "/tmp";
    turn_.sandbox.mode = sandbox::Mode::kDangerFullAccess;
    auto tool = std::make_unique<EchoTool>();
    echo_ = tool.get();
    router_.Register(std::move(tool));
    history_ = {MessageInputItem("user", "hi")};
  }

  TurnResult Run(int max_turns = 0, std::optional<std::string> output_schema = std::nullopt,
                 const std::function<void(TurnDeps&)>& configure = {}) {
    client_.clock_ms = &now_ms_;
    ResultRecorder record([this] { return now_ms_; });
    TurnDeps deps{turn_,    client_, router_,       orchestrator_,
                  emitter_, cancel_, output_schema, max_turns};
    deps.record = &record;
    if (configure) configure(deps);
    return RunTurn(deps, history_);
  }

  // A resumed thread (an exchange, then `prompt`) whose last request was counted past the
  // auto-compact limit; `new_input_items`: how much of its end is this run's new input.
  TurnResult RunResumedPastTheLimit(const std::string& prompt, size_t new_input_items) {
    history_ = {MessageInputItem("user", "earlier"), MessageInputItem("assistant", "ok"),
                MessageInputItem("user", prompt)};
    client_.responses.push_back(Response({Message("SUMMARY")}, Usage{30, 0, 0, 3, 0}));
    client_.responses.push_back(Response({Message("Done.")}, Usage{20, 0, 0, 2, 0}));
    return Run(0, std::nullopt, [new_input_items](TurnDeps& d) {
      d.auto_compact_token_limit = 100;
      d.resumed_last_usage = Usage{180, 0, 0, 20, 0};
      d.resumed_counted_items = 2;
      d.new_input_items = new_input_items;
    });
  }

  int64_t now_ms_ = 5000;

  TurnContext turn_;
  RecordingSink sink_;
  Emitter emitter_;
  Orchestrator orchestrator_;
  ToolRouter router_;
  EchoTool* echo_ = nullptr;
  FakeClient client_;
  CancelToken cancel_;
  std::vector<std::string> history_;
};

TEST_F(TurnTest, PlainAnswer) {
  client_.responses.push_back(Response({Message("Hello.")}));
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kCompleted);
  EXPECT_EQ(r.final_message, "Hello.");
  EXPECT_EQ(
      sink_.lines,
      (std::vector<std::string>{
          R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello."}})",
          test::TurnCompletedLine({10, 2, 0, 5, 1}, {10, 2, 0, 5, 1}, 1, "700")}));
  ASSERT_EQ(client_.prompts.size(), 1u);
  EXPECT_EQ(client_.prompts[0].tools_json,
            R"([{"type":"function","name":"echo","parameters":{"type":"object"}}])");
}

TEST_F(TurnTest, ToolOutputGoesBackInCallOrderAndUsageIsSummed) {
  client_.responses.push_back(
      Response({Message("Checking."), Call("echo", "{\"a\":1}", "c1"), Call("nope", "{}", "c2")}));
  client_.responses.push_back(Response({Message("Done.")}));
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kCompleted);
  EXPECT_EQ(echo_->calls, 1);
  ASSERT_EQ(client_.prompts.size(), 2u);
  const std::vector<std::string>& second = client_.prompts[1].input;
  ASSERT_EQ(second.size(), 6u);  // prompt, message, 2 calls, 2 outputs
  EXPECT_EQ(second[4],
            R"({"type":"function_call_output","call_id":"c1","output":"echo:{\"a\":1}"})");
  EXPECT_EQ(second[5],
            R"({"type":"function_call_output","call_id":"c2","output":"unsupported call: nope"})");
  EXPECT_EQ(r.usage, (Usage{20, 4, 0, 10, 2}));
  EXPECT_EQ(sink_.lines.back(),
            test::TurnCompletedLine({20, 4, 0, 10, 2}, {10, 2, 0, 5, 1}, 2, "1400"));
}

// The client's tool-call hint reaches the session (which starts its search for nested
// repositories there) before the calls run; a response without a call gives none.
TEST_F(TurnTest, AToolCallIsAnnouncedToTheSessionBeforeItRuns) {
  client_.responses.push_back(Response({Message("Checking."), Call("echo", "{}", "c1")}));
  client_.responses.push_back(Response({Message("Done.")}));
  std::vector<std::string> seen;
  TurnResult r = Run(0, std::nullopt, [&](TurnDeps& deps) {
    deps.tool_call_ahead = [&] { seen.emplace_back("ahead"); };
    deps.before_tools = [&] {
      seen.emplace_back("before tools, echo ran " + std::to_string(echo_->calls));
      return Status{};
    };
  });
  EXPECT_EQ(r.outcome(), SessionOutcome::kCompleted);
  EXPECT_EQ(seen, (std::vector<std::string>{"ahead", "before tools, echo ran 0"}));
  EXPECT_EQ(echo_->calls, 1);
}

// A tool's model warning follows the whole batch's outputs as a user message, so every call
// still meets its output first.
TEST_F(TurnTest, ModelWarningsFollowTheBatchsOutputs) {
  router_.Register(std::make_unique<EchoTool>("warn", "too many sessions"));
  client_.responses.push_back(
      Response({Call("warn", "{}", "c1"), Call("echo", "{\"a\":1}", "c2")}));
  client_.responses.push_back(Response({Message("Done.")}));
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kCompleted);
  ASSERT_EQ(client_.prompts.size(), 2u);
  const std::vector<std::string>& second = client_.prompts[1].input;
  ASSERT_EQ(second.size(), 6u);  // prompt, 2 calls, 2 outputs, the warning
  EXPECT_EQ(second[3], R"({"type":"function_call_output","call_id":"c1","output":"echo:{}"})");
  EXPECT_EQ(second[4],
            R"({"type":"function_call_output","call_id":"c2","output":"echo:{\"a\":1}"})");
  EXPECT_EQ(
      second[5],
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"Warning: too many sessions"}]})");
}

TEST_F(TurnTest, ModelErrorEndsWithErrorThenTurnFailed) {
  client_.retries_before_each = 2;
  client_.responses.push_back(MakeError("stream disconnected before completion: boom"));
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kFailed);
  EXPECT_EQ(r.error, "stream disconnected before completion: boom");
  EXPECT_EQ(sink_.lines,
            (std::vector<std::string>{
                R"j({"type":"error","message":"Reconnecting... 1/5 (idle timeout)"})j",
                R"j({"type":"error","message":"Reconnecting... 2/5 (idle timeout)"})j",
                R"({"type":"error","message":"stream disconnected before completion: boom"})",
                test::TurnFailedLine("stream disconnected before completion: boom", "model_error",
                                     {}, {}, 1, "700")}));
  EXPECT_EQ(r.code, ErrorCode::kModelError);
}

TEST_F(TurnTest, MaxTurnsStopsAModelThatKeepsCallingTools) {
  client_.responses.push_back(Response({Call("echo", "{}", "c1")}));
  client_.responses.push_back(Response({Call("echo", "{}", "c2")}));
  TurnResult r = Run(/*max_turns=*/1);
  EXPECT_EQ(r.outcome(), SessionOutcome::kLimitReached);
  EXPECT_EQ(r.error,
            "max turns reached: the model asked for more work after 1 request (--max-turns 1)");
  EXPECT_EQ(client_.prompts.size(), 1u);
  EXPECT_EQ(r.code, ErrorCode::kMaxTurns);
  EXPECT_EQ(sink_.lines.back(),
            test::TurnFailedLine(
                "max turns reached: the model asked for more work after 1 request (--max-turns 1)",
                "max_turns", {10, 2, 0, 5, 1}, {10, 2, 0, 5, 1}, 1, "700"));
}

TEST_F(TurnTest, CancellationBecomesInterrupted) {
  cancel_.Cancel(CancelReason::kSigint);
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kInterrupted);
  EXPECT_EQ(client_.prompts.size(), 0u);
  EXPECT_EQ(r.code, ErrorCode::kInterrupted);
  EXPECT_EQ(sink_.lines.back().rfind(
                R"({"type":"turn.failed","error":{"message":"interrupted by SIGINT",)"
                R"("code":"interrupted"},)",
                0),
            0u)
      << sink_.lines.back();
}

TEST_F(TurnTest, TimeoutIsALimit) {
  cancel_.Cancel(CancelReason::kTimeout);
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kLimitReached);
  EXPECT_EQ(r.error, "the run exceeded its --timeout");
  EXPECT_EQ(r.code, ErrorCode::kTimeout);
}

// stdout's reader went away: the turn.failed that still reaches the other sinks (an
// --events-file) carries a code the schema knows, not an empty one.
TEST_F(TurnTest, AnUnwritableStdoutIsOutputUnwritable) {
  cancel_.Cancel(CancelReason::kOutputFailed);
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kOutputFailed);
  EXPECT_EQ(r.code, ErrorCode::kOutputUnwritable);
  EXPECT_EQ(sink_.lines.back().rfind(
                R"j({"type":"turn.failed","error":{"message":"stdout cannot be written )j"
                R"j((its reader is gone)","code":"output_unwritable"},)j",
                0),
            0u)
      << sink_.lines.back();
}

// The client classifies (Error::code); the message text is never read, so a message that
// only mentions a status or a service code stays a model_error.
TEST_F(TurnTest, ModelErrorsAreClassifiedByTheClientsCodeNotByTheirText) {
  EXPECT_EQ(ClassifyModelError(MakeError("slow down", "rate_limited")), ErrorCode::kRateLimited);
  EXPECT_EQ(ClassifyModelError(MakeError("no key", "auth")), ErrorCode::kAuth);
  EXPECT_EQ(ClassifyModelError(MakeError("too long", "context_length")), ErrorCode::kContextLength);
  EXPECT_EQ(ClassifyModelError(MakeError("exceeded retry limit, last status: 429 Too Many "
                                         "Requests (insufficient_quota, 401 Unauthorized, "
                                         "context_length_exceeded)")),
            ErrorCode::kModelError);
  EXPECT_EQ(ClassifyModelError(MakeError("x", "no_such_code")), ErrorCode::kModelError);
  EXPECT_EQ(ClassifyModelError(MakeError("x", "")), ErrorCode::kModelError);
  for (ErrorCode code : kAllErrorCodes) EXPECT_EQ(ErrorCodeFromName(ErrorCodeName(code)), code);
  EXPECT_EQ(ErrorCodeFromName(""), ErrorCode::kNone);
}

constexpr const char* kAnswerSchema =
    R"({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],)"
    R"("additionalProperties":false})";

TEST_F(TurnTest, AnAnswerThatMatchesTheOutputSchemaCompletes) {
  client_.responses.push_back(Response({Message("x")}));
  client_.responses.back()->items[0].text = R"({"answer":"42"})";
  TurnResult r = Run(0, kAnswerSchema);
  EXPECT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  EXPECT_EQ(r.final_message, R"({"answer":"42"})");
}

TEST_F(TurnTest, AnAnswerThatDoesNotMatchTheOutputSchemaFailsTheTurn) {
  client_.responses.push_back(Response({Message("x")}));
  client_.responses.back()->items[0].text = R"({"answer":42})";
  TurnResult r = Run(0, kAnswerSchema);
  EXPECT_EQ(r.outcome(), SessionOutcome::kFailed);
  EXPECT_EQ(r.code, ErrorCode::kOutputSchema);
  EXPECT_EQ(r.error,
            "the final answer does not match --output-schema: #/answer: \"type\" failed (schema "
            "#/properties/answer)");
  EXPECT_EQ(sink_.lines[sink_.lines.size() - 2],
            R"({"type":"error","message":"the final answer does not match --output-schema: )"
            R"j(#/answer: \"type\" failed (schema #/properties/answer)"})j");
  EXPECT_NE(sink_.lines.back().find(R"("code":"output_schema")"), std::string::npos);
}

TEST_F(TurnTest, AnAnswerThatIsNotJsonFailsTheTurn) {
  client_.responses.push_back(Response({Message("The answer is 42.")}));
  TurnResult r = Run(0, kAnswerSchema);
  EXPECT_EQ(r.code, ErrorCode::kOutputSchema);
  EXPECT_EQ(r.error,
            "the final answer is not JSON (Invalid value. at byte offset 0), so it does not match "
            "--output-schema");
}

TEST_F(TurnTest, EmptyReasoningIsDroppedAndWebSearchReported) {
  OutputItem reasoning;
  reasoning.kind = OutputItem::Kind::kReasoning;
  reasoning.raw_json = R"({"type":"reasoning","summary":[]})";
  OutputItem search;
  search.kind = OutputItem::Kind::kWebSearchCall;
  search.query = "landlock";
  search.search_action = {"search", "landlock", "", ""};
  search.raw_json = R"({"type":"web_search_call"})";
  client_.responses.push_back(Response({reasoning, search, Message("ok")}));
  TurnResult r = Run();
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted);
  EXPECT_EQ(
      sink_.lines[0],
      R"({"type":"item.started","item":{"id":"item_0","type":"web_search","query":"landlock",)"
      R"("action":{"type":"search","query":"landlock"}}})");
  EXPECT_EQ(sink_.lines[1],
            R"({"type":"item.completed","item":{"id":"item_0","type":"web_search",)"
            R"("query":"landlock","action":{"type":"search","query":"landlock"}}})");
  EXPECT_EQ(
      sink_.lines[2],
      R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"ok"}})");
}

// The history is compacted before the request that would reach the limit, with a
// summarisation request that offers no tools, and the turn goes on from the compacted history.
TEST_F(TurnTest, TheHistoryIsCompactedBeforeTheRequestThatWouldReachTheLimit) {
  client_.responses.push_back(Response({Call("echo", "{}", "c1")}, Usage{200, 0, 0, 10, 0}));
  client_.responses.push_back(Response({Message("SUMMARY")}, Usage{30, 0, 0, 3, 0}));
  client_.responses.push_back(Response({Message("Done.")}, Usage{20, 0, 0, 2, 0}));
  TurnResult r = Run(0, std::nullopt, [](TurnDeps& d) { d.auto_compact_token_limit = 100; });
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 3u);
  const Prompt& summarise = client_.prompts[1];
  EXPECT_EQ(summarise.tools_json, "[]");
  ASSERT_EQ(summarise.input.size(), 4u);  // prompt, call, output, compaction prompt
  EXPECT_EQ(summarise.input.back(), MessageInputItem("user", kCompactionPrompt));
  const std::vector<std::string> compacted = {
      MessageInputItem("user", "hi"),
      MessageInputItem("user", std::string(kSummaryPrefix) + "\nSUMMARY")};
  EXPECT_EQ(client_.prompts[2].input, compacted);
  // 210 counted by the service, plus the tool output appended since.
  const int64_t before =
      210 + EstimateTokens(std::string_view(
                R"({"type":"function_call_output","call_id":"c1","output":"echo:{}"})"));
  EXPECT_EQ(sink_.lines[0], fmt::format(R"({{"type":"item.completed","item":{{"id":"item_0",)"
                                        R"("type":"context_compaction","tokens_before":{},)"
                                        R"("tokens_after":{}}}}})",
                                        before, EstimateTokens(compacted)));
  EXPECT_EQ(r.usage, (Usage{250, 0, 0, 15, 0}));  // the summarisation request counts too
  EXPECT_EQ(r.stats.requests, 3);
}

// A resumed thread whose last request was counted past the limit is compacted before its
// first request, as codex does: the size carries over through the session file.
TEST_F(TurnTest, AResumedThreadPastTheLimitIsCompactedFirst) {
  TurnResult r = RunResumedPastTheLimit("more", 0);
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 2u);
  EXPECT_EQ(client_.prompts[0].tools_json, "[]");  // the summarisation request came first
  EXPECT_EQ(sink_.lines[0].find(R"({"type":"item.completed","item":{"id":"item_0",)"
                                R"("type":"context_compaction","tokens_before":)"),
            0u)
      << sink_.lines[0];
}

// The resumed thread's new prompt is not compacted with the rest: the summary stands for what
// came before it, and the next request ends with the prompt, as codex's does.
TEST_F(TurnTest, AResumedThreadIsCompactedWithoutItsNewPromptWhichComesLast) {
  TurnResult r = RunResumedPastTheLimit("the new prompt", 1);
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 2u);
  const std::vector<std::string> summarised = {MessageInputItem("user", "earlier"),
                                               MessageInputItem("assistant", "ok"),
                                               MessageInputItem("user", kCompactionPrompt)};
  EXPECT_EQ(client_.prompts[0].input, summarised);
  const std::vector<std::string> next = {
      MessageInputItem("user", "earlier"),
      MessageInputItem("user", std::string(kSummaryPrefix) + "\nSUMMARY"),
      MessageInputItem("user", "the new prompt")};
  EXPECT_EQ(client_.prompts[1].input, next);
}

// A new thread holds only the initial context before its prompt: nothing to compact without
// cutting the task, so the request goes out whole.
TEST_F(TurnTest, ANewThreadsPromptIsNeverCompactedBeforeTheModelSawIt) {
  history_ = {MessageInputItem("developer", "instructions"), MessageInputItem("user", "big task")};
  client_.responses.push_back(Response({Message("Done.")}, Usage{20, 0, 0, 2, 0}));
  TurnResult r = Run(0, std::nullopt, [](TurnDeps& d) {
    d.auto_compact_token_limit = 5;
    d.new_input_items = 1;
  });
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 1u);
  EXPECT_EQ(client_.prompts[0].input.back(), MessageInputItem("user", "big task"));
}

// The control: without the carried-over count the same history is far under the limit.
TEST_F(TurnTest, AResumedThreadWithoutItsCountIsNotCompacted) {
  history_ = {MessageInputItem("user", "earlier"), MessageInputItem("assistant", "ok"),
              MessageInputItem("user", "more")};
  client_.responses.push_back(Response({Message("Done.")}, Usage{20, 0, 0, 2, 0}));
  TurnResult r = Run(0, std::nullopt, [](TurnDeps& d) { d.auto_compact_token_limit = 100; });
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 1u);
  EXPECT_NE(client_.prompts[0].tools_json, "[]");
}

TEST_F(TurnTest, ContextLengthExceededCompactsAndRetriesOnce) {
  const std::string exceeded = std::string(kContextWindowExceeded) + " (too long)";
  client_.responses.push_back(MakeError(exceeded, "context_length"));
  client_.responses.push_back(Response({Message("SUMMARY")}));
  client_.responses.push_back(Response({Message("Done.")}));
  TurnResult r = Run();
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  ASSERT_EQ(client_.prompts.size(), 3u);
  EXPECT_EQ(client_.prompts[2].input.back(),
            MessageInputItem("user", std::string(kSummaryPrefix) + "\nSUMMARY"));
  EXPECT_NE(sink_.lines[0].find(R"("type":"context_compaction")"), std::string::npos);
}

TEST_F(TurnTest, ASecondContextLengthExceededFailsTheTurn) {
  const std::string exceeded = std::string(kContextWindowExceeded) + " (too long)";
  client_.responses.push_back(MakeError(exceeded, "context_length"));
  client_.responses.push_back(Response({Message("SUMMARY")}));
  client_.responses.push_back(MakeError(exceeded, "context_length"));
  TurnResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kFailed);
  EXPECT_EQ(r.code, ErrorCode::kContextLength);
  EXPECT_EQ(r.error,
            "the input still exceeds the model's context window after compacting the history: "
            "Your input exceeds the context window of this model. Please adjust your input and "
            "try again. (too long)");
  EXPECT_EQ(client_.prompts.size(), 3u);  // no third attempt
}

TEST_F(TurnTest, TheTokenBudgetStopsTheRunWhenTheModelWantsMore) {
  client_.responses.push_back(Response({Call("echo", "{}", "c1")}, Usage{10, 0, 0, 5, 0}));
  client_.responses.push_back(Response({Call("echo", "{}", "c2")}, Usage{10, 0, 0, 5, 0}));
  client_.responses.push_back(Response({Message("never")}));
  TurnResult r = Run(0, std::nullopt, [](TurnDeps& d) { d.max_tokens = 20; });
  EXPECT_EQ(r.outcome(), SessionOutcome::kLimitReached);
  EXPECT_EQ(r.code, ErrorCode::kMaxTokens);
  EXPECT_EQ(r.error,
            "token budget reached: the thread used 30 input+output tokens and the model asked "
            "for more work (--max-tokens 20)");
  EXPECT_EQ(client_.prompts.size(), 2u);
  EXPECT_EQ(echo_->calls, 2);  // the calls of the last response ran: the session resumes cleanly
}

}  // namespace
}  // namespace ae
