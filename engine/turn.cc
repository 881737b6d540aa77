#include "engine/turn.h"

#include <fmt/format.h>

#include "engine/compaction.h"
#include "engine/history.h"
#include "engine/output_schema/output_schema.h"

namespace ae {
namespace {

// Relays the client's live notifications as events, and its tool-call hint to the session.
class TurnObserver : public StreamObserver {
 public:
  TurnObserver(Emitter& emitter, const std::function<void()>& tool_call_ahead)
      : emitter_(emitter), tool_call_ahead_(tool_call_ahead) {}
  void OnTextDelta(const std::string& delta) override { emitter_.Emit(AgentMessageDelta{delta}); }
  void OnRetry(int attempt, int max, const std::string& reason) override {
    emitter_.Emit(StreamError{fmt::format("Reconnecting... {}/{} ({})", attempt, max, reason)});
  }
  void OnToolCallAhead() override {
    if (tool_call_ahead_) tool_call_ahead_();
  }

 private:
  Emitter& emitter_;
  const std::function<void()>& tool_call_ahead_;
};

// Why the run was cancelled, as a code and a message.
TurnResult Cancelled(CancelReason reason) {
  TurnResult r;
  switch (reason) {
    case CancelReason::kSigint:
      r.code = ErrorCode::kInterrupted;
      r.error = "interrupted by SIGINT";
      break;
    case CancelReason::kSigterm:
      r.code = ErrorCode::kTerminated;
      r.error = "terminated by SIGTERM";
      break;
    case CancelReason::kTimeout:
      r.code = ErrorCode::kTimeout;
      r.error = "the run exceeded its --timeout";
      break;
    case CancelReason::kOutputFailed:
      r.code = ErrorCode::kOutputUnwritable;
      r.error = "stdout cannot be written (its reader is gone)";
      break;
    case CancelReason::kLimit:
    case CancelReason::kNone:
      r.code = ErrorCode::kMaxTokens;
      r.error = "a limit was reached";
      break;
  }
  return r;
}

// Records one model item: history gets it verbatim; users get an item; tool calls are
// collected for dispatch.
void AddToHistory(TurnDeps& deps, std::vector<std::string>& history, std::string item) {
  if (deps.rollout != nullptr) deps.rollout->AddItem(item);
  history.push_back(std::move(item));
}

void RecordItem(const OutputItem& item, TurnDeps& deps, std::vector<std::string>& history,
                std::vector<ToolCall>& calls, TurnResult& result) {
  AddToHistory(deps, history, item.raw_json);
  switch (item.kind) {
    case OutputItem::Kind::kMessage:
      deps.emitter.CompleteNew(AgentMessageItem{item.text});
      result.final_message = item.text;
      break;
    case OutputItem::Kind::kReasoning:
      if (!item.text.empty()) deps.emitter.CompleteNew(ReasoningItem{item.text});
      break;
    case OutputItem::Kind::kFunctionCall:
      calls.push_back(ToolCall{item.call_id, item.name, item.arguments, false});
      break;
    case OutputItem::Kind::kCustomToolCall:
      calls.push_back(ToolCall{item.call_id, item.name, item.arguments, true});
      break;
    case OutputItem::Kind::kWebSearchCall: {
      // Runs on the provider's side; we only report it.
      WebSearchItem search{item.query, item.search_action};
      std::string id = deps.emitter.Start(search);
      deps.emitter.Complete(id, std::move(search));
      break;
    }
    case OutputItem::Kind::kOther:
      break;
  }
}

// The message a turn fails with when the input still exceeds the context window after the
// history was compacted for it.
std::string StillTooLarge(const std::string& error) {
  return "the input still exceeds the model's context window after compacting the history: " +
         error;
}

// One turn's state and its steps: each model request with its limits, retries and
// compaction; the response's items; the tool calls; the final-answer checks. A step that ends
// the turn returns its failed result (already reported through Fail).
class TurnLoop {
 public:
  TurnLoop(TurnDeps& deps, std::vector<std::string>& history)
      : deps_(deps),
        history_(history),
        record_(deps.record != nullptr ? *deps.record : own_record_),
        observer_(deps.emitter, deps.tool_call_ahead),
        env_{deps.turn, deps.emitter, deps.cancel, deps.orchestrator},
        tools_json_(deps.router.SpecsJson()),
        context_(EstimateTokens(tools_json_)),
        compaction_{deps.context_window, deps.auto_compact_token_limit, deps.prompt_cache_key} {
    result_.usage = deps.usage_before;
    if (deps.resumed_counted_items > 0 && deps.resumed_counted_items <= history.size()) {
      context_.OnResponse(deps.resumed_last_usage, deps.resumed_counted_items);
    }
  }

