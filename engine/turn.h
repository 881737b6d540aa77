// The turn loop: sample the model, record its items, run its tool calls, feed the outputs
// back, and repeat until a response calls no tools. One turn per run.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "engine/events/emitter.h"
#include "engine/events/error_code.h"
#include "engine/events/result_record.h"
#include "engine/model/client.h"
#include "engine/rollout.h"
#include "engine/tools/router.h"

namespace ae {

// Checks the final answer once the model is done, in place of the output schema's check: an
// error fails the turn (model_error: the model broke the format agentexec asked for); an item
// is reported right before turn.completed (`agentexec review` turns its JSON into a `review`
// item).
using FinalAnswerCheck =
    std::function<Result<std::optional<ItemDetails>>(const std::string& final_message)>;

struct TurnDeps {
  const TurnContext& turn;
  ModelClient& client;
  ToolRouter& router;
  Orchestrator& orchestrator;
  Emitter& emitter;
  CancelToken& cancel;
  std::optional<std::string> output_schema_json;
  int max_turns = 0;                     // model requests; 0 = unlimited
  int64_t max_tokens = 0;                // the thread's input+output tokens; 0 = unlimited
  int64_t context_window = 0;            // tokens; 0 = unknown
  int64_t auto_compact_token_limit = 0;  // compact before a request this large; 0 = never
  RolloutWriter* rollout = nullptr;      // null: --ephemeral
  Usage usage_before;                    // earlier runs of a resumed thread
  // A resumed thread: its last request's usage and how many history items that request
  // covered (LoadedRollout::last_usage), so the context's size carries over; 0: none.
  Usage resumed_last_usage;
  size_t resumed_counted_items = 0;
  std::string prompt_cache_key;  // the thread id
  // The trailing history items that are this run's new input (the prompt). A compaction before
  // the model has answered them compacts what came before and puts them back after the
  // summary, so the request still ends with the user's newest prompt (as codex compacts a
  // resumed thread before its new turn). 0: none held back.
  size_t new_input_items = 0;
  // Empty: none.
  FinalAnswerCheck final_answer_check;
  ResultRecorder* record = nullptr;  // the run's result record; null: RunTurn times itself
  // Runs before each batch of tool calls; an error fails the turn instead (the session
  // completes its sandbox here: sandbox::NestedScan). Empty: none.
  std::function<Status()> before_tools;
  // Called when a response announces a tool call before it is complete (the client's
  // StreamObserver::OnToolCallAhead): the session starts that search here. Empty: none.
  std::function<void()> tool_call_ahead;
};

struct TurnResult {
  ErrorCode code = ErrorCode::kNone;  // why it failed (kNone when it completed)
  TurnStats stats;                    // as reported in turn.completed / turn.failed
  std::string error;
  std::string final_message;
  Usage usage;
  SessionOutcome outcome() const { return OutcomeOf(code); }
};

// `history` holds the initial items and grows with every model item and tool output; when
// the next request would reach the auto-compact limit, or the service answers that the input
// exceeds the context window, it is compacted (engine/compaction.h) and the turn goes on.
// Emits everything from the first model request to turn.completed / error + turn.failed.
TurnResult RunTurn(TurnDeps& deps, std::vector<std::string>& history);

}  // namespace ae
