#include "engine/model/request.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ae {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Key(Writer& w, std::string_view k) {
  w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}
void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void Raw(Writer& w, std::string_view json, rapidjson::Type type) {
  w.RawValue(json.data(), json.size(), type);
}

std::string StringMember(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return {};
  auto it = v.FindMember(name);
  if (it == v.MemberEnd() || !it->value.IsString()) return {};
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

// Text of a content value: a string, or an array of parts whose text is joined.
std::string ContentText(const rapidjson::Value& content) {
  if (content.IsString()) return std::string(content.GetString(), content.GetStringLength());
  std::string out;
  if (!content.IsArray()) return out;
  for (const auto& part : content.GetArray()) out += StringMember(part, "text");
  return out;
}

bool HasImages(const rapidjson::Value& content) {
  if (!content.IsArray()) return false;
  for (const auto& part : content.GetArray()) {
    if (StringMember(part, "type") == "input_image") return true;
  }
  return false;
}

struct ChatToolCall {
  std::string id, name, arguments;
};
struct ChatMessage {
  std::string role;
  std::string content;
  std::string content_parts_json;  // set instead of content when images are attached
  std::vector<ChatToolCall> tool_calls;
  std::string tool_call_id;
};

Result<rapidjson::Document> ParseJson(std::string_view json, std::string_view what) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return MakeError(fmt::format("{} is not valid JSON (offset {}: {})", what, doc.GetErrorOffset(),
                                 rapidjson::GetParseError_En(doc.GetParseError())));
  }
  return doc;
}

std::string ImagePartsJson(const rapidjson::Value& content) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartArray();
  for (const auto& part : content.GetArray()) {
    std::string type = StringMember(part, "type");
    if (type == "input_image") {
      w.StartObject();
      Key(w, "type");
      Str(w, "image_url");
      Key(w, "image_url");
      w.StartObject();
      Key(w, "url");
      Str(w, StringMember(part, "image_url"));
      w.EndObject();
      w.EndObject();
    } else if (part.IsObject() && part.HasMember("text")) {
      w.StartObject();
      Key(w, "type");
      Str(w, "text");
      Key(w, "text");
      Str(w, StringMember(part, "text"));
      w.EndObject();
    }
  }
  w.EndArray();
  return std::string(buf.GetString(), buf.GetSize());
}

Result<std::vector<ChatMessage>> MapHistory(const Prompt& prompt) {
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < prompt.input.size(); ++i) {
    auto doc = ParseJson(prompt.input[i], fmt::format("history item {}", i));
    if (!doc) return doc.error();
    const rapidjson::Value& item = *doc;
    std::string type = StringMember(item, "type");
    if (type.empty() && item.IsObject() && item.HasMember("role")) type = "message";
    if (type == "message") {
      ChatMessage m;
      m.role = StringMember(item, "role");
      if (m.role == "developer") m.role = "system";
      auto content = item.FindMember("content");
      if (content != item.MemberEnd()) {
        if (m.role == "user" && HasImages(content->value)) {
          m.content_parts_json = ImagePartsJson(content->value);
        } else {
          m.content = ContentText(content->value);
        }
      }
      out.push_back(std::move(m));
    } else if (type == "function_call" || type == "custom_tool_call") {
      ChatToolCall call{StringMember(item, "call_id"), StringMember(item, "name"), {}};
      if (type == "function_call") {
        auto args = item.FindMember("arguments");
        if (args != item.MemberEnd()) {
          call.arguments =
              args->value.IsString() ? StringMember(item, "arguments") : Compact(args->value);
        }
      } else {
        rapidjson::StringBuffer buf;
        Writer w(buf);
        w.StartObject();
        Key(w, "input");
        Str(w, StringMember(item, "input"));
        w.EndObject();
        call.arguments.assign(buf.GetString(), buf.GetSize());
      }
      // Calls join the assistant message right before them, as one chat turn.
      if (out.empty() || out.back().role != "assistant") {
        ChatMessage m;
        m.role = "assistant";
        out.push_back(std::move(m));
      }
      out.back().tool_calls.push_back(std::move(call));
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      ChatMessage m;
      m.role = "tool";
      m.tool_call_id = StringMember(item, "call_id");
      auto output = item.FindMember("output");
      if (output != item.MemberEnd()) m.content = ContentText(output->value);
      out.push_back(std::move(m));
    }
    // Reasoning, web_search_call and other items have no chat form.
  }
  return out;
}

