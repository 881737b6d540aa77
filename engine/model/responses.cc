#include "engine/model/responses.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

#include "engine/model/http.h"
#include "engine/model/items.h"
#include "engine/model/request.h"

namespace ae {
namespace {

// A Responses `usage` object (response.completed, the compaction answer).
Usage UsageOf(const rapidjson::Value* usage) {
  Usage u;
  if (usage == nullptr) return u;
  u.input_tokens = Int64Member(usage, "input_tokens");
  u.cached_input_tokens =
      Int64Member(FindJsonMember(*usage, "input_tokens_details"), "cached_tokens");
  u.output_tokens = Int64Member(usage, "output_tokens");
  u.reasoning_output_tokens =
      Int64Member(FindJsonMember(*usage, "output_tokens_details"), "reasoning_tokens");
  return u;
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
    std::string type = StringMember(&doc, "type");
    if (type.empty()) type = event.event;
    if (type == "response.output_text.delta") {
      std::string delta = StringMember(&doc, "delta");
      if (!delta.empty()) observer_.OnTextDelta(delta);
    } else if (type == "response.output_item.added") {
      // A tool call begins; its arguments follow as deltas (only the whole item is kept).
      if (IsToolCall(ItemKindOf(StringMember(FindJsonMember(doc, "item"), "type")))) {
        observer_.OnToolCallAhead();
      }
    } else if (type == "response.output_item.done") {
      const rapidjson::Value* item = FindJsonMember(doc, "item");
      if (!item) return MakeError("response.output_item.done without an item");
      const rapidjson::Value* item_type = FindJsonMember(*item, "type");
      if (item_type == nullptr || !item_type->IsString()) {
        // One item nobody can name must not cost the whole turn; it is not kept either, as
        // replaying it would make the service refuse every later request.
        response_.warnings.push_back(std::string(kUntypedItemWarning));
        return {};
      }
      auto parsed = ParseOutputItemValue(*item);
      if (!parsed) return MakeError("response.output_item.done: " + parsed.message());
      if (IsToolCall(parsed->kind)) observer_.OnToolCallAhead();  // a server that skips .added
      response_.items.push_back(std::move(*parsed));
    } else if (type == "response.created") {
      response_.id = StringMember(FindJsonMember(doc, "response"), "id");
    } else if (type == "response.completed") {
      const rapidjson::Value* resp = FindJsonMember(doc, "response");
      if (resp) {
        if (std::string id = StringMember(resp, "id"); !id.empty()) response_.id = id;
        response_.usage = UsageOf(FindJsonMember(*resp, "usage"));
      }
      complete_ = true;
    } else if (type == "response.failed" || type == "error") {
      const rapidjson::Value* err = FindJsonMember(doc, "error");
      if (!err)
        err = FindJsonMember(
            FindJsonMember(doc, "response") ? *FindJsonMember(doc, "response") : doc, "error");
      std::string message = StringMember(err, "message");
      if (message.empty()) message = StringMember(&doc, "message");
      if (message.empty()) message = type;
      // Retrying cannot fix these (codex treats them as final too).
      std::string code = StringMember(err, "code");
      if (code == "context_length_exceeded" || IsQuotaCode(code) || code == "invalid_prompt") {
        *fatal = true;
      }
      if (code.empty()) code = StringMember(err, "type");
      if (code == "context_length_exceeded") {
        return ModelError(fmt::format("{} ({})", kContextWindowExceeded, message),
                          ErrorCode::kContextLength);
      }
      if (IsQuotaCode(code)) {
        return ModelError(QuotaExceededMessage(code, message), ErrorCode::kRateLimited);
      }
      return ModelError(message, ServiceErrorCode(code));
    } else if (type == "response.incomplete") {
      std::string reason = StringMember(
          FindJsonMember(FindJsonMember(doc, "response") ? *FindJsonMember(doc, "response") : doc,
                         "incomplete_details"),
          "reason");
      return MakeError(fmt::format("Incomplete response returned, reason: {}",
                                   reason.empty() ? "unknown" : reason));
    }
    // Unknown events carry nothing we need.
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

// The answer of POST /responses/compact: one JSON object
// {"object":"response.compaction","output":[items...],"usage":{...}}.
class CompactDecoder : public StreamDecoder {
 public:
  bool json_body() const override { return true; }
  Status OnEvent(SseEvent& event, bool* fatal) override {
    rapidjson::Document doc;
    std::optional<JsonParseError> bad = ParseJsonInto(event.data, &doc);
    const rapidjson::Value* output =
        bad || !doc.IsObject() ? nullptr : FindJsonMember(doc, "output");
    if (output == nullptr || !output->IsArray()) {
      *fatal = true;  // the same request would get the same answer
      reason_ = bad ? fmt::format("the compaction answer is not JSON (offset {}: {})", bad->offset,
                                  bad->reason)
                    : std::string("the compaction answer has no `output` array");
      return MakeError(reason_);
    }
    for (const auto& item : output->GetArray()) {
      if (!item.IsObject()) continue;
      OutputItem out;
      out.raw_json = ToJson(item);
      response_.items.push_back(std::move(out));
    }
    response_.id = StringMember(&doc, "id");
    response_.usage = UsageOf(FindJsonMember(doc, "usage"));
    complete_ = true;
    return {};
  }
  bool complete() const override { return complete_; }
  std::string incomplete_reason() const override {
    return reason_.empty() ? "the compaction answer ended early" : reason_;
  }
  ModelResponse TakeResponse() override { return std::move(response_); }

 private:
  ModelResponse response_;
  std::string reason_;
  bool complete_ = false;
};

}  // namespace

std::unique_ptr<StreamDecoder> MakeResponsesDecoder(StreamObserver& observer) {
  return std::make_unique<ResponsesDecoder>(observer);
}

WireSpec ResponsesWire() {
  return {.path = "/responses",
          .build_request = [](const ModelOptions& options, const Prompt& prompt)
              -> Result<std::string> { return BuildResponsesRequest(options, prompt); },
          .make_decoder = MakeResponsesDecoder,
          .compact_path = "/responses/compact",
          .build_compact_request = BuildCompactRequest,
          .make_compact_decoder = [] { return std::make_unique<CompactDecoder>(); }};
}

}  // namespace ae
