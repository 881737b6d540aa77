// ModelClient: the engine's one view of a model. Three implementations, chosen by the
// provider's wire_api: responses (OpenAI Responses API, SSE), chat (Chat Completions
// stream), scripted (offline replay). History travels as Responses-API JSON items, kept
// verbatim so the model's own items go back to it byte for byte.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/events/events.h"
#include "engine/model/provider.h"

namespace ae {

struct ModelOptions {
  std::string model;
  std::string reasoning_effort;   // "" = omit
  std::string reasoning_summary;  // "" = omit
  std::string verbosity;          // "" = omit
  bool parallel_tool_calls = true;
  // The family takes `reasoning` and returns reasoning items: with `store: false` every
  // request then asks for their encrypted_content (model_table.h).
  bool reasoning = true;
  int64_t context_window = 0;            // tokens, from the model table or config; 0 = unknown
  int64_t auto_compact_token_limit = 0;  // tokens; read by context management
};

struct Prompt {
  std::vector<std::string> input;  // each one Responses-API input item as a JSON object
  std::string tools_json = "[]";   // JSON array of tool specs, Responses-API shape
  std::optional<std::string> output_schema_json;  // --output-schema, a JSON object
  std::string prompt_cache_key;                   // responses: "" = omit; codex sends the thread id
  bool summarize = false;  // context compaction's summarisation request (no tools are offered)
};

// One finished output item of a response.
struct OutputItem {
  enum class Kind { kMessage, kReasoning, kFunctionCall, kCustomToolCall, kWebSearchCall, kOther };
  Kind kind = Kind::kOther;
  std::string raw_json;   // verbatim, replayed in later requests
  std::string text;       // message: output_text parts joined; reasoning: summary joined "\n"
  std::string phase;      // message phase ("commentary", "final_answer") when given
  std::string call_id;    // function_call / custom_tool_call
  std::string name;       // function_call / custom_tool_call
  std::string arguments;  // function_call: JSON string; custom_tool_call: the free-form input
  std::string query;      // web_search_call
  WebSearchAction search_action;  // web_search_call
};

// A call the engine runs (a tool of its router), as opposed to what it only reports.
inline bool IsToolCall(OutputItem::Kind kind) {
  return kind == OutputItem::Kind::kFunctionCall || kind == OutputItem::Kind::kCustomToolCall;
}

struct ModelResponse {
  std::string id;
  std::vector<OutputItem> items;
  Usage usage;
  // What the client left out of `items` and why (an output item without a type): the turn
  // reports each as a warning item and goes on.
  std::vector<std::string> warnings;
};

// What a provider's own compaction returned: the items that stand for the history (for the
// Responses API, user messages and an opaque `compaction` item), and the request's usage.
struct CompactedOutput {
  std::vector<std::string> items;
  Usage usage;
};

// Live notifications while a request runs. Output items are delivered only in the final
// ModelResponse, after response.completed, so a retried stream never duplicates an item.
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  virtual void OnTextDelta(const std::string& /*delta*/) {}
  // A retry is about to happen: attempt is 1-based, of max.
  virtual void OnRetry(int /*attempt*/, int /*max*/, const std::string& /*reason*/) {}
  // The response under way holds a tool call, announced before the call is complete (its
  // arguments are still streaming), so what the call will need can be readied meanwhile. A
  // hint only: it may come more than once, or not at all (a server that sends the call whole).
  virtual void OnToolCallAhead() {}
};

class ModelClient {
 public:
  virtual ~ModelClient() = default;
  // Streams one response. Errors carry the message the turn fails with.
  virtual Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                                       CancelToken& cancel) = 0;
  // The provider's compaction endpoint, given the history to compact as `prompt.input`.
  // nullopt: the provider has none, and the caller summarises with a normal request instead.
  // Retries are announced through `observer` as for Stream.
  virtual Result<std::optional<CompactedOutput>> Compact(const Prompt& /*prompt*/,
                                                         StreamObserver& /*observer*/,
                                                         CancelToken& /*cancel*/) {
    return std::optional<CompactedOutput>();
  }
};

// The message a request fails with when the input no longer fits the model's context window
// (HTTP 400 / response.failed with code context_length_exceeded), as codex words it. Context
// management recognises the failure by its code, not by this text (IsContextWindowExceeded).
inline constexpr const char* kContextWindowExceeded =
    "Your input exceeds the context window of this model. Please adjust your input and try "
    "again.";
bool IsContextWindowExceeded(const Error& error);

// Builds the client for provider.wire_api; an unknown wire or a missing key is an error
// here, before any request is sent.
Result<std::unique_ptr<ModelClient>> MakeModelClient(const ProviderInfo& provider,
                                                     const ModelOptions& options);

}  // namespace ae
