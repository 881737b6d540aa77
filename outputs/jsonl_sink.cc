#include "outputs/jsonl_sink.h"

#include <fmt/format.h>

#include <cerrno>
#include <type_traits>

#include "base/json.h"
#include "base/write_all.h"
#include "engine/events/usage_json.h"
#include "outputs/review_render.h"

namespace ae {
namespace {

using Writer = JsonWriter;

void WriteDetails(Writer& w, const AgentMessageItem& m) {
  w.Key("type"), w.String("agent_message");
  w.Key("text"), w.String(m.text);
}
void WriteDetails(Writer& w, const ReasoningItem& r) {
  w.Key("type"), w.String("reasoning");
  w.Key("text"), w.String(r.text);
}
void WriteDetails(Writer& w, const CommandExecutionItem& c) {
  w.Key("type"), w.String("command_execution");
  w.Key("command"), w.String(c.command);
  w.Key("aggregated_output"), w.String(c.aggregated_output);
  w.Key("exit_code");
  if (c.exit_code) {
    w.Int(*c.exit_code);
  } else {
    w.Null();
  }
  w.Key("status"), w.String(ItemStatusName(c.status));
}
void WriteDetails(Writer& w, const FileChangeItem& f) {
  w.Key("type"), w.String("file_change");
  w.Key("changes");
  w.StartArray();
  for (const FileChange& c : f.changes) {
    w.StartObject();
    w.Key("path"), w.String(c.path);
    w.Key("kind"), w.String(FileChangeKindName(c.kind));
    w.EndObject();
  }
  w.EndArray();
  w.Key("status"), w.String(ItemStatusName(f.status));
}
// Raw JSON from tools (MCP arguments, results) is JSON when it parses (compact, valid UTF-8,
// finite numbers), else a string: the line stays one valid JSON object.
void WriteDetails(Writer& w, const McpToolCallItem& m) {
  w.Key("type"), w.String("mcp_tool_call");
  w.Key("server"), w.String(m.server);
  w.Key("tool"), w.String(m.tool);
  w.Key("arguments"), w.Raw(m.arguments_json.empty() ? "{}" : m.arguments_json);
  w.Key("result");
  if (m.result_content_json) {
    w.StartObject();
    w.Key("content"), w.Raw(*m.result_content_json);
    w.Key("structured_content");
    if (m.result_structured_json) {
      w.Raw(*m.result_structured_json);
    } else {
      w.Null();
    }
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("error");
  if (m.error_message) {
    w.StartObject();
    w.Key("message"), w.String(*m.error_message);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("status"), w.String(ItemStatusName(m.status));
}
void WriteDetails(Writer& w, const TodoListItem& t) {
  w.Key("type"), w.String("todo_list");
  w.Key("items");
  w.StartArray();
  for (const TodoEntry& e : t.items) {
    w.StartObject();
    w.Key("text"), w.String(e.text);
    w.Key("completed"), w.Bool(e.completed);
    w.EndObject();
  }
  w.EndArray();
}
void WriteDetails(Writer& w, const WebSearchItem& s) {
  w.Key("type"), w.String("web_search");
  w.Key("query"), w.String(s.query);
  w.Key("action");
  w.StartObject();
  w.Key("type"), w.String(s.action.type);
  if (s.action.type == "search") w.Key("query"), w.String(s.action.query);
  if (s.action.type == "open_page" || s.action.type == "find_in_page") {
    w.Key("url"), w.String(s.action.url);
  }
  if (s.action.type == "find_in_page") w.Key("pattern"), w.String(s.action.pattern);
  w.EndObject();
}
void WriteDetails(Writer& w, const ErrorItem& e) {
  w.Key("type"), w.String("error");
  w.Key("message"), w.String(e.message);
}

void WriteDetails(Writer& w, const ReviewItem& r) {
  w.Key("type"), w.String("review");
  WriteReviewFields(w, r);
}

void WriteDetails(Writer& w, const ContextCompactionItem& c) {
  w.Key("type"), w.String("context_compaction");
  w.Key("tokens_before"), w.Int64(c.tokens_before);
  w.Key("tokens_after"), w.Int64(c.tokens_after);
}

void WriteDetails(Writer& w, const NetworkRequestItem& n) {
  auto string_or_null = [&](const std::string& s) {
    if (s.empty()) {
      w.Null();
    } else {
      w.String(s);
    }
  };
  w.Key("type"), w.String("network_request");
  w.Key("call_id"), w.String(n.call_id);
  w.Key("protocol"), w.String(n.protocol);
  w.Key("host"), w.String(n.host);
  w.Key("port"), w.Int(n.port);
  w.Key("method"), string_or_null(n.method);
  w.Key("address"), string_or_null(n.address);
  w.Key("decision"), w.String(n.allowed ? "allowed" : "denied");
  w.Key("rule"), string_or_null(n.rule);
  w.Key("reason"), string_or_null(n.reason);
  w.Key("bytes_sent"), w.Uint64(n.bytes_sent);
  w.Key("bytes_received"), w.Uint64(n.bytes_received);
  // Only where a credential was brokered, so every other record keeps its shape.
  if (!n.credentials.empty()) {
    w.Key("credentials");
    w.StartArray();
    for (const std::string& name : n.credentials) w.String(name);
    w.EndArray();
  }
}

void WriteItemEvent(Writer& w, const char* type, const Item& item) {
  w.StartObject();
  w.Key("type"), w.String(type);
  w.Key("item");
  w.StartObject();
  w.Key("id"), w.String(item.id);
  std::visit([&](const auto& d) { WriteDetails(w, d); }, item.details);
  w.EndObject();
  w.EndObject();
}

// The result record after `usage` (ours): codex consumers read `usage` and ignore the rest.
void WriteStats(Writer& w, const TurnStats& s) {
  w.Key("last_usage"), WriteUsage(w, s.last_usage);
  w.Key("requests"), w.Int(s.requests);
  w.Key("duration_ms"), w.Int64(s.duration_ms);
  if (s.network) {
    w.Key("network");
    w.StartObject();
    for (auto [key, list] :
         {std::pair{"reached", &s.network->reached}, std::pair{"refused", &s.network->refused}}) {
      w.Key(key);
      w.StartArray();
      for (const std::string& host : *list) w.String(host);
      w.EndArray();
    }
    w.EndObject();
  }
}

}  // namespace

std::string EventToJson(const Event& event) {
  Writer w;
  bool wrote = true;
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, ThreadStarted>) {
          w.StartObject();
          w.Key("type"), w.String("thread.started");
          w.Key("thread_id"), w.String(e.thread_id);
          w.Key("schema_version"), w.Int(kSchemaVersion);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, TurnStarted>) {
          w.StartObject();
          w.Key("type"), w.String("turn.started");
          w.EndObject();
        } else if constexpr (std::is_same_v<T, ItemStarted>) {
          WriteItemEvent(w, "item.started", e.item);
        } else if constexpr (std::is_same_v<T, ItemUpdated>) {
          WriteItemEvent(w, "item.updated", e.item);
        } else if constexpr (std::is_same_v<T, ItemCompleted>) {
          WriteItemEvent(w, "item.completed", e.item);
        } else if constexpr (std::is_same_v<T, TurnCompleted>) {
          w.StartObject();
          w.Key("type"), w.String("turn.completed");
          w.Key("usage"), WriteUsage(w, e.usage);
          WriteStats(w, e.stats);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, TurnFailed>) {
          w.StartObject();
          w.Key("type"), w.String("turn.failed");
          w.Key("error");
          w.StartObject();
          w.Key("message"), w.String(e.message);
          w.Key("code"), w.String(ErrorCodeName(e.code));
          w.EndObject();
          w.Key("usage"), WriteUsage(w, e.usage);
          WriteStats(w, e.stats);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, StreamError>) {
          w.StartObject();
          w.Key("type"), w.String("error");
          w.Key("message"), w.String(e.message);
          w.EndObject();
        } else {
          wrote = false;  // deltas are for humans only
        }
      },
      event);
  if (!wrote) return std::string();
  Result<std::string> line = w.Take();
  return line.ok() ? std::move(*line) : std::string();
}

void JsonlSink::Emit(const Event& event) {
  if (failed_) return;
  std::string line = EventToJson(event);
  if (line.empty()) return;
  line.push_back('\n');
  int err = 0;
  Status written = WriteAll(fd_, line, cancel_, &err);
  if (!written.ok()) {
    // The consumer is gone (EPIPE), the disk is full, or it stopped reading after a cancel:
    // nobody will see the rest, so stop writing and end the run (exit 5) instead of running
    // the whole turn for no one.
    failed_ = true;
    error_ = fmt::format("cannot write events to {}: {}", name_, written.message());
    if (cancel_ != nullptr && err != ETIMEDOUT) cancel_->Cancel(CancelReason::kOutputFailed);
  }
}

}  // namespace ae
