#include "engine/turn.h"

#include <fmt/format.h>

#include "engine/compaction.h"
#include "engine/history.h"
#include "engine/output_schema/output_schema.h"

namespace ae {
namespace {

// Relays the client's live notifications as events.
class TurnObserver : public StreamObserver {
 public:
  explicit TurnObserver(Emitter& emitter) : emitter_(emitter) {}
  void OnTextDelta(const std::string& delta) override { emitter_.Emit(AgentMessageDelta{delta}); }
  void OnRetry(int attempt, int max, const std::string& reason) override {
    emitter_.Emit(StreamError{fmt::format("Reconnecting... {}/{} ({})", attempt, max, reason)});
  }

 private:
  Emitter& emitter_;
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

}  // namespace

TurnResult RunTurn(TurnDeps& deps, std::vector<std::string>& history) {
  TurnResult result;
  result.usage = deps.usage_before;
  ResultRecorder own_record;
  ResultRecorder& record = deps.record != nullptr ? *deps.record : own_record;
  TurnObserver observer(deps.emitter);
  ToolEnv env{deps.turn, deps.emitter, deps.cancel, deps.orchestrator};
  const std::string tools_json = deps.router.SpecsJson();

  auto fail = [&](TurnResult failed) {
    deps.router.StopBackground(deps.emitter);  // background sessions end with the turn
    failed.usage = result.usage;
    failed.final_message = result.final_message;
    failed.stats = record.Stats();
    deps.emitter.Emit(StreamError{failed.error});
    deps.emitter.Emit(TurnFailed{failed.error, failed.code, failed.usage, failed.stats});
    return failed;
  };

  ContextTracker context(EstimateTokens(tools_json));
  if (deps.resumed_counted_items > 0 && deps.resumed_counted_items <= history.size()) {
    context.OnResponse(deps.resumed_last_usage, deps.resumed_counted_items);
  }
  const CompactionSettings compaction{deps.context_window, deps.auto_compact_token_limit,
                                      deps.prompt_cache_key};
  // A compaction that could not bring the history under the limit is not repeated before the
  // next response: that would loop without progress.
  bool compacted_since_response = false;
  auto count = [&](const Usage& usage) {
    result.usage += usage;
    record.OnUsage(usage);
    if (deps.rollout != nullptr) deps.rollout->AddUsage(usage);
  };
  // Replaces the history with its compacted form; an error is the failed turn's message.
  auto compact = [&]() -> Status {
    const int64_t before = context.Tokens(history);
    record.OnRequest();
    Result<CompactionResult> compacted =
        CompactHistory(deps.client, history, before, compaction, observer, deps.cancel);
    if (!compacted.ok()) return compacted.error();
    count(compacted->usage);
    history = std::move(compacted->history);
    context.Reset();
    compacted_since_response = true;
    if (deps.rollout != nullptr) {
      deps.rollout->AddCompaction(history, compacted->tokens_before, compacted->tokens_after);
    }
    deps.emitter.CompleteNew(
        ContextCompactionItem{compacted->tokens_before, compacted->tokens_after});
    // Cutting the user's own words (a long prompt) changes the task: say so.
    if (compacted->user_tokens_after < compacted->user_tokens_before) {
      deps.emitter.CompleteNew(ErrorItem{fmt::format(
          "context compaction kept about {} of the {} tokens of the user's messages (the prompt "
          "included); the model continues from its summary of the rest",
          compacted->user_tokens_after, compacted->user_tokens_before)});
    }
    return {};
  };
  auto compaction_failed = [&](const Status& why) {
    if (deps.cancel.cancelled()) return fail(Cancelled(deps.cancel.reason()));
    TurnResult failed;
    failed.error = "context compaction failed: " + why.message();
    failed.code = ClassifyModelError(why.error());
    return fail(failed);
  };

  for (int request = 1;; ++request) {
    if (deps.cancel.cancelled()) return fail(Cancelled(deps.cancel.reason()));
    if (deps.max_turns > 0 && request > deps.max_turns) {
      TurnResult limit;
      limit.code = ErrorCode::kMaxTurns;
      limit.error = fmt::format(
          "max turns reached: the model asked for more work after {} request{} (--max-turns {})",
          deps.max_turns, deps.max_turns == 1 ? "" : "s", deps.max_turns);
      return fail(limit);
    }
    if (const int64_t used = result.usage.input_tokens + result.usage.output_tokens;
        deps.max_tokens > 0 && used >= deps.max_tokens) {
      TurnResult limit;
      limit.code = ErrorCode::kMaxTokens;
      limit.error = fmt::format(
          "token budget reached: the thread used {} input+output tokens and the model asked for "
          "more work (--max-tokens {})",
          used, deps.max_tokens);
      return fail(limit);
    }
    if (deps.auto_compact_token_limit > 0 && !compacted_since_response &&
        context.Tokens(history) >= deps.auto_compact_token_limit) {
      if (Status s = compact(); !s.ok()) return compaction_failed(s);
    }

    Result<ModelResponse> response = MakeError("no request sent");
    for (bool retried = false;; retried = true) {
      // The history moves into the request and back: no copy of it per model request.
      Prompt prompt{std::move(history), tools_json, deps.output_schema_json, deps.prompt_cache_key};
      record.OnRequest();
      response = deps.client.Stream(prompt, observer, deps.cancel);
      history = std::move(prompt.input);
      if (deps.cancel.cancelled()) return fail(Cancelled(deps.cancel.reason()));
      if (response.ok() || !IsContextWindowExceeded(response.error())) break;
      // The service counted more than we estimated: compact and retry, once.
      if (retried) {
        TurnResult failed;
        failed.code = ErrorCode::kContextLength;
        failed.error = StillTooLarge(response.message());
        return fail(failed);
      }
      if (Status s = compact(); !s.ok()) return compaction_failed(s);
    }
    if (!response.ok()) {
      TurnResult failed;
      failed.code = ClassifyModelError(response.error());
      failed.error = response.message();
      return fail(failed);
    }
    count(response->usage);

    for (const std::string& warning : response->warnings) {
      deps.emitter.CompleteNew(ErrorItem{warning});
    }
    std::vector<ToolCall> calls;
    for (const OutputItem& item : response->items) RecordItem(item, deps, history, calls, result);
    context.OnResponse(response->usage, history.size());
    compacted_since_response = false;
    if (calls.empty()) break;

    if (deps.before_tools) {
      if (Status ready = deps.before_tools(); !ready.ok()) {
        if (deps.cancel.cancelled()) return fail(Cancelled(deps.cancel.reason()));
        TurnResult failed;
        failed.code = ErrorCode::kSandboxUnavailable;
        failed.error = ready.message();
        return fail(failed);
      }
    }
    std::vector<ToolResult> outputs = deps.router.DispatchAll(calls, env);
    for (const ToolResult& out : outputs) {
      AddToHistory(deps, history, ToolOutputItem(out.call_id, out.output, out.custom));
    }
    // After every output of the batch, so each call still meets its output first.
    for (const ToolResult& out : outputs) {
      if (!out.model_warning.empty()) {
        AddToHistory(deps, history, MessageInputItem("user", "Warning: " + out.model_warning));
      }
    }
    if (deps.cancel.cancelled()) return fail(Cancelled(deps.cancel.reason()));
  }

  // Both wires get the same guarantee: an answer that does not validate fails the turn
  // (runner/ then writes no -o content), whatever the provider enforced.
  if (deps.output_schema_json) {
    Result<std::unique_ptr<OutputSchemaValidator>> validator =
        OutputSchemaValidator::Make(*deps.output_schema_json);
    Status valid = validator.ok() ? (*validator)->Validate(result.final_message)
                                  : Status(MakeError("--output-schema: " + validator.message()));
    if (!valid.ok()) {
      TurnResult invalid;
      invalid.code = ErrorCode::kOutputSchema;
      invalid.error = valid.message();
      return fail(invalid);
    }
  }

  if (deps.final_answer_check) {
    Result<std::optional<ItemDetails>> checked = deps.final_answer_check(result.final_message);
    if (!checked.ok()) {
      TurnResult invalid;
      invalid.code = ErrorCode::kOutputSchema;
      invalid.error = checked.message();
      return fail(invalid);
    }
    if (*checked) deps.emitter.CompleteNew(std::move(**checked));
  }
  deps.router.StopBackground(deps.emitter);
  deps.router.OnTurnEnd(deps.emitter);
  result.stats = record.Stats();
  deps.emitter.Emit(TurnCompleted{result.usage, result.stats});
  return result;
}

}  // namespace ae
