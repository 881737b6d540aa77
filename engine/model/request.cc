#include "engine/model/request.h"

#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

namespace ae {
namespace {

using Writer = JsonWriter;

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

std::string ImagePartsJson(const rapidjson::Value& content) {
  Writer w;
  w.StartArray();
  for (const auto& part : content.GetArray()) {
    std::string type = StringMember(part, "type");
    if (type == "input_image") {
      w.StartObject();
      w.Key("type");
      w.String("image_url");
      w.Key("image_url");
      w.StartObject();
      w.Key("url");
      w.String(StringMember(part, "image_url"));
      w.EndObject();
      w.EndObject();
    } else if (part.IsObject() && part.HasMember("text")) {
      w.StartObject();
      w.Key("type");
      w.String("text");
      w.Key("text");
      w.String(StringMember(part, "text"));
      w.EndObject();
    }
  }
  w.EndArray();
  return std::string(w.view());
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
              args->value.IsString() ? StringMember(item, "arguments") : ToJson(args->value);
        }
      } else {
        Writer w;
        w.StartObject();
        w.Key("input");
        w.String(StringMember(item, "input"));
        w.EndObject();
        call.arguments = std::string(w.view());
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
    w.Key("type");
    w.String("function");
    w.Key("function");
    w.StartObject();
    w.Key("name");
    w.String(StringMember(tool, "name"));
    if (tool.HasMember("description")) {
      w.Key("description");
      w.String(StringMember(tool, "description"));
    }
    w.Key("parameters");
    auto params = tool.FindMember("parameters");
    if (type == "function" && params != tool.MemberEnd()) {
      w.Value(params->value);
    } else if (type == "function") {
      w.Raw(R"({"type":"object","properties":{}})");
    } else {
      w.Raw(
          R"({"type":"object","properties":{"input":{"type":"string","description":"The free-form input of the tool."}},"required":["input"],"additionalProperties":false})");
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
    if (ParseJsonInto(input[i], &doc) || !doc.IsObject()) return std::string();
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

namespace {

// Reserves the body's size and writes `"input":[…]`: the replayable history items, verbatim.
void WriteInput(Writer& w, const Prompt& prompt, size_t extra) {
  size_t reserve = extra;
  for (const auto& item : prompt.input) reserve += item.size() + 1;
  w.Reserve(reserve);
  const std::vector<bool> keep = ReplayableItems(prompt.input);
  w.Key("input");
  w.StartArray();
  for (size_t i = 0; i < prompt.input.size(); ++i) {
    if (keep[i]) w.Raw(prompt.input[i]);
  }
  w.EndArray();
}

}  // namespace

std::string BuildResponsesRequest(const ModelOptions& options, const Prompt& prompt) {
  Writer w;
  w.StartObject();
  w.Key("model");
  w.String(options.model);
  w.Key("stream");
  w.Bool(true);
  WriteInput(w, prompt, 512 + prompt.tools_json.size());
  w.Key("tools");
  w.Raw(prompt.tools_json.empty() ? std::string_view("[]") : std::string_view(prompt.tools_json));
  w.Key("tool_choice");
  w.String("auto");
  w.Key("parallel_tool_calls");
  w.Bool(options.parallel_tool_calls);
  const bool reasoning = options.reasoning;
  if (reasoning && (!options.reasoning_effort.empty() || !options.reasoning_summary.empty())) {
    w.Key("reasoning");
    w.StartObject();
    if (!options.reasoning_effort.empty()) {
      w.Key("effort");
      w.String(options.reasoning_effort);
    }
    if (!options.reasoning_summary.empty()) {
      w.Key("summary");
      w.String(options.reasoning_summary);
    }
    w.EndObject();
  }
  w.Key("store");
  w.Bool(false);
  // store is false, so the reasoning items come back only with their encrypted content;
  // without it a later request could not replay them (the service looks an id up and 404s).
  if (reasoning) {
    w.Key("include");
    w.StartArray();
    w.String("reasoning.encrypted_content");
    w.EndArray();
  }
  if (!prompt.prompt_cache_key.empty()) {
    w.Key("prompt_cache_key");
    w.String(prompt.prompt_cache_key);
  }
  if (!options.verbosity.empty() || prompt.output_schema_json) {
    w.Key("text");
    w.StartObject();
    if (!options.verbosity.empty()) {
      w.Key("verbosity");
      w.String(options.verbosity);
    }
    if (prompt.output_schema_json) {
      w.Key("format");
      w.StartObject();
      w.Key("type");
      w.String("json_schema");
      w.Key("strict");
      w.Bool(true);
      w.Key("schema");
      w.Raw(*prompt.output_schema_json);
      w.Key("name");
      w.String(kOutputSchemaName);
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(w.view());
}

std::string BuildCompactRequest(const ModelOptions& options, const Prompt& prompt) {
  Writer w;
  w.StartObject();
  w.Key("model");
  w.String(options.model);
  WriteInput(w, prompt, 256);
  if (!prompt.prompt_cache_key.empty()) {
    w.Key("prompt_cache_key");
    w.String(prompt.prompt_cache_key);
  }
  w.EndObject();
  return std::string(w.view());
}

namespace {

void WriteChatToolCalls(Writer& w, const std::vector<ChatToolCall>& calls) {
  w.Key("tool_calls");
  w.StartArray();
  for (const ChatToolCall& c : calls) {
    w.StartObject();
    w.Key("id");
    w.String(c.id);
    w.Key("type");
    w.String("function");
    w.Key("function");
    w.StartObject();
    w.Key("name");
    w.String(c.name);
    w.Key("arguments");
    w.String(c.arguments);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

void WriteChatMessage(Writer& w, const ChatMessage& m) {
  w.StartObject();
  w.Key("role");
  w.String(m.role);
  w.Key("content");
  if (!m.content_parts_json.empty()) {
    w.Raw(m.content_parts_json);
  } else if (m.content.empty() && !m.tool_calls.empty()) {
    w.Null();  // an assistant turn that only calls tools
  } else {
    w.String(m.content);
  }
  if (!m.tool_calls.empty()) WriteChatToolCalls(w, m.tool_calls);
  if (m.role == "tool") {
    w.Key("tool_call_id");
    w.String(m.tool_call_id);
  }
  w.EndObject();
}

void WriteChatResponseFormat(Writer& w, const std::string& schema_json) {
  w.Key("response_format");
  w.StartObject();
  w.Key("type");
  w.String("json_schema");
  w.Key("json_schema");
  w.StartObject();
  w.Key("name");
  w.String(kOutputSchemaName);
  w.Key("strict");
  w.Bool(true);
  w.Key("schema");
  w.Raw(schema_json);
  w.EndObject();
  w.EndObject();
}

}  // namespace

Result<std::string> BuildChatRequest(const ModelOptions& options, const Prompt& prompt) {
  auto messages = MapHistory(prompt);
  if (!messages) return messages.error();
  auto tools = ParseJson(prompt.tools_json.empty() ? "[]" : prompt.tools_json, "tools");
  if (!tools) return tools.error();
  if (!tools->IsArray()) return MakeError("tools is not a JSON array");

  Writer w;
  w.StartObject();
  w.Key("model");
  w.String(options.model);
  w.Key("messages");
  w.StartArray();
  for (const ChatMessage& m : *messages) WriteChatMessage(w, m);
  w.EndArray();
  w.Key("stream");
  w.Bool(true);
  w.Key("stream_options");
  w.StartObject();
  w.Key("include_usage");
  w.Bool(true);
  w.EndObject();
  if (CountChatTools(*tools) > 0) {
    w.Key("tools");
    w.StartArray();
    WriteChatTools(w, *tools);
    w.EndArray();
    w.Key("tool_choice");
    w.String("auto");
    w.Key("parallel_tool_calls");
    w.Bool(options.parallel_tool_calls);
  }
  if (!options.reasoning_effort.empty()) {
    w.Key("reasoning_effort");
    w.String(options.reasoning_effort);
  }
  if (prompt.output_schema_json) WriteChatResponseFormat(w, *prompt.output_schema_json);
  w.EndObject();
  return w.Take();
}

}  // namespace ae
