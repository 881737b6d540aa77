// JsonlRecorder: an EventSink that keeps every event as the JSONL line a consumer would read,
// for tests that assert the exact stream. Events that print nothing (deltas, for humans only)
// are dropped, or kept as empty lines where a test asserts that none was emitted.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "engine/events/event_sink.h"
#include "outputs/jsonl_sink.h"

namespace ae::test {

class JsonlRecorder : public EventSink {
 public:
  enum class Silent { kDropped, kKept };
  explicit JsonlRecorder(Silent silent = Silent::kDropped) : silent_(silent) {}

  // Locked: MCP servers and parallel tool calls emit from their own threads.
  void Emit(const Event& e) override {
    std::string line = EventToJson(e);
    if (line.empty() && silent_ == Silent::kDropped) return;
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
  const Silent silent_;
  std::mutex mu_;
};

}  // namespace ae::test
