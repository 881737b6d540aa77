#include "engine/mcp/mcp_tool.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"
#include "engine/mcp/sha1.h"

namespace ae {
namespace {

constexpr size_t kMaxToolNameLength = 64;

const char* JsonTypeName(const rapidjson::Value& v) {
  if (v.IsArray()) return "an array";
  if (v.IsString()) return "a string";
  if (v.IsNumber()) return "a number";
  if (v.IsBool()) return "a boolean";
  if (v.IsNull()) return "null";
  return "an object";
}

// The model's arguments as the JSON object to send: empty when there are none.
Result<std::string> ParseArguments(const std::string& input) {
  if (input.find_first_not_of(" \t\r\n") == std::string::npos) return std::string();
  rapidjson::Document d;
  if (std::optional<JsonParseError> bad = ParseJsonInto(input, &d)) {
    std::string what = bad->reason;
    if (!what.empty() && what.back() == '.') what.pop_back();
    return MakeError(
        fmt::format("arguments are not valid JSON: {} at offset {}", what, bad->offset));
  }
  if (!d.IsObject()) {
    return MakeError(fmt::format("arguments must be a JSON object, not {}", JsonTypeName(d)));
  }
  return ToJson(d);
}

}  // namespace

std::string QualifiedToolName(const std::string& server, const std::string& tool) {
  std::string raw = "mcp__" + server + "__" + tool;
  std::string name;
  for (char c : raw) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    name.push_back(ok ? c : '_');
  }
  if (name.size() > kMaxToolNameLength) {
    std::string hash = Sha1Hex(raw);
    name = name.substr(0, kMaxToolNameLength - hash.size()) + hash;
  }
  return name;
}

std::string McpModelOutput(const McpCallResult& result) {
  if (result.structured_json) return *result.structured_json;
  rapidjson::Document d;
  if (ParseJsonInto(result.content_json, &d) || !d.IsArray()) {
    return result.content_json;
  }
  std::string out;
  for (const rapidjson::Value& block : d.GetArray()) {
    if (!out.empty()) out += '\n';
    std::string type = block.IsObject() && block.HasMember("type") && block["type"].IsString()
                           ? block["type"].GetString()
                           : "";
    if (type == "text" && block.HasMember("text") && block["text"].IsString()) {
      out.append(block["text"].GetString(), block["text"].GetStringLength());
    } else if (type == "image" || type == "audio") {
      // Our tool output is text only; a base64 blob would only burn the model's context.
      std::string mime = block.HasMember("mimeType") && block["mimeType"].IsString()
                             ? block["mimeType"].GetString()
                             : "unknown type";
      out += fmt::format("[{} content ({}) not shown]", type, mime);
    } else {
      out += ToJson(block);
    }
  }
  return out;
}

McpToolHandler::McpToolHandler(std::shared_ptr<McpClient> client, McpTool tool,
                               std::string qualified_name, int64_t timeout_ms)
    : client_(std::move(client)),
      tool_(std::move(tool)),
      qualified_name_(std::move(qualified_name)),
      timeout_ms_(timeout_ms) {}

std::string McpToolHandler::spec_json() const {
  rapidjson::Document schema;
  if (ParseJsonInto(tool_.input_schema_json, &schema) || !schema.IsObject()) schema.SetObject();
  auto& a = schema.GetAllocator();
  // The Responses API rejects an object schema without properties.
  if (!schema.HasMember("type")) schema.AddMember("type", "object", a);
  if (schema["type"].IsString() && std::string(schema["type"].GetString()) == "object" &&
      !schema.HasMember("properties")) {
    schema.AddMember("properties", rapidjson::Value(rapidjson::kObjectType), a);
  }

  JsonWriter w;
  w.StartObject();
  w.Key("type"), w.String("function");
  w.Key("name"), w.String(qualified_name_.c_str());
  w.Key("description"), w.String(tool_.description.c_str());
  w.Key("strict"), w.Bool(false);
  w.Key("parameters"), w.Value(schema);
  w.EndObject();
  return std::string(w.view());
}

ToolResult McpToolHandler::Handle(const ToolCall& call, ToolEnv& env) {
  ToolResult out;
  McpToolCallItem item;
  item.server = client_->name();
  item.tool = tool_.name;

  Result<std::string> args = ParseArguments(call.input);
  item.arguments_json = !args.ok() ? call.input : args->empty() ? "null" : *args;
  std::string id = env.emitter.Start(item);

  Result<McpCallResult> called =
      args.ok() ? client_->CallTool(tool_.name, *args, timeout_ms_, &env.cancel)
                : Result<McpCallResult>(args.error());
  if (!called.ok()) {
    item.error_message = called.message();
    item.status = ItemStatus::kFailed;
    env.emitter.Complete(id, item);
    // As codex: an error becomes a text block "tool call error: ..." for the model.
    out.output = "tool call error: " + called.message();
    out.success = false;
    return out;
  }
  item.result_content_json = called->content_json;
  item.result_structured_json = called->structured_json;
  item.status = called->is_error ? ItemStatus::kFailed : ItemStatus::kCompleted;
  env.emitter.Complete(id, item);
  out.output = McpModelOutput(*called);
  out.success = !called->is_error;
  return out;
}

}  // namespace ae
