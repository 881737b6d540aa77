// JsonlRecorder: an EventSink that keeps every event as the JSONL line a consumer would read
// (events that print nothing are dropped), for tests that assert the exact stream.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "engine/events/event_sink.h"
#include "outputs/jsonl_sink.h"

namespace ae::test {

class JsonlRecorder : public EventSink {
 public:
  // Locked: MCP servers and parallel tool calls emit from their own threads.
  void Emit(const Event& e) override {
    std::string line = EventToJson(e);
    if (line.empty()) return;
    std::lock_guard lock(mu_);
    lines.push_back(std::move(line));
  }
  // Every line so far, each newline-terminated; safe while events still arrive.
  std::string Jsonl() {
    std::lock_guard lock(mu_);
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }
  // Read directly only once nothing emits any more.
  std::vector<std::string> lines;

 private:
  std::mutex mu_;
};

}  // namespace ae::test
