#include "engine/model/items.h"

#include <fmt/format.h>

#include "base/json.h"

namespace ae {
namespace {

// Appends the `text` of every part in `parts` whose type is one of the accepted ones.
void JoinTexts(const rapidjson::Value& v, const char* array, std::string_view sep,
               std::string* out) {
  auto it = v.FindMember(array);
  if (it == v.MemberEnd() || !it->value.IsArray()) return;
  bool first = true;
  for (const auto& part : it->value.GetArray()) {
    if (!part.IsObject()) continue;
    std::string type = StringMember(part, "type");
    if (type != "output_text" && type != "summary_text" && type != "text") continue;
    if (!first) out->append(sep);
    out->append(StringMember(part, "text"));
    first = false;
  }
}

}  // namespace

OutputItem::Kind ItemKindOf(std::string_view type) {
  if (type == "message") return OutputItem::Kind::kMessage;
  if (type == "reasoning") return OutputItem::Kind::kReasoning;
  if (type == "function_call") return OutputItem::Kind::kFunctionCall;
  if (type == "custom_tool_call") return OutputItem::Kind::kCustomToolCall;
  if (type == "web_search_call") return OutputItem::Kind::kWebSearchCall;
  return OutputItem::Kind::kOther;
}

Result<OutputItem> ParseOutputItemValue(const rapidjson::Value& v) {
  if (!v.IsObject()) return MakeError("output item is not a JSON object");
  auto type_it = v.FindMember("type");
  if (type_it == v.MemberEnd() || !type_it->value.IsString()) {
    return MakeError("output item has no \"type\"");
  }
  std::string_view type(type_it->value.GetString(), type_it->value.GetStringLength());
  OutputItem item;
  item.raw_json = ToJson(v);
  item.kind = ItemKindOf(type);
  if (item.kind == OutputItem::Kind::kMessage) {
    JoinTexts(v, "content", "", &item.text);
    item.phase = StringMember(v, "phase");
  } else if (item.kind == OutputItem::Kind::kReasoning) {
    JoinTexts(v, "summary", "\n", &item.text);
  } else if (item.kind == OutputItem::Kind::kFunctionCall) {
    item.name = StringMember(v, "name");
    item.call_id = StringMember(v, "call_id");
    auto args = v.FindMember("arguments");
    if (args != v.MemberEnd()) {
      item.arguments = args->value.IsString()
                           ? std::string(args->value.GetString(), args->value.GetStringLength())
                           : ToJson(args->value);
    }
  } else if (item.kind == OutputItem::Kind::kCustomToolCall) {
    item.name = StringMember(v, "name");
    item.call_id = StringMember(v, "call_id");
    item.arguments = StringMember(v, "input");
  } else if (item.kind == OutputItem::Kind::kWebSearchCall) {
    auto action = v.FindMember("action");
    if (action != v.MemberEnd() && action->value.IsObject()) {
      const rapidjson::Value& a = action->value;
      item.query = StringMember(a, "query");
      const std::string type = StringMember(a, "type");
      // Only the kinds codex knows, so the event schema stays closed; anything else is "other".
      if (type == "search" || type == "open_page" || type == "find_in_page") {
        item.search_action.type = type;
      }
      if (type == "search") item.search_action.query = item.query;
      if (type == "open_page" || type == "find_in_page") {
        item.search_action.url = StringMember(a, "url");
      }
      if (type == "find_in_page") item.search_action.pattern = StringMember(a, "pattern");
    }
    if (item.query.empty()) item.query = StringMember(v, "query");
    if (item.search_action.type == "other" && !item.query.empty()) {
      item.search_action.type = "search";  // an item with only a query (older servers)
      item.search_action.query = item.query;
    }
  }
  return item;
}

void WriteAssistantContent(JsonWriter& w, std::string_view text) {
  w.Key("role");
  w.String("assistant");
  w.Key("content");
  w.StartArray();
  w.StartObject();
  w.Key("type");
  w.String("output_text");
  w.Key("text");
  w.String(text);
  w.EndObject();
  w.EndArray();
}

std::string AssistantMessageJson(std::string_view text) {
  JsonWriter w;
  w.StartObject();
  w.Key("type");
  w.String("message");
  WriteAssistantContent(w, text);
  w.EndObject();
  return std::string(w.view());
}

Result<OutputItem> ParseOutputItem(std::string_view json) {
  Result<rapidjson::Document> doc = ParseJson(json, "output item");
  if (!doc.ok()) return doc.error();
  return ParseOutputItemValue(*doc);
}

}  // namespace ae