void WriteChatTools(Writer& w, const rapidjson::Value& tools) {
  for (const auto& tool : tools.GetArray()) {
    std::string type = StringMember(tool, "type");
    if (type != "function" && type != "custom") continue;
    w.StartObject();
    Key(w, "type");
    Str(w, "function");
    Key(w, "function");
    w.StartObject();
    Key(w, "name");
    Str(w, StringMember(tool, "name"));
    if (tool.HasMember("description")) {
      Key(w, "description");
      Str(w, StringMember(tool, "description"));
    }
    Key(w, "parameters");
    auto params = tool.FindMember("parameters");
    if (type == "function" && params != tool.MemberEnd()) {
      params->value.Accept(w);
    } else if (type == "function") {
      Raw(w, R"({"type":"object","properties":{}})", rapidjson::kObjectType);
    } else {
      Raw(w,
          R"({"type":"object","properties":{"input":{"type":"string","description":"The free-form input of the tool."}},"required":["input"],"additionalProperties":false})",
          rapidjson::kObjectType);
    }
    w.EndObject();
    w.EndObject();
  }
}

size_t CountChatTools(const rapidjson::Value& tools) {
  size_t n = 0;
  for (const auto& tool : tools.GetArray()) {
    std::string type = StringMember(tool, "type");
    if (type == "function" || type == "custom") ++n;
  }
  return n;
}

}  // namespace

std::vector<bool> ReplayableItems(const std::vector<std::string>& input) {
  const size_t n = input.size();
  std::vector<bool> keep(n, true);
  std::vector<bool> reasoning(n, false);
  // The type of item i ("input_message" for a message not from the assistant).
  auto parse = [&](size_t i, bool* encrypted) {
    *encrypted = false;
    rapidjson::Document doc;
    doc.Parse(input[i].data(), input[i].size());
    if (doc.HasParseError() || !doc.IsObject()) return std::string();
    std::string type = StringMember(doc, "type");
    if (type.empty() && doc.HasMember("role")) type = "message";
    if (type == "reasoning") {
      *encrypted = !StringMember(doc, "encrypted_content").empty();
    } else if (type == "message" && StringMember(doc, "role") != "assistant") {
      type = "input_message";
    }
    return type;
  };
  auto is_output = [](const std::string& type) {
    return type == "message" || type == "function_call" || type == "custom_tool_call" ||
           type == "web_search_call" || type == "local_shell_call";
  };
  // Only items holding `"type":"reasoning"` outside a string are parsed (inside a JSON string
  // the quotes are escaped), and their successors: the usual history costs one substring
  // search an item. Backwards, so a reasoning item sees the decision made for the next one.
  for (size_t i = n; i-- > 0;) {
    if (input[i].find("\"type\":\"reasoning\"") == std::string::npos) continue;
    bool encrypted = false;
    if (parse(i, &encrypted) != "reasoning") continue;
    reasoning[i] = true;
    bool followed = false;
    if (i + 1 < n) {
      bool unused = false;
      followed = reasoning[i + 1] ? keep[i + 1] : is_output(parse(i + 1, &unused));
    }
    keep[i] = encrypted && followed;
  }
  return keep;
}

