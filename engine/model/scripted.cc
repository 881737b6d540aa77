#include "engine/model/scripted.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include "base/json.h"
#include "base/read_file.h"
#include "engine/model/items.h"

namespace ae {
namespace {

Result<std::string> RequiredString(const rapidjson::Value& item, const char* name,
                                   std::string_view type) {
  const rapidjson::Value* v = FindJsonMember(item, name);
  if (!v || !v->IsString()) {
    return MakeError(fmt::format("a {} item needs a string \"{}\"", type, name));
  }
  return std::string(v->GetString(), v->GetStringLength());
}

std::string CallId(const rapidjson::Value& item, int turn, int index) {
  const rapidjson::Value* v = FindJsonMember(item, "call_id");
  if (v && v->IsString()) return v->GetString();
  return fmt::format("call_{}_{}", turn, index);
}

int64_t IntAt(const rapidjson::Value* v, const char* name) {
  const rapidjson::Value* m = v ? FindJsonMember(*v, name) : nullptr;
  return m && m->IsInt64() ? m->GetInt64() : 0;
}

struct Turn {
  std::optional<std::string> fail;
  std::vector<OutputItem> items;
  Usage usage;
};

class ScriptedClient : public ModelClient {
 public:
  ScriptedClient(std::string path, std::vector<Turn> turns)
      : path_(std::move(path)), turns_(std::move(turns)) {}

  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken& cancel) override {
    if (cancel.cancelled()) return MakeError("model request cancelled");
    // A request that offers no tools is context compaction's summarisation request: a script
    // cannot know when it comes, so it is answered here and consumes no turn.
    if (prompt.summarize) {
      ModelResponse r;
      r.id = "resp_scripted_summary";
      OutputItem summary;
      summary.kind = OutputItem::Kind::kMessage;
      summary.text =
          fmt::format("Summary of the work so far ({} history items).", prompt.input.size());
      summary.raw_json = AssistantMessageJson(summary.text);
      r.items.push_back(std::move(summary));
      return r;
    }
    const size_t n = next_++;
    if (n >= turns_.size()) {
      return MakeError(
          fmt::format("scripted provider: no turn left for request {} (script has {} "
                      "turns): {}",
                      n + 1, turns_.size(), path_));
    }
    const Turn& turn = turns_[n];
    if (turn.fail) return MakeError(*turn.fail);
    ModelResponse r;
    r.id = fmt::format("resp_scripted_{}", n + 1);
    r.items = turn.items;
    r.usage = turn.usage;
    for (const OutputItem& item : r.items) {
      if (IsToolCall(item.kind)) observer.OnToolCallAhead();
      if (item.kind == OutputItem::Kind::kMessage && !item.text.empty()) {
        observer.OnTextDelta(item.text);
      }
    }
    return r;
  }

 private:
  std::string path_;
  std::vector<Turn> turns_;
  size_t next_ = 0;
};

// The item's own fields, after "type"; the script's item is `item`, its type `type`.
struct ItemContext {
  const rapidjson::Value& item;
  std::string_view type;
  int turn;
  int index;
};
using ItemWriter = Status (*)(JsonWriter& w, const ItemContext& c);

Status WriteMessage(JsonWriter& w, const ItemContext& c) {
  auto text = RequiredString(c.item, "text", c.type);
  if (!text) return text.error();
  WriteAssistantContent(w, *text);
  if (const rapidjson::Value* phase = FindJsonMember(c.item, "phase"); phase && phase->IsString()) {
    w.Key("phase");
    w.String(phase->GetString());
  }
  return {};
}

// "summary": one string or an array of them.
Result<std::vector<std::string>> SummaryParts(const rapidjson::Value& item) {
  const rapidjson::Value* summary = FindJsonMember(item, "summary");
  std::vector<std::string> parts;
  if (summary && summary->IsString()) {
    parts.emplace_back(summary->GetString(), summary->GetStringLength());
  } else if (summary && summary->IsArray()) {
    for (const auto& p : summary->GetArray()) {
      if (!p.IsString()) return MakeError("reasoning \"summary\" must hold strings");
      parts.emplace_back(p.GetString(), p.GetStringLength());
    }
  } else if (summary) {
    return MakeError("reasoning \"summary\" must be a string or an array of strings");
  }
  return parts;
}

Status WriteReasoning(JsonWriter& w, const ItemContext& c) {
  Result<std::vector<std::string>> parts = SummaryParts(c.item);
  if (!parts) return parts.error();
  w.Key("summary");
  w.StartArray();
  for (const auto& p : *parts) {
    w.StartObject();
    w.Key("type");
    w.String("summary_text");
    w.Key("text");
    w.String(p);
    w.EndObject();
  }
  w.EndArray();
  if (const rapidjson::Value* enc = FindJsonMember(c.item, "encrypted_content");
      enc && enc->IsString()) {
    w.Key("encrypted_content");
    w.String(enc->GetString());
  }
  return {};
}

Status WriteFunctionCall(JsonWriter& w, const ItemContext& c) {
  auto name = RequiredString(c.item, "name", c.type);
  if (!name) return name.error();
  const rapidjson::Value* args = FindJsonMember(c.item, "arguments");
  std::string arguments = "{}";
  if (args && args->IsString()) {
    arguments.assign(args->GetString(), args->GetStringLength());
  } else if (args) {
    arguments = ToJson(*args);
  }
  w.Key("name");
  w.String(*name);
  w.Key("arguments");
  w.String(arguments);
  w.Key("call_id");
  w.String(CallId(c.item, c.turn, c.index));
  return {};
}

Status WriteCustomToolCall(JsonWriter& w, const ItemContext& c) {
  auto name = RequiredString(c.item, "name", c.type);
  if (!name) return name.error();
  auto input = RequiredString(c.item, "input", c.type);
  if (!input) return input.error();
  w.Key("call_id");
  w.String(CallId(c.item, c.turn, c.index));
  w.Key("name");
  w.String(*name);
  w.Key("input");
  w.String(*input);
  return {};
}

Status WriteWebSearchCall(JsonWriter& w, const ItemContext& c) {
  auto query = RequiredString(c.item, "query", c.type);
  if (!query) return query.error();
  w.Key("status");
  w.String("completed");
  w.Key("action");
  w.StartObject();
  w.Key("type");
  w.String("search");
  w.Key("query");
  w.String(*query);
  w.EndObject();
  return {};
}

constexpr struct {
  std::string_view type;
  ItemWriter write;
} kItemWriters[] = {
    {"message", WriteMessage},
    {"reasoning", WriteReasoning},
    {"function_call", WriteFunctionCall},
    {"custom_tool_call", WriteCustomToolCall},
    {"web_search_call", WriteWebSearchCall},
};

}  // namespace

