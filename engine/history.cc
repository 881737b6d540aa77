#include "engine/history.h"

#include "base/json.h"

namespace ae {
namespace {

using Writer = JsonWriter;

std::string MessageWithImages(const std::string& role, const std::string& text,
                              const std::vector<std::string>& image_urls) {
  Writer w;
  w.StartObject();
  w.Key("type"), w.String("message");
  w.Key("role"), w.String(role);
  w.Key("content");
  w.StartArray();
  w.StartObject();
  w.Key("type"), w.String("input_text");
  w.Key("text"), w.String(text);
  w.EndObject();
  for (const std::string& url : image_urls) {
    w.StartObject();
    w.Key("type"), w.String("input_image");
    w.Key("image_url"), w.String(url);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(w.view());
}

}  // namespace

std::string MessageInputItem(const std::string& role, const std::string& text) {
  return MessageWithImages(role, text, {});
}

std::string UserInputItem(const std::string& text, const std::vector<std::string>& image_urls) {
  return MessageWithImages("user", text, image_urls);
}

std::string ToolOutputItem(const std::string& call_id, const std::string& output, bool custom) {
  Writer w;
  w.StartObject();
  w.Key("type"), w.String(custom ? "custom_tool_call_output" : "function_call_output");
  w.Key("call_id"), w.String(call_id);
  w.Key("output"), w.String(output);
  w.EndObject();
  return std::string(w.view());
}

}  // namespace ae