  TurnResult Run() {
    for (int request = 1;; ++request) {
      if (std::optional<TurnResult> ended = BeforeRequest(request)) return *ended;
      Result<ModelResponse> response = MakeError("no request sent");
      if (std::optional<TurnResult> ended = Request(response)) return *ended;
      std::vector<ToolCall> calls = RecordResponse(*response);
      if (calls.empty()) break;
      if (std::optional<TurnResult> ended = RunTools(calls)) return *ended;
    }
    return Finish();
  }

 private:
  TurnResult Fail(TurnResult failed) {
    deps_.router.StopBackground(deps_.emitter);  // background sessions end with the turn
    failed.usage = result_.usage;
    failed.final_message = result_.final_message;
    failed.stats = record_.Stats();
    deps_.emitter.Emit(StreamError{failed.error});
    deps_.emitter.Emit(TurnFailed{failed.error, failed.code, failed.usage, failed.stats});
    return failed;
  }

  TurnResult Fail(ErrorCode code, std::string error) {
    TurnResult failed;
    failed.code = code;
    failed.error = std::move(error);
    return Fail(std::move(failed));
  }

  void Count(const Usage& usage) {
    result_.usage += usage;
    record_.OnUsage(usage);
    if (deps_.rollout != nullptr) deps_.rollout->AddUsage(usage);
  }

  // The new input a compaction leaves out and puts back after it: only until the model has
  // answered it, and only when there is something before it to compact.
  size_t HeldBackItems() const {
    const size_t held = deps_.new_input_items;
    if (responded_ || held == 0 || held >= history_.size()) return 0;
    for (size_t i = 0; i < history_.size() - held; ++i) {
      if (!IsInitialContextItem(history_[i])) return held;
    }
    return 0;
  }

  // Replaces the history with its compacted form; an error is the failed turn's message.
  Status Compact() {
    const int64_t before = context_.Tokens(history_);
    const size_t held = HeldBackItems();
    if (held == 0 && !responded_ && deps_.new_input_items > 0) {
      // Nothing but the initial context and the new prompt: there is nothing to compact
      // without cutting the task itself (a prompt at the limit was refused before the turn).
      compacted_since_response_ = true;
      return {};
    }
    const std::vector<std::string> earlier(history_.begin(),
                                           history_.end() - static_cast<ptrdiff_t>(held));
    record_.OnRequest();
    Result<CompactionResult> compacted =
        CompactHistory(deps_.client, earlier, before, compaction_, observer_, deps_.cancel);
    if (!compacted.ok()) return compacted.error();
    Count(compacted->usage);
    compacted->history.insert(compacted->history.end(),
                              history_.end() - static_cast<ptrdiff_t>(held), history_.end());
    compacted->tokens_after = EstimateTokens(compacted->history);
    history_ = std::move(compacted->history);
    context_.Reset();
    compacted_since_response_ = true;
    if (deps_.rollout != nullptr) {
      deps_.rollout->AddCompaction(history_, compacted->tokens_before, compacted->tokens_after);
    }
    deps_.emitter.CompleteNew(
        ContextCompactionItem{compacted->tokens_before, compacted->tokens_after});
    // Cutting the user's own words (a long prompt) changes the task: say so.
    if (compacted->user_tokens_after < compacted->user_tokens_before) {
      deps_.emitter.CompleteNew(ErrorItem{fmt::format(
          "context compaction kept about {} of the {} tokens of the user's messages (the prompt "
          "included); the model continues from its summary of the rest",
          compacted->user_tokens_after, compacted->user_tokens_before)});
    }
    return {};
  }

  TurnResult CompactionFailed(const Status& why) {
    if (deps_.cancel.cancelled()) return Fail(Cancelled(deps_.cancel.reason()));
    return Fail(ClassifyModelError(why.error()), "context compaction failed: " + why.message());
  }

  // The limits, and the compaction a history at the auto-compact limit gets, before request
  // number `request`.
  std::optional<TurnResult> BeforeRequest(int request) {
    if (deps_.cancel.cancelled()) return Fail(Cancelled(deps_.cancel.reason()));
    if (deps_.max_turns > 0 && request > deps_.max_turns) {
      return Fail(ErrorCode::kMaxTurns,
                  fmt::format("max turns reached: the model asked for more work after {} "
                              "request{} (--max-turns {})",
                              deps_.max_turns, deps_.max_turns == 1 ? "" : "s", deps_.max_turns));
    }
    if (const int64_t used = result_.usage.input_tokens + result_.usage.output_tokens;
        deps_.max_tokens > 0 && used >= deps_.max_tokens) {
      return Fail(ErrorCode::kMaxTokens,
                  fmt::format("token budget reached: the thread used {} input+output tokens and "
                              "the model asked for more work (--max-tokens {})",
                              used, deps_.max_tokens));
    }
    // A compaction that could not bring the history under the limit is not repeated before
    // the next response: that would loop without progress.
    if (deps_.auto_compact_token_limit > 0 && !compacted_since_response_ &&
        context_.Tokens(history_) >= deps_.auto_compact_token_limit) {
      if (Status s = Compact(); !s.ok()) return CompactionFailed(s);
    }
    return std::nullopt;
  }