Result<std::string> ScriptedItemJson(const rapidjson::Value& item, int turn, int index) {
  if (!item.IsObject()) return MakeError("an item must be a JSON object");
  const rapidjson::Value* type_v = FindJsonMember(item, "type");
  if (!type_v || !type_v->IsString()) return MakeError("an item needs a string \"type\"");
  std::string type = type_v->GetString();
  for (const auto& writer : kItemWriters) {
    if (writer.type != type) continue;
    JsonWriter w;
    w.StartObject();
    w.Key("type");
    w.String(type);
    if (Status written = writer.write(w, ItemContext{item, type, turn, index}); !written.ok()) {
      return written.error();
    }
    w.EndObject();
    return w.Take();
  }
  return MakeError(
      fmt::format("unknown item type `{}` (expected message, reasoning, function_call, "
                  "custom_tool_call or web_search_call)",
                  type));
}

Result<std::unique_ptr<ModelClient>> MakeScriptedClient(const ProviderInfo& provider) {
  const std::string& path = provider.script;
  if (path.empty()) {
    return MakeError(fmt::format(
        "scripted provider `{}` has no script: set model_providers.{}.script to a turns file",
        provider.id, provider.id));
  }
  // Named by the user's config, like a flag's file: a pipe is read as it is.
  Result<std::string> read = ReadNamedFile(path);
  if (!read.ok()) {
    return MakeError(fmt::format("scripted provider: cannot read {}: {}", path, read.message()));
  }
  std::string text = std::move(*read);
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(text, &doc)) {
    return MakeError(fmt::format("scripted provider: cannot parse {}: offset {}: {}", path,
                                 bad->offset, bad->reason));
  }
  const rapidjson::Value* turns = FindJsonMember(doc, "turns");
  if (!turns || !turns->IsArray()) {
    return MakeError(
        fmt::format("scripted provider: {}: expected an object with a \"turns\" array", path));
  }
  std::vector<Turn> out;
  int turn_no = 0;
  for (const auto& t : turns->GetArray()) {
    ++turn_no;
    Turn turn;
    auto bad = [&](const std::string& why) {
      return MakeError(fmt::format("scripted provider: {}: turn {}: {}", path, turn_no, why));
    };
    if (!t.IsObject()) return bad("a turn must be a JSON object");
    if (const rapidjson::Value* fail = FindJsonMember(t, "fail")) {
      if (!fail->IsString()) return bad("\"fail\" must be a string");
      turn.fail = fail->GetString();
      out.push_back(std::move(turn));
      continue;
    }
    const rapidjson::Value* items = FindJsonMember(t, "items");
    if (!items || !items->IsArray()) return bad("expected an \"items\" array or \"fail\"");
    int index = 0;
    for (const auto& item : items->GetArray()) {
      auto json = ScriptedItemJson(item, turn_no, index);
      if (!json) return bad(fmt::format("item {}: {}", index, json.message()));
      auto parsed = ParseOutputItem(*json);
      if (!parsed) return bad(fmt::format("item {}: {}", index, parsed.message()));
      turn.items.push_back(std::move(*parsed));
      ++index;
    }
    const rapidjson::Value* usage = FindJsonMember(t, "usage");
    turn.usage.input_tokens = IntAt(usage, "input_tokens");
    turn.usage.cached_input_tokens = IntAt(usage, "cached_input_tokens");
    turn.usage.output_tokens = IntAt(usage, "output_tokens");
    turn.usage.reasoning_output_tokens = IntAt(usage, "reasoning_output_tokens");
    out.push_back(std::move(turn));
  }
  return std::unique_ptr<ModelClient>(std::make_unique<ScriptedClient>(path, std::move(out)));
}

}  // namespace ae
