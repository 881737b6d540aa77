#include "outputs/jsonl_sink.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

#include "base/utf8.h"

namespace ae {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, std::string_view s) {
  if (IsValidUtf8(s)) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  } else {
    std::string clean = SanitizeUtf8(s);
    w.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
  }
}

void Key(Writer& w, const char* k) {
  w.Key(k);
}

// Raw JSON from tools (MCP arguments, results) is written as-is when it parses, else as a
// string so the line stays valid.
void RawOrString(Writer& w, const std::string& json) {
  rapidjson::Document d;
  if (!json.empty() && !d.Parse(json.data(), json.size()).HasParseError()) {
    d.Accept(w);
  } else {
    Str(w, json);
  }
}

void WriteDetails(Writer& w, const AgentMessageItem& m) {
  Key(w, "type"), w.String("agent_message");
  Key(w, "text"), Str(w, m.text);
}
void WriteDetails(Writer& w, const ReasoningItem& r) {
  Key(w, "type"), w.String("reasoning");
  Key(w, "text"), Str(w, r.text);
}
void WriteDetails(Writer& w, const CommandExecutionItem& c) {
  Key(w, "type"), w.String("command_execution");
  Key(w, "command"), Str(w, c.command);
  Key(w, "aggregated_output"), Str(w, c.aggregated_output);
  Key(w, "exit_code");
  if (c.exit_code) {
    w.Int(*c.exit_code);
  } else {
    w.Null();
  }
  Key(w, "status"), w.String(ItemStatusName(c.status));
}
void WriteDetails(Writer& w, const FileChangeItem& f) {
  Key(w, "type"), w.String("file_change");
  Key(w, "changes");
  w.StartArray();
  for (const FileChange& c : f.changes) {
    w.StartObject();
    Key(w, "path"), Str(w, c.path);
    Key(w, "kind"), w.String(FileChangeKindName(c.kind));
    w.EndObject();
  }
  w.EndArray();
  Key(w, "status"), w.String(ItemStatusName(f.status));
}
void WriteDetails(Writer& w, const McpToolCallItem& m) {
  Key(w, "type"), w.String("mcp_tool_call");
  Key(w, "server"), Str(w, m.server);
  Key(w, "tool"), Str(w, m.tool);
  Key(w, "arguments"), RawOrString(w, m.arguments_json.empty() ? "{}" : m.arguments_json);
  Key(w, "result");
  if (m.result_content_json) {
    w.StartObject();
    Key(w, "content"), RawOrString(w, *m.result_content_json);
    Key(w, "structured_content");
    if (m.result_structured_json) {
      RawOrString(w, *m.result_structured_json);
    } else {
      w.Null();
    }
    w.EndObject();
  } else {
    w.Null();
  }
  Key(w, "error");
  if (m.error_message) {
    w.StartObject();
    Key(w, "message"), Str(w, *m.error_message);
    w.EndObject();
  } else {
    w.Null();
  }
  Key(w, "status"), w.String(ItemStatusName(m.status));
}
void WriteDetails(Writer& w, const TodoListItem& t) {
  Key(w, "type"), w.String("todo_list");
  Key(w, "items");
  w.StartArray();
  for (const TodoEntry& e : t.items) {
    w.StartObject();
    Key(w, "text"), Str(w, e.text);
    Key(w, "completed"), w.Bool(e.completed);
    w.EndObject();
  }
  w.EndArray();
}
void WriteDetails(Writer& w, const WebSearchItem& s) {
  Key(w, "type"), w.String("web_search");
  Key(w, "query"), Str(w, s.query);
}
void WriteDetails(Writer& w, const ErrorItem& e) {
  Key(w, "type"), w.String("error");
  Key(w, "message"), Str(w, e.message);
}

void WriteDetails(Writer& w, const ContextCompactionItem& c) {
  Key(w, "type"), w.String("context_compaction");
  Key(w, "tokens_before"), w.Int64(c.tokens_before);
  Key(w, "tokens_after"), w.Int64(c.tokens_after);
}

void WriteItemEvent(Writer& w, const char* type, const Item& item) {
  w.StartObject();
  Key(w, "type"), w.String(type);
  Key(w, "item");
  w.StartObject();
  Key(w, "id"), Str(w, item.id);
  std::visit([&](const auto& d) { WriteDetails(w, d); }, item.details);
  w.EndObject();
  w.EndObject();
}

void WriteUsage(Writer& w, const Usage& u) {
  w.StartObject();
  Key(w, "input_tokens"), w.Int64(u.input_tokens);
  Key(w, "cached_input_tokens"), w.Int64(u.cached_input_tokens);
  Key(w, "cache_write_input_tokens"), w.Int64(u.cache_write_input_tokens);
  Key(w, "output_tokens"), w.Int64(u.output_tokens);
  Key(w, "reasoning_output_tokens"), w.Int64(u.reasoning_output_tokens);
  w.EndObject();
}

// The result record after `usage` (ours): codex consumers read `usage` and ignore the rest.
void WriteStats(Writer& w, const TurnStats& s) {
  Key(w, "last_usage"), WriteUsage(w, s.last_usage);
  Key(w, "requests"), w.Int(s.requests);
  Key(w, "duration_ms"), w.Int64(s.duration_ms);
}

}  // namespace

std::string EventToJson(const Event& event) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  bool wrote = true;
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, ThreadStarted>) {
          w.StartObject();
          Key(w, "type"), w.String("thread.started");
          Key(w, "thread_id"), Str(w, e.thread_id);
          Key(w, "schema_version"), w.Int(kSchemaVersion);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, TurnStarted>) {
          w.StartObject();
          Key(w, "type"), w.String("turn.started");
          w.EndObject();
        } else if constexpr (std::is_same_v<T, ItemStarted>) {
          WriteItemEvent(w, "item.started", e.item);
        } else if constexpr (std::is_same_v<T, ItemUpdated>) {
          WriteItemEvent(w, "item.updated", e.item);
        } else if constexpr (std::is_same_v<T, ItemCompleted>) {
          WriteItemEvent(w, "item.completed", e.item);
        } else if constexpr (std::is_same_v<T, TurnCompleted>) {
          w.StartObject();
          Key(w, "type"), w.String("turn.completed");
          Key(w, "usage"), WriteUsage(w, e.usage);
          WriteStats(w, e.stats);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, TurnFailed>) {
          w.StartObject();
          Key(w, "type"), w.String("turn.failed");
          Key(w, "error");
          w.StartObject();
          Key(w, "message"), Str(w, e.message);
          Key(w, "code"), w.String(ErrorCodeName(e.code));
          w.EndObject();
          Key(w, "usage"), WriteUsage(w, e.usage);
          WriteStats(w, e.stats);
          w.EndObject();
        } else if constexpr (std::is_same_v<T, StreamError>) {
          w.StartObject();
          Key(w, "type"), w.String("error");
          Key(w, "message"), Str(w, e.message);
          w.EndObject();
        } else {
          wrote = false;  // deltas are for humans only
        }
      },
      event);
  return wrote ? std::string(buf.GetString(), buf.GetSize()) : std::string();
}

void JsonlSink::Emit(const Event& event) {
  if (broken_) return;
  std::string line = EventToJson(event);
  if (line.empty()) return;
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      broken_ = true;  // EPIPE etc.: the consumer is gone; the run's outcome still stands
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ae
