#include "engine/model/responses.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

#include "engine/model/http.h"
#include "engine/model/items.h"
#include "engine/model/request.h"

namespace ae {
namespace {

std::string StringAt(const rapidjson::Value* v, const char* name) {
  const rapidjson::Value* m = v ? FindJsonMember(*v, name) : nullptr;
  return m && m->IsString() ? std::string(m->GetString(), m->GetStringLength()) : std::string();
}

int64_t IntAt(const rapidjson::Value* v, const char* name) {
  const rapidjson::Value* m = v ? FindJsonMember(*v, name) : nullptr;
  return m && m->IsInt64() ? m->GetInt64() : 0;
}

class ResponsesDecoder : public StreamDecoder {
 public:
  explicit ResponsesDecoder(StreamObserver& observer) : observer_(observer) {}

  Status OnEvent(SseEvent& event, bool* fatal) override {
    if (complete_ || event.data == "[DONE]") return {};
    rapidjson::Document doc;
    std::optional<JsonParseError> bad = ParseJsonInto(event.data, &doc);
    if (bad || !doc.IsObject()) {
      return MakeError(fmt::format("malformed JSON in server-sent event{} (offset {}: {})",
                                   event.event.empty() ? "" : " `" + event.event + "`",
                                   bad ? bad->offset : 0, bad ? bad->reason : "not an object"));
    }
    std::string type = StringAt(&doc, "type");
    if (type.empty()) type = event.event;
    if (type == "response.output_text.delta") {
      std::string delta = StringAt(&doc, "delta");
      if (!delta.empty()) observer_.OnTextDelta(delta);
    } else if (type == "response.output_item.done") {
      const rapidjson::Value* item = FindJsonMember(doc, "item");
      if (!item) return MakeError("response.output_item.done without an item");
      auto parsed = ParseOutputItemValue(*item);
      if (!parsed) return MakeError("response.output_item.done: " + parsed.message());
      response_.items.push_back(std::move(*parsed));
    } else if (type == "response.created") {
      response_.id = StringAt(FindJsonMember(doc, "response"), "id");
    } else if (type == "response.completed") {
      const rapidjson::Value* resp = FindJsonMember(doc, "response");
      if (resp) {
        if (std::string id = StringAt(resp, "id"); !id.empty()) response_.id = id;
        const rapidjson::Value* usage = FindJsonMember(*resp, "usage");
        if (usage) {
          response_.usage.input_tokens = IntAt(usage, "input_tokens");
          response_.usage.cached_input_tokens =
              IntAt(FindJsonMember(*usage, "input_tokens_details"), "cached_tokens");
          response_.usage.output_tokens = IntAt(usage, "output_tokens");
          response_.usage.reasoning_output_tokens =
              IntAt(FindJsonMember(*usage, "output_tokens_details"), "reasoning_tokens");
        }
      }
      complete_ = true;
    } else if (type == "response.failed" || type == "error") {
      const rapidjson::Value* err = FindJsonMember(doc, "error");
      if (!err)
        err = FindJsonMember(
            FindJsonMember(doc, "response") ? *FindJsonMember(doc, "response") : doc, "error");
      std::string message = StringAt(err, "message");
      if (message.empty()) message = StringAt(&doc, "message");
      if (message.empty()) message = type;
      // Retrying cannot fix these (codex treats them as final too).
      std::string code = StringAt(err, "code");
      if (code == "context_length_exceeded" || code == "insufficient_quota" ||
          code == "invalid_prompt") {
        *fatal = true;
      }
      if (code.empty()) code = StringAt(err, "type");
      if (code == "context_length_exceeded") {
        return ModelError(fmt::format("{} ({})", kContextWindowExceeded, message),
                          ErrorCode::kContextLength);
      }
      return ModelError(message, ServiceErrorCode(code));
    } else if (type == "response.incomplete") {
      std::string reason = StringAt(
          FindJsonMember(FindJsonMember(doc, "response") ? *FindJsonMember(doc, "response") : doc,
                         "incomplete_details"),
          "reason");
      return MakeError(fmt::format("Incomplete response returned, reason: {}",
                                   reason.empty() ? "unknown" : reason));
    }
    // response.output_item.added and unknown events carry nothing we need.
    return {};
  }

  bool complete() const override { return complete_; }
  std::string incomplete_reason() const override {
    return "stream closed before response.completed";
  }
  ModelResponse TakeResponse() override { return std::move(response_); }

 private:
  StreamObserver& observer_;
  ModelResponse response_;
  bool complete_ = false;
};

class ResponsesClient : public ModelClient {
 public:
  ResponsesClient(ProviderInfo provider, ModelOptions options, std::string api_key)
      : provider_(std::move(provider)), options_(std::move(options)), key_(std::move(api_key)) {}

  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken& cancel) override {
    HttpRequest req =
        MakeHttpRequest(provider_, key_, "/responses", BuildResponsesRequest(options_, prompt),
                        prompt.prompt_cache_key);
    return StreamWithRetries(
        http_, req, provider_, [&observer] { return MakeResponsesDecoder(observer); }, observer,
        cancel);
  }

 private:
  ProviderInfo provider_;
  ModelOptions options_;
  std::string key_;
  HttpClient http_;
};

}  // namespace

std::unique_ptr<StreamDecoder> MakeResponsesDecoder(StreamObserver& observer) {
  return std::make_unique<ResponsesDecoder>(observer);
}

std::unique_ptr<ModelClient> MakeResponsesClient(const ProviderInfo& provider,
                                                 const ModelOptions& options, std::string api_key) {
  return std::make_unique<ResponsesClient>(provider, options, std::move(api_key));
}

}  // namespace ae
