#include "engine/history.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/utf8.h"

namespace ae {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// Valid text (the usual case) is written as is; only invalid text pays for a cleaned copy.
void Str(Writer& w, const std::string& s) {
  if (IsValidUtf8(s)) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    return;
  }
  std::string clean = SanitizeUtf8(s);
  w.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
}

std::string MessageWithImages(const std::string& role, const std::string& text,
                              const std::vector<std::string>& image_urls) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("type"), w.String("message");
  w.Key("role"), Str(w, role);
  w.Key("content");
  w.StartArray();
  w.StartObject();
  w.Key("type"), w.String("input_text");
  w.Key("text"), Str(w, text);
  w.EndObject();
  for (const std::string& url : image_urls) {
    w.StartObject();
    w.Key("type"), w.String("input_image");
    w.Key("image_url"), Str(w, url);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

std::string MessageInputItem(const std::string& role, const std::string& text) {
  return MessageWithImages(role, text, {});
}

std::string UserInputItem(const std::string& text, const std::vector<std::string>& image_urls) {
  return MessageWithImages("user", text, image_urls);
}

std::string ToolOutputItem(const std::string& call_id, const std::string& output, bool custom) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("type"), w.String(custom ? "custom_tool_call_output" : "function_call_output");
  w.Key("call_id"), Str(w, call_id);
  w.Key("output"), Str(w, output);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ae
