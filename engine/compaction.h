// Context management for long runs: how full the context window is, and how the
// history is compacted when the next request would cross the auto-compact limit.
//
// Tokens are counted as the service counted them (the last response's usage: input + output)
// plus an estimate of what was appended since (tool outputs, a new user message): 4 bytes a
// token, as codex estimates. When nothing was counted yet (a resumed thread, a provider that
// reports no usage) the whole history and the tool specs are estimated.
//
// A compacted history is the initial context (developer instructions, AGENTS.md, environment),
// the most recent user messages within a budget (text only: images are not resent), and a
// summary of the work so far. The summary comes from the provider's compaction endpoint where
// there is one (Responses: POST /responses/compact, whose output holds an opaque `compaction`
// item), otherwise from a normal request that offers no tools and ends with our compaction
// prompt. Tool calls and their outputs never survive compaction separately: the compacted
// history holds neither.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/events/events.h"
#include "engine/model/client.h"

namespace ae {

// What the summarisation request asks for (ours), sent as the last user message.
extern const char* const kCompactionPrompt;
// The first line of the summary message in a compacted history; a later compaction recognises
// an earlier summary by it and does not keep it as a user message.
extern const char* const kSummaryPrefix;
// Budget of the user messages kept in a compacted history (codex: 20,000 tokens); a quarter of
// the auto-compact limit when that is smaller, so a small window still has room to work.
inline constexpr int64_t kCompactUserMessageMaxTokens = 20000;

// 4 bytes a token, rounded up.
int64_t EstimateTokens(std::string_view text);
int64_t EstimateTokens(const std::vector<std::string>& items);

// Developer messages, the AGENTS.md and <environment_context> user messages: what a new
// thread starts with and every compacted history starts with again.
bool IsInitialContextItem(const std::string& item_json);

class ContextTracker {
 public:
  // `fixed_tokens`: what every request carries besides the history (the tool specs). Only
  // the estimate adds it: the service's count already includes it.
  explicit ContextTracker(int64_t fixed_tokens = 0) : fixed_(fixed_tokens) {}
  // A response was received: `usage` counted the request and its output, which together are
  // history[0, history_size).
  void OnResponse(const Usage& usage, size_t history_size);
  // The history was replaced (compaction): nothing of it was counted by the service yet.
  void Reset() { counted_ = 0, counted_size_ = 0; }
  // Tokens the next request's input would hold.
  int64_t Tokens(const std::vector<std::string>& history) const;

 private:
  const int64_t fixed_;
  int64_t counted_ = 0;      // input + output tokens of the last response; 0 = none
  size_t counted_size_ = 0;  // the history items those cover
};

// The compacted history: the initial context found in `history`, then the newest user
// messages within `user_budget` tokens (the oldest one kept is truncated to fit), then one
// user message holding kSummaryPrefix, a newline and `summary`.
std::vector<std::string> BuildCompactedHistory(const std::vector<std::string>& history,
                                               const std::string& summary, int64_t user_budget);

// The remote compaction's output as the new history: the initial context of `history`, then
// the output's user messages (not earlier summaries' context), assistant messages and
// `compaction` items, in order; developer messages, reasoning, tool calls and outputs of the
// output are dropped (codex does the same).
std::vector<std::string> AdoptRemoteCompaction(const std::vector<std::string>& history,
                                               const std::vector<std::string>& output);

// The history as the compaction request sends it: when it is estimated above `max_tokens`,
// the oldest items after the initial context are dropped until it fits, and with each dropped
// call its output, so no call or output is ever sent alone. `max_tokens` <= 0: unchanged.
std::vector<std::string> TrimForCompaction(const std::vector<std::string>& history,
                                           int64_t max_tokens);

struct CompactionSettings {
  int64_t context_window = 0;            // tokens; 0 = unknown
  int64_t auto_compact_token_limit = 0;  // tokens; 0 = never compact before a request
  std::string prompt_cache_key;
};

struct CompactionResult {
  std::vector<std::string> history;  // replaces the turn's history
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;  // estimated: the service has not counted it yet
  Usage usage;               // of the compaction request (counted in the thread's usage)
  bool remote = false;       // the provider's endpoint produced it
  // The user's own messages (the prompt included) as estimated tokens of text, before and
  // after: what a compaction cut from them is reported, never dropped silently.
  int64_t user_tokens_before = 0;
  int64_t user_tokens_after = 0;
};

// The estimated tokens of the text of the user's own messages in `history`: not the initial
// context, not an earlier compaction's summary.
int64_t UserMessageTokens(const std::vector<std::string>& history);

// Compacts `history` with `client`: its remote compaction when it has one, a summarisation
// request otherwise. `tokens_before` is what the tracker counted. Errors are the request's.
Result<CompactionResult> CompactHistory(ModelClient& client,
                                        const std::vector<std::string>& history,
                                        int64_t tokens_before, const CompactionSettings& settings,
                                        StreamObserver& observer, CancelToken& cancel);

}  // namespace ae
