// The event schema: every event and item agentexec reports, defined once. The engine
// produces these; sinks in outputs/ render them (JSONL, or human progress).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/events/error_code.h"

namespace ae {

// Bumped only on an incompatible change to the JSONL shapes.
inline constexpr int kSchemaVersion = 1;

enum class ItemStatus { kInProgress, kCompleted, kFailed };

struct AgentMessageItem {
  std::string text;
};
struct ReasoningItem {
  std::string text;  // summary parts joined by "\n"
};
struct CommandExecutionItem {
  std::string command;  // as shown to users: /bin/bash -lc 'echo hi'
  std::string aggregated_output;
  std::optional<int> exit_code;  // null while running
  ItemStatus status = ItemStatus::kInProgress;
};
enum class FileChangeKind { kAdd, kUpdate, kDelete };
struct FileChange {
  std::string path;  // absolute
  FileChangeKind kind = FileChangeKind::kUpdate;
  std::string diff;  // unified diff for human mode; not part of the JSONL item
};
struct FileChangeItem {
  std::vector<FileChange> changes;  // sorted by path
  ItemStatus status = ItemStatus::kInProgress;
};
struct McpToolCallItem {
  std::string server;
  std::string tool;
  std::string arguments_json;                         // raw JSON value
  std::optional<std::string> result_content_json;     // raw JSON array
  std::optional<std::string> result_structured_json;  // raw JSON value or absent (null)
  std::optional<std::string> error_message;
  ItemStatus status = ItemStatus::kInProgress;
};
struct TodoEntry {
  std::string text;
  bool completed = false;
};
struct TodoListItem {
  std::vector<TodoEntry> items;
};
// What a provider-side search did, as the Responses API's web_search_call reports it and codex
// passes on: `search` (query), `open_page` (url), `find_in_page` (url, pattern) or `other`.
struct WebSearchAction {
  std::string type = "other";
  std::string query;
  std::string url;
  std::string pattern;
};
struct WebSearchItem {
  std::string query;
  WebSearchAction action;
};
struct ErrorItem {
  std::string message;
};
// The result of `agentexec review` (ours: codex exec prints no structured review). Field names
// are codex's ReviewOutputEvent's, so tools written for codex's review output read it.
struct ReviewFinding {
  std::string title;
  std::string body;                // Markdown
  double confidence_score = 0;     // 0..1
  int priority = 0;                // 0 (P0, drop everything) .. 3 (P3, nice to have)
  std::string absolute_file_path;  // always absolute (agentexec resolves relative ones)
  int64_t line_start = 0;          // code_location.line_range.start, 1-based
  int64_t line_end = 0;            // code_location.line_range.end, inclusive
};
struct ReviewItem {
  std::vector<ReviewFinding> findings;  // in the model's order
  std::string overall_correctness;      // "patch is correct" | "patch is incorrect"
  std::string overall_explanation;
  double overall_confidence_score = 0;
};
// The history was compacted to fit the context window (schema/events.schema.json).
struct ContextCompactionItem {
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
};

// One connection a command attempted through the egress proxy (net/proxy.h), completed when
// the command's tree has ended (schema/events.schema.json, ours).
struct NetworkRequestItem {
  std::string call_id;            // the command_execution item of the command that made it
  std::string protocol = "http";  // "http", "https" (CONNECT), "socks5"
  std::string host;
  int port = 0;
  std::string method;   // plain HTTP's, else ""
  std::string address;  // the address dialled, "" when none was
  bool allowed = false;
  std::string rule;    // the rule that decided, "" when none matched
  std::string reason;  // why refused or failed, "" when it went through
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // Brokered credentials whose real value the proxy put into the request, by name (never the
  // value).
  std::vector<std::string> credentials;
};

using ItemDetails = std::variant<AgentMessageItem, ReasoningItem, CommandExecutionItem,
                                 FileChangeItem, McpToolCallItem, TodoListItem, WebSearchItem,
                                 ErrorItem, ReviewItem, ContextCompactionItem, NetworkRequestItem>;

struct Item {
  std::string id;  // item_0, item_1, ... per process in order of first emission
  ItemDetails details;
};

struct Usage {
  int64_t input_tokens = 0;
  int64_t cached_input_tokens = 0;
  int64_t cache_write_input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t reasoning_output_tokens = 0;

  Usage& operator+=(const Usage& o) {
    input_tokens += o.input_tokens;
    cached_input_tokens += o.cached_input_tokens;
    cache_write_input_tokens += o.cache_write_input_tokens;
    output_tokens += o.output_tokens;
    reasoning_output_tokens += o.reasoning_output_tokens;
    return *this;
  }
  bool operator==(const Usage&) const = default;
};

// What the human header shows; JSONL prints only thread_id and schema_version.
struct SessionInfo {
  std::string cwd;
  std::string model;
  std::string provider;
  std::string approval;
  std::string sandbox;  // mode plus how it is enforced, e.g. "workspace-write (landlock+seccomp)"
  std::string reasoning_effort;
  // The run ends before any request because of the prompt itself (too large to keep whole):
  // the human view shows the refusal, not the prompt.
  bool prompt_refused = false;
};

struct ThreadStarted {
  std::string thread_id;
  SessionInfo info;
};
struct TurnStarted {};
struct ItemStarted {
  Item item;
};
struct ItemUpdated {
  Item item;
};
struct ItemCompleted {
  Item item;
};
// The result record both turn.completed and turn.failed carry besides `usage` (ours).
// What the commands of a run with a network allow-list reached and were refused, each
// "host:port" once, sorted.
struct NetworkSummary {
  std::vector<std::string> reached;
  std::vector<std::string> refused;
  bool operator==(const NetworkSummary&) const = default;
};
struct TurnStats {
  int64_t duration_ms = 0;                // from the start of the run to this event
  int requests = 0;                       // model requests sent in this run
  Usage last_usage;                       // the last request's usage (zero before any request)
  std::optional<NetworkSummary> network;  // only for a run with a network allow-list
};
struct TurnCompleted {
  Usage usage;
  TurnStats stats;
};
struct TurnFailed {
  std::string message;
  ErrorCode code = ErrorCode::kModelError;
  Usage usage;
  TurnStats stats;
};
// Top-level `error` event: retry notices and the fatal error right before turn.failed.
struct StreamError {
  std::string message;
};
// Streaming text of an assistant message; only the human sink may show it. Never JSONL.
struct AgentMessageDelta {
  std::string delta;
};

using Event = std::variant<ThreadStarted, TurnStarted, ItemStarted, ItemUpdated, ItemCompleted,
                           TurnCompleted, TurnFailed, StreamError, AgentMessageDelta>;

const char* ItemStatusName(ItemStatus s);
const char* FileChangeKindName(FileChangeKind k);

}  // namespace ae