std::string BuildResponsesRequest(const ModelOptions& options, const Prompt& prompt) {
  rapidjson::StringBuffer buf;
  size_t reserve = 512 + prompt.tools_json.size();
  for (const auto& item : prompt.input) reserve += item.size() + 1;
  buf.Reserve(reserve);
  const std::vector<bool> keep = ReplayableItems(prompt.input);
  Writer w(buf);
  w.StartObject();
  Key(w, "model");
  Str(w, options.model);
  Key(w, "stream");
  w.Bool(true);
  Key(w, "input");
  w.StartArray();
  for (size_t i = 0; i < prompt.input.size(); ++i) {
    if (keep[i]) Raw(w, prompt.input[i], rapidjson::kObjectType);
  }
  w.EndArray();
  Key(w, "tools");
  Raw(w, prompt.tools_json.empty() ? std::string_view("[]") : std::string_view(prompt.tools_json),
      rapidjson::kArrayType);
  Key(w, "tool_choice");
  Str(w, "auto");
  Key(w, "parallel_tool_calls");
  w.Bool(options.parallel_tool_calls);
  const bool reasoning = options.reasoning;
  if (reasoning && (!options.reasoning_effort.empty() || !options.reasoning_summary.empty())) {
    Key(w, "reasoning");
    w.StartObject();
    if (!options.reasoning_effort.empty()) {
      Key(w, "effort");
      Str(w, options.reasoning_effort);
    }
    if (!options.reasoning_summary.empty()) {
      Key(w, "summary");
      Str(w, options.reasoning_summary);
    }
    w.EndObject();
  }
  Key(w, "store");
  w.Bool(false);
  // store is false, so the reasoning items come back only with their encrypted content;
  // without it a later request could not replay them (the service looks an id up and 404s).
  if (reasoning) {
    Key(w, "include");
    w.StartArray();
    Str(w, "reasoning.encrypted_content");
    w.EndArray();
  }
  if (!prompt.prompt_cache_key.empty()) {
    Key(w, "prompt_cache_key");
    Str(w, prompt.prompt_cache_key);
  }
  if (!options.verbosity.empty() || prompt.output_schema_json) {
    Key(w, "text");
    w.StartObject();
    if (!options.verbosity.empty()) {
      Key(w, "verbosity");
      Str(w, options.verbosity);
    }
    if (prompt.output_schema_json) {
      Key(w, "format");
      w.StartObject();
      Key(w, "type");
      Str(w, "json_schema");
      Key(w, "strict");
      w.Bool(true);
      Key(w, "schema");
      Raw(w, *prompt.output_schema_json, rapidjson::kObjectType);
      Key(w, "name");
      Str(w, kOutputSchemaName);
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

Result<std::string> BuildChatRequest(const ModelOptions& options, const Prompt& prompt) {
  auto messages = MapHistory(prompt);
  if (!messages) return messages.error();
  auto tools = ParseJson(prompt.tools_json.empty() ? "[]" : prompt.tools_json, "tools");
  if (!tools) return tools.error();
  if (!tools->IsArray()) return MakeError("tools is not a JSON array");

  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  Key(w, "model");
  Str(w, options.model);
  Key(w, "messages");
  w.StartArray();
  for (const ChatMessage& m : *messages) {
    w.StartObject();
    Key(w, "role");
    Str(w, m.role);
    Key(w, "content");
    if (!m.content_parts_json.empty()) {
      Raw(w, m.content_parts_json, rapidjson::kArrayType);
    } else if (m.content.empty() && !m.tool_calls.empty()) {
      w.Null();  // an assistant turn that only calls tools
    } else {
      Str(w, m.content);
    }
    if (!m.tool_calls.empty()) {
      Key(w, "tool_calls");
      w.StartArray();
      for (const ChatToolCall& c : m.tool_calls) {
        w.StartObject();
        Key(w, "id");
        Str(w, c.id);
        Key(w, "type");
        Str(w, "function");
        Key(w, "function");
        w.StartObject();
        Key(w, "name");
        Str(w, c.name);
        Key(w, "arguments");
        Str(w, c.arguments);
        w.EndObject();
        w.EndObject();
      }
      w.EndArray();
    }
    if (m.role == "tool") {
      Key(w, "tool_call_id");
      Str(w, m.tool_call_id);
    }
    w.EndObject();
  }
  w.EndArray();
  Key(w, "stream");
  w.Bool(true);
  Key(w, "stream_options");
  w.StartObject();
  Key(w, "include_usage");
  w.Bool(true);
  w.EndObject();
  if (CountChatTools(*tools) > 0) {
    Key(w, "tools");
    w.StartArray();
    WriteChatTools(w, *tools);
    w.EndArray();
    Key(w, "tool_choice");
    Str(w, "auto");
    Key(w, "parallel_tool_calls");
    w.Bool(options.parallel_tool_calls);
  }
  if (!options.reasoning_effort.empty()) {
    Key(w, "reasoning_effort");
    Str(w, options.reasoning_effort);
  }
  if (prompt.output_schema_json) {
    Key(w, "response_format");
    w.StartObject();
    Key(w, "type");
    Str(w, "json_schema");
    Key(w, "json_schema");
    w.StartObject();
    Key(w, "name");
    Str(w, kOutputSchemaName);
    Key(w, "strict");
    w.Bool(true);
    Key(w, "schema");
    Raw(w, *prompt.output_schema_json, rapidjson::kObjectType);
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ae
