// Shared by the two stream decoder harnesses: the bytes go through the SSE parser into a
// fresh decoder, as one attempt of a real request does. Invariants: no crash; every output
// item of a completed response is a JSON object, and the next request built from those
// items (both wires) is valid JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/model/request.h"
#include "engine/model/sse.h"
#include "engine/model/streaming.h"
#include "tests/fuzz/fuzz_util.h"

namespace ae::fuzz {

class NullObserver : public StreamObserver {
 public:
  void OnTextDelta(const std::string& delta) override { bytes += delta.size(); }
  size_t bytes = 0;
};

template <typename MakeDecoder>
int RunDecoder(const uint8_t* data, size_t size, MakeDecoder make_decoder) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (HitsPendingBug(bytes)) return 0;
  NullObserver observer;
  std::unique_ptr<StreamDecoder> decoder = make_decoder(observer);
  SseParser parser(1 << 16);
  bool stop = false;
  Status fed = parser.Feed(bytes, [&](SseEvent& e) {
    if (stop) return;
    bool fatal = false;
    Status s = decoder->OnEvent(e, &fatal);
    if (!s.ok()) {
      Check(!s.message().empty(), "a decoder error without a message");
      stop = true;
    }
  });
  if (!fed.ok() || stop) return 0;
  decoder->OnCleanEnd();
  if (!decoder->complete()) {
    Check(!decoder->incomplete_reason().empty(), "incomplete without a reason");
    return 0;
  }
  ModelResponse response = decoder->TakeResponse();
  Prompt prompt;
  prompt.input.push_back(
      R"({"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]})");
  for (const OutputItem& item : response.items) {
    rapidjson::Document d;
    Check(ParsesAsJson(item.raw_json, d, /*utf8=*/false) && d.IsObject(),
          "an output item that is not a JSON object", item.raw_json);
    prompt.input.push_back(item.raw_json);
  }
  ModelOptions options;
  options.model = "m";
  std::string body = BuildResponsesRequest(options, prompt);
  rapidjson::Document d;
  Check(ParsesAsJson(body, d, !kPendingRawUtf8) && d.IsObject(),
        "the next responses request is not JSON", body);
  Result<std::string> chat = BuildChatRequest(options, prompt);
  if (chat.ok()) {
    Check(ParsesAsJson(*chat, d, !kPendingRawUtf8) && d.IsObject(),
          "the next chat request is not JSON", *chat);
  }
  return 0;
}

}  // namespace ae::fuzz
