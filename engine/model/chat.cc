#include "engine/model/chat.h"

#include <map>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

#include "engine/model/http.h"
#include "engine/model/items.h"
#include "engine/model/request.h"

namespace ae {
namespace {

const rapidjson::Value* Member(const rapidjson::Value* v, const char* name) {
  if (!v || !v->IsObject()) return nullptr;
  auto it = v->FindMember(name);
  return it == v->MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

OutputItem MakeItem(const std::string& json) {
  auto item = ParseOutputItem(json);
  return item ? std::move(*item) : OutputItem{};
}

class ChatDecoder : public StreamDecoder {
 public:
  explicit ChatDecoder(StreamObserver& observer) : observer_(observer) {}

  Status OnEvent(SseEvent& event, bool* /*fatal*/) override {
    if (done_) return {};
    if (event.data == "[DONE]") {
      done_ = true;
      return {};
    }
    rapidjson::Document doc;
    std::optional<JsonParseError> bad = ParseJsonInto(event.data, &doc);
    if (bad || !doc.IsObject()) {
      return MakeError(fmt::format("malformed JSON in server-sent event (offset {}: {})",
                                   bad ? bad->offset : 0, bad ? bad->reason : "not an object"));
    }
    if (const rapidjson::Value* err = Member(&doc, "error")) {
      std::string message = err->IsString() ? err->GetString() : StringMember(err, "message");
      std::string code = StringMember(err, "code");
      if (code.empty()) code = StringMember(err, "type");
      return ModelError(message.empty() ? "the server reported an error" : message,
                        ServiceErrorCode(code));
    }
    if (std::string id = StringMember(&doc, "id"); !id.empty()) id_ = id;
    if (const rapidjson::Value* usage = Member(&doc, "usage"); usage && usage->IsObject()) {
      usage_.input_tokens = Int64Member(usage, "prompt_tokens");
      usage_.cached_input_tokens =
          Int64Member(Member(usage, "prompt_tokens_details"), "cached_tokens");
      usage_.output_tokens = Int64Member(usage, "completion_tokens");
      usage_.reasoning_output_tokens =
          Int64Member(Member(usage, "completion_tokens_details"), "reasoning_tokens");
    }
    const rapidjson::Value* choices = Member(&doc, "choices");
    if (!choices || !choices->IsArray() || choices->Empty()) return {};
    const rapidjson::Value& choice = (*choices)[0];
    if (!StringMember(&choice, "finish_reason").empty()) finished_ = true;
    const rapidjson::Value* delta = Member(&choice, "delta");
    if (!delta) delta = Member(&choice, "message");  // servers that send whole messages
    if (!delta) return {};
    if (std::string text = StringMember(delta, "content"); !text.empty()) {
      text_ += text;
      observer_.OnTextDelta(text);
    }
    reasoning_ += StringMember(delta, "reasoning_content");
    reasoning_ += StringMember(delta, "reasoning");
    if (const rapidjson::Value* calls = Member(delta, "tool_calls"); calls && calls->IsArray()) {
      if (!calls->Empty()) observer_.OnToolCallAhead();
      for (const auto& call : calls->GetArray()) {
        int64_t index = Member(&call, "index") && call["index"].IsInt64()
                            ? call["index"].GetInt64()
                            : static_cast<int64_t>(calls_.size());
        ToolCall& tc = calls_[index];
        if (std::string id = StringMember(&call, "id"); !id.empty()) tc.id = id;
        const rapidjson::Value* fn = Member(&call, "function");
        // Names arrive once, in pieces, or (some servers) repeated whole in every chunk.
        if (std::string name = StringMember(fn, "name"); name != tc.name) tc.name += name;
        const rapidjson::Value* args = Member(fn, "arguments");
        if (args && args->IsString()) {
          tc.arguments.append(args->GetString(), args->GetStringLength());
        } else if (args) {
          tc.arguments += ToJson(*args);
        }
      }
    }
    return {};
  }

  // Some servers end the stream after finish_reason without [DONE]; that is complete too,
  // but only once the body ended, so usage that follows finish_reason is still read.
  bool complete() const override { return done_; }
  void OnCleanEnd() override { done_ = done_ || finished_; }
  std::string incomplete_reason() const override { return "stream closed before [DONE]"; }

  ModelResponse TakeResponse() override {
    ModelResponse r;
    r.id = id_;
    r.usage = usage_;
    if (!reasoning_.empty()) {
      JsonWriter w;
      w.StartObject();
      w.Key("type");
      w.String("reasoning");
      w.Key("summary");
      w.StartArray();
      w.StartObject();
      w.Key("type");
      w.String("summary_text");
      w.Key("text");
      w.String(reasoning_);
      w.EndObject();
      w.EndArray();
      w.EndObject();
      r.items.push_back(MakeItem(std::string(w.view())));
    }
    if (!text_.empty()) r.items.push_back(MakeItem(AssistantMessageJson(text_)));
    for (auto& [index, call] : calls_) {
      JsonWriter w;
      w.StartObject();
      w.Key("type");
      w.String("function_call");
      w.Key("name");
      w.String(call.name);
      w.Key("arguments");
      w.String(call.arguments.empty() ? std::string("{}") : call.arguments);
      w.Key("call_id");
      w.String(call.id.empty() ? fmt::format("call_{}", index) : call.id);
      w.EndObject();
      r.items.push_back(MakeItem(std::string(w.view())));
    }
    return r;
  }

 private:
  struct ToolCall {
    std::string id, name, arguments;
  };
  StreamObserver& observer_;
  std::string id_, text_, reasoning_;
  std::map<int64_t, ToolCall> calls_;
  Usage usage_;
  bool done_ = false;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<StreamDecoder> MakeChatDecoder(StreamObserver& observer) {
  return std::make_unique<ChatDecoder>(observer);
}

WireSpec ChatWire() {
  // No compaction endpoint: the history is summarised with a normal request.
  return {.path = "/chat/completions",
          .build_request = BuildChatRequest,
          .make_decoder = MakeChatDecoder};
}

}  // namespace ae