  // One model request into `response`, compacted and retried once when the service says the
  // input exceeds the context window; its usage is counted.
  std::optional<TurnResult> Request(Result<ModelResponse>& response) {
    for (bool retried = false;; retried = true) {
      // The history moves into the request and back: no copy of it per model request.
      Prompt prompt{std::move(history_), tools_json_, deps_.output_schema_json,
                    deps_.prompt_cache_key};
      record_.OnRequest();
      response = deps_.client.Stream(prompt, observer_, deps_.cancel);
      history_ = std::move(prompt.input);
      if (deps_.cancel.cancelled()) return Fail(Cancelled(deps_.cancel.reason()));
      if (response.ok() || !IsContextWindowExceeded(response.error())) break;
      // The service counted more than we estimated: compact and retry, once.
      if (retried) return Fail(ErrorCode::kContextLength, StillTooLarge(response.message()));
      if (Status s = Compact(); !s.ok()) return CompactionFailed(s);
    }
    if (!response.ok()) return Fail(ClassifyModelError(response.error()), response.message());
    Count(response->usage);
    return std::nullopt;
  }

  // The response's warnings and items, reported and added to the history; its tool calls.
  std::vector<ToolCall> RecordResponse(const ModelResponse& response) {
    for (const std::string& warning : response.warnings) {
      deps_.emitter.CompleteNew(ErrorItem{warning});
    }
    std::vector<ToolCall> calls;
    for (const OutputItem& item : response.items) {
      RecordItem(item, deps_, history_, calls, result_);
    }
    context_.OnResponse(response.usage, history_.size());
    compacted_since_response_ = false;
    responded_ = true;
    return calls;
  }

  // Runs one batch of tool calls and adds their outputs, then their warnings, to the history.
  std::optional<TurnResult> RunTools(const std::vector<ToolCall>& calls) {
    if (deps_.before_tools) {
      if (Status ready = deps_.before_tools(); !ready.ok()) {
        if (deps_.cancel.cancelled()) return Fail(Cancelled(deps_.cancel.reason()));
        return Fail(ErrorCode::kSandboxUnavailable, ready.message());
      }
    }
    std::vector<ToolResult> outputs = deps_.router.DispatchAll(calls, env_);
    for (const ToolResult& out : outputs) {
      AddToHistory(deps_, history_, ToolOutputItem(out.call_id, out.output, out.custom));
    }
    // After every output of the batch, so each call still meets its output first.
    for (const ToolResult& out : outputs) {
      if (!out.model_warning.empty()) {
        AddToHistory(deps_, history_, MessageInputItem("user", "Warning: " + out.model_warning));
      }
    }
    if (deps_.cancel.cancelled()) return Fail(Cancelled(deps_.cancel.reason()));
    return std::nullopt;
  }

  // The final answer's checks, then turn.completed.
  TurnResult Finish() {
    // Both wires get the same guarantee: an answer that does not validate fails the turn
    // (runner/ then writes no -o content), whatever the provider enforced.
    // A final-answer check (a review) validates the answer itself, in words that name its
    // format rather than an --output-schema the user never gave; breaking it is the model's
    // failure (exit 1), not the user's schema's (exit 6).
    if (deps_.output_schema_json && !deps_.final_answer_check) {
      Result<std::unique_ptr<OutputSchemaValidator>> validator =
          OutputSchemaValidator::Make(*deps_.output_schema_json);
      Status valid = validator.ok() ? (*validator)->Validate(result_.final_message)
                                    : Status(MakeError("--output-schema: " + validator.message()));
      if (!valid.ok()) return Fail(ErrorCode::kOutputSchema, valid.message());
    }

    if (deps_.final_answer_check) {
      Result<std::optional<ItemDetails>> checked = deps_.final_answer_check(result_.final_message);
      if (!checked.ok()) return Fail(ErrorCode::kModelError, checked.message());
      if (*checked) deps_.emitter.CompleteNew(std::move(**checked));
    }
    deps_.router.StopBackground(deps_.emitter);
    deps_.router.OnTurnEnd(deps_.emitter);
    result_.stats = record_.Stats();
    deps_.emitter.Emit(TurnCompleted{result_.usage, result_.stats});
    return result_;
  }

  TurnDeps& deps_;
  std::vector<std::string>& history_;
  TurnResult result_;
  ResultRecorder own_record_;
  ResultRecorder& record_;
  TurnObserver observer_;
  ToolEnv env_;
  const std::string tools_json_;
  ContextTracker context_;
  const CompactionSettings compaction_;
  bool compacted_since_response_ = false;
  bool responded_ = false;  // the model has answered in this run
};

}  // namespace

TurnResult RunTurn(TurnDeps& deps, std::vector<std::string>& history) {
  return TurnLoop(deps, history).Run();
}

}  // namespace ae
