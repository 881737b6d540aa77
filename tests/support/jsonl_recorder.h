// JsonlRecorder: an EventSink that keeps every event as the JSONL line a consumer would read
// (events that print nothing are dropped), for tests that assert the exact stream.
#pragma once

#include <string>
#include <vector>

#include "engine/events/event_sink.h"
#include "outputs/jsonl_sink.h"

namespace ae::test {

class JsonlRecorder : public EventSink {
 public:
  void Emit(const Event& e) override {
    std::string line = EventToJson(e);
    if (!line.empty()) lines.push_back(line);
  }
  std::vector<std::string> lines;
};

}  // namespace ae::test
