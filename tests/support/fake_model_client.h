// A ModelClient that replays canned responses and records every prompt it was sent, and the
// output items to build them: the fake model for tests of the session and the turn loop.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/model/client.h"

namespace ae::test {

class FakeModelClient : public ModelClient {
 public:
  std::deque<Result<ModelResponse>> responses;
  std::vector<Prompt> prompts;
  int retries_before_each = 0;  // OnRetry notices before each response
  int64_t* clock_ms = nullptr;  // advanced 700ms per request: a fake, deterministic clock

  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken&) override {
    prompts.push_back(prompt);
    if (clock_ms != nullptr) *clock_ms += 700;
    for (int i = 1; i <= retries_before_each; ++i) observer.OnRetry(i, 5, "idle timeout");
    if (responses.empty()) return MakeError("fake: no response left");
    Result<ModelResponse> r = std::move(responses.front());
    responses.pop_front();
    if (r.ok()) {
      for (const OutputItem& item : r->items) {
        if (IsToolCall(item.kind)) observer.OnToolCallAhead();  // as the scripted client does
      }
    }
    return r;
  }
};

inline OutputItem Message(const std::string& text) {
  OutputItem i;
  i.kind = OutputItem::Kind::kMessage;
  i.text = text;
  i.raw_json = R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":")" +
               text + R"("}]})";
  return i;
}

inline OutputItem Call(const std::string& name, const std::string& args, const std::string& id) {
  OutputItem i;
  i.kind = OutputItem::Kind::kFunctionCall;
  i.name = name;
  i.call_id = id;
  i.arguments = args;
  i.raw_json = R"({"type":"function_call","name":")" + name + R"(","call_id":")" + id + R"("})";
  return i;
}

inline ModelResponse Response(std::vector<OutputItem> items, Usage usage = {10, 2, 0, 5, 1}) {
  return ModelResponse{"resp", std::move(items), usage};
}

}  // namespace ae::test
